"""The guards of a green run: under CI=true a skip of a required part fails (tests/required.py),
other skips stay skips; the shell's settings never reach a test (tests/conftest.py). Each is run
in a pytest of its own, as a user would run it, so that this session's own CI and environment
change nothing."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.conftest import shell_settings
from tests.required import PARTS, REPO, required_part, required_reason

INNER = textwrap.dedent('''
    import sys
    import pytest
    from tests.required import required_reason, skip_required

    @pytest.fixture
    def server():
        skip_required("postgresql", "no initdb here")

    def test_required_skip_in_a_test():
        skip_required("shared-data", "missing /nowhere/data.csv")

    def test_required_skip_in_a_fixture(server):
        pass

    @pytest.mark.skipif(True, reason=required_reason("openai", "cannot import openai"))
    def test_required_skipif():
        pass

    def test_optional_skip():
        pytest.skip("parent-death signal is Linux-only")

    @pytest.mark.skipif(True, reason="not on this platform")
    def test_optional_skipif():
        pass

    def test_runs():
        assert True
''')


def inner_env() -> dict[str, str]:
    """The environment of a pytest run on a small project of its own: this one's, without CI, and
    without the installed plugins (hypothesis, schemathesis, xdist...), which the hook does not
    use and which would add a second and a half of imports to every run; it is loaded with -p."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def run_inner(tmp_path: Path, ci: str | None) -> dict[str, str]:
    """Run INNER with the hook loaded as a plugin, CI set to `ci` (None: unset); the outcome of
    each test by name, and the whole output under "output"."""
    (tmp_path / "test_inner.py").write_text(INNER)
    report = tmp_path / "report.xml"
    env = inner_env()
    if ci is not None:
        env["CI"] = ci
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.required", "-p", "no:cacheprovider", "-rA",
         f"--junitxml={report}", "--rootdir", str(tmp_path), str(tmp_path / "test_inner.py")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    outcomes = {}
    for case in ElementTree.parse(report).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[case.get("name")] = {"failure": "FAILED", "error": "ERROR", "skipped": "SKIPPED"}.get(
            kinds[0] if kinds else "", "PASSED")
    return {**outcomes, "output": done.stdout + done.stderr}


@pytest.mark.slow
def test_outside_ci_every_skip_stays_a_skip(tmp_path: Path) -> None:
    got = run_inner(tmp_path, ci=None)
    assert {k: v for k, v in got.items() if k != "output"} == {
        "test_required_skip_in_a_test": "SKIPPED", "test_required_skip_in_a_fixture": "SKIPPED",
        "test_required_skipif": "SKIPPED", "test_optional_skip": "SKIPPED", "test_optional_skipif": "SKIPPED",
        "test_runs": "PASSED"}, got["output"]
    out = got["output"]
    assert "test_inner.py:10: [required: shared-data] missing /nowhere/data.csv" in out  # at the test
    assert "test_inner.py:13: [required: postgresql] no initdb here" in out


@pytest.mark.slow
@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_a_required_skip_fails_and_says_why(tmp_path: Path, ci: str) -> None:
    got = run_inner(tmp_path, ci=ci)
    assert {k: v for k, v in got.items() if k != "output"} == {
        "test_required_skip_in_a_test": "FAILED", "test_required_skip_in_a_fixture": "ERROR",
        "test_required_skipif": "ERROR", "test_optional_skip": "SKIPPED", "test_optional_skipif": "SKIPPED",
        "test_runs": "PASSED"}, got["output"]  # a skip in setup (a fixture's, a skipif mark's) is an error
    out = got["output"]
    assert "CI=true: required part 'shared-data' is missing" in out and "missing /nowhere/data.csv" in out
    assert "required part 'postgresql' is missing" in out and "no initdb here" in out
    assert "required part 'openai' is missing" in out
    assert "1 failed, 1 passed, 2 skipped, 2 errors" in out


@pytest.mark.slow
def test_under_ci_a_module_skipped_whole_for_a_required_part_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "test_whole.py").write_text(
        "import pytest\nfrom tests.required import required_reason\n"
        "pytest.skip(required_reason('factsim', 'not installed: torch'), allow_module_level=True)\n"
        "def test_never():\n    pass\n")
    run = [sys.executable, "-m", "pytest", "-p", "tests.required", "-p", "no:cacheprovider", "-q", "--rootdir",
           str(tmp_path), str(tmp_path / "test_whole.py")]
    env = inner_env()
    outside = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert outside.returncode == pytest.ExitCode.NO_TESTS_COLLECTED and "1 skipped" in outside.stdout, outside.stdout
    inside = subprocess.run(run, cwd=REPO, env={**env, "CI": "true"}, capture_output=True, text=True, timeout=120)
    assert inside.returncode == pytest.ExitCode.INTERRUPTED, inside.stdout  # "1 error during collection"
    assert "required part 'factsim' is missing" in inside.stdout and "not installed: torch" in inside.stdout


@pytest.mark.slow
def test_ci_false_is_not_ci(tmp_path: Path) -> None:
    got = run_inner(tmp_path, ci="false")
    assert got["test_required_skip_in_a_test"] == "SKIPPED", got["output"]


def test_reasons_name_their_part() -> None:
    reason = required_reason("factsim", "not installed: torch")
    assert reason.startswith("[required: factsim] not installed: torch (needs ")
    assert required_part(reason) == ("factsim", f"not installed: torch (needs {PARTS['factsim']})")
    assert required_part("Skipped: " + reason)[0] == "factsim"
    assert required_part("parent-death signal is Linux-only") is None
    with pytest.raises(KeyError, match="known: browser"):
        required_reason("gpu", "none")


SHELL = {"JOUST_API_KEY": "from-the-shell", "JOUST_DATA_DIR": "/nonexistent", "JOUST_PRICES": "/nonexistent/prices.json",
         "JOUST_JUDGE": "offline/rubric", "JOUST_ELO_K": "1", "JOUST_JOB_RETRIES": "0", "ANTHROPIC_API_KEY": "sk-shell",
         "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "OPENAI_BASE_URL": "http://127.0.0.1:9",
         "DATABASE_URL": "postgresql://nobody@127.0.0.1:9/x", "REDIS_URL": "redis://127.0.0.1:9/0"}


def test_no_shell_setting_reaches_a_test() -> None:
    """Run on its own by the next test, in a polluted environment; it holds in this session too."""
    assert shell_settings(os.environ) == []


@pytest.mark.slow
def test_a_polluted_shell_changes_nothing() -> None:
    env = {**os.environ, **SHELL, "CI": "true"}
    tests = ["tests/test_required.py::test_no_shell_setting_reaches_a_test",
             "tests/test_jobs.py::test_both_orders_are_judged_and_the_planted_order_wins",
             "tests/test_budget.py::test_every_call_and_judgement_records_its_cost"]
    # -n 0: the three tests in this process, not in a process per core each starting its own
    # Redis and PostgreSQL (pyproject's -n auto): the shell is what is under test, not xdist.
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *tests],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"cleared from the environment for the tests: {', '.join(sorted(SHELL))}" in done.stdout
