"""The test run installs from the lock, and only from it.

`scripts/test` makes .venv match uv.lock exactly (`uv sync --locked`), so a release of any
dependency changes nothing until `scripts/upgrade` moves the lock. These tests check the lock
against pyproject.toml (every requirement, extra and bound is the one locked), that torch is the
CPU build, and, when the suite runs in the lock's venv (as scripts/test and CI run it), that what
is installed is exactly what the lock says: nothing more, nothing at another version, nothing
from the machine's own site-packages.
"""
from __future__ import annotations

import importlib.metadata as md
import re
import sys
from pathlib import Path

import pytest
import tomllib
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
LOCK = tomllib.loads((REPO / "uv.lock").read_text())
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PACKAGES = {canonicalize_name(p["name"]): p for p in LOCK["package"]}
# What scripts/test installs: joust, its dependencies and these extras.
TEST_EXTRAS = ("dev", "factsim")


Key = tuple[str, str, str, str]  # name, extras, version range, the joust extra that asks for it ("" for none)
EXTRA = re.compile(r"extra == '([\w-]+)'")


def key(requirement: Requirement, extra: str) -> Key:
    """What the lock must agree on (platform markers are left out: uv rewrites them)."""
    return (canonicalize_name(requirement.name), ",".join(sorted(requirement.extras)), str(requirement.specifier), extra)


def locked_requirements() -> set[Key]:
    """joust's requirements as the lock recorded them."""
    found = set()
    for item in PACKAGES["joust"]["metadata"]["requires-dist"]:
        requirement = Requirement(f"{item['name']}[{','.join(item.get('extras', []))}]{item.get('specifier', '')}")
        extra = EXTRA.search(item.get("marker", ""))
        found.add(key(requirement, extra.group(1) if extra else ""))
    return found


def project_requirements() -> set[Key]:
    """joust's requirements as pyproject.toml states them."""
    project = PROJECT["project"]
    found = {key(Requirement(r), "") for r in project["dependencies"]}
    for extra, requirements in project["optional-dependencies"].items():
        found |= {key(Requirement(r), extra) for r in requirements}
    return found


def closure(roots: list[tuple[str, tuple[str, ...]]]) -> set[str]:
    """Every locked package that `roots` (name, extras) need on this machine, through their
    dependencies and the extras those ask for (a dependency whose marker does not hold here, say
    Windows-only, is not needed)."""
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(canonicalize_name(n), extras) for n, extras in roots]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        package = PACKAGES[name]
        deps = list(package.get("dependencies", []))
        for extra in extras:
            deps += package.get("optional-dependencies", {}).get(extra, [])
        for dep in deps:
            if "marker" in dep and not Marker(dep["marker"]).evaluate():
                continue
            todo.append((canonicalize_name(dep["name"]), tuple(dep.get("extra", []))))
    return {name for name, _ in seen}


def test_the_lock_records_exactly_the_requirements_of_pyproject() -> None:
    """A requirement changed in pyproject.toml without `scripts/upgrade` (or `scripts/uv lock`)
    would be refused by `uv sync --locked`; this says which one, without a network."""
    assert locked_requirements() == project_requirements()


def test_torch_is_the_cpu_build_and_no_cuda_package_is_locked() -> None:
    assert PACKAGES["torch"]["version"].endswith("+cpu")
    cuda = sorted(n for n in PACKAGES if n.startswith(("nvidia-", "triton")))
    assert not cuda, cuda
    assert "torch" in closure([("joust", ("factsim",))])


def test_major_releases_known_to_break_joust_are_excluded() -> None:
    """Upper bounds where a major release breaks us (RQ 3.0 changed its API; anthropic and
    schemathesis 5 are untested), and the lock within them."""
    bounds = {Requirement(r).name: Requirement(r).specifier for r in
              PROJECT["project"]["dependencies"] + PROJECT["project"]["optional-dependencies"]["dev"]}
    for name, major in (("rq", "3"), ("anthropic", "3"), ("schemathesis", "5")):
        assert not bounds[name].contains(f"{major}.0"), name
        assert bounds[name].contains(PACKAGES[name]["version"]), name


def test_scripts_install_from_the_lock_into_their_own_venv() -> None:
    script = (REPO / "scripts" / "test").read_text()
    assert re.search(r"scripts/uv sync --locked .*--extra dev --extra factsim", script)
    assert ".venv/bin/python" in script and "pip install" not in script
    upgrade = (REPO / "scripts" / "upgrade").read_text()
    assert "lock --upgrade" in upgrade and "scripts/test" in upgrade


def in_lock_venv() -> bool:
    return Path(sys.prefix).resolve() == (REPO / ".venv").resolve()


@pytest.mark.skipif(not in_lock_venv(), reason="not running in the lock's venv (.venv): scripts/test runs there")
def test_the_venv_holds_exactly_the_lock() -> None:
    """What scripts/test installed: every package the test extras need, at the locked version,
    and nothing else (not even a package from the machine's own site-packages)."""
    config = (Path(sys.prefix) / "pyvenv.cfg").read_text()
    assert re.search(r"include-system-site-packages\s*=\s*false", config)
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in md.distributions()}
    wanted = closure([("joust", TEST_EXTRAS)])
    assert set(installed) == wanted, (sorted(set(installed) - wanted), sorted(wanted - set(installed)))
    for name in wanted - {"joust"}:
        assert installed[name] == PACKAGES[name]["version"], name
