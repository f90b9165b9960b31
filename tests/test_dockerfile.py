"""The image holds every package the project installs, at the lock's versions: a package left
out of the Dockerfile would make the `joust` command fail inside the container, and an install
from pyproject's ranges would run that day's releases rather than the ones the suite passed on
(no Docker engine here to build it, so the Dockerfile is read, and the lock export it runs is
run here)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = (REPO / "Dockerfile").read_text()


def packages() -> list[str]:
    """The top-level packages pyproject.toml includes (`name*` patterns)."""
    found = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    return sorted(pattern.rstrip("*") for pattern in found["include"])


def test_every_installed_package_is_copied_into_the_image() -> None:
    copied = set(re.findall(r"^COPY (\w+) \./\1$", DOCKERFILE, re.MULTILINE))
    assert packages() == sorted(copied), (packages(), copied)
    assert "joust" in packages()  # the client, which the CLI is built on


def test_the_image_installs_the_lock_with_its_hashes_and_the_project_without_dependencies() -> None:
    assert re.search(r"^COPY pyproject\.toml uv\.lock ", DOCKERFILE, re.MULTILINE)
    assert "uv export --locked" in DOCKERFILE
    assert "pip install --require-hashes --no-deps -r /tmp/requirements.txt" in DOCKERFILE
    installs = re.findall(r"pip install ([^\\\n&]+)", DOCKERFILE)
    # nothing is resolved from pyproject's ranges: uv at the lock's writer's version, torch's CPU
    # build at the lock's version, the lock's export, and the project itself with --no-deps
    for args in installs:
        assert args.startswith(('"uv==', "torch==", "--require-hashes --no-deps", "--no-deps .")), args
    uv_version = re.search(r"^UV_VERSION=(\S+)", (REPO / "scripts" / "uv").read_text(), re.MULTILINE)
    assert uv_version and f"ARG UV_VERSION={uv_version[1]}" in DOCKERFILE
    torch = re.search(r'"torch==([^"+]+)', (REPO / "pyproject.toml").read_text())
    assert torch and f"torch=={torch[1]} " in DOCKERFILE


@pytest.mark.parametrize("extras", [["postgres"], ["postgres", "factsim"]])
def test_the_lock_exports_every_package_of_the_image_pinned_and_hashed(extras: list[str]) -> None:
    """The export the Dockerfile runs, run here (uv reads the lock; nothing is downloaded)."""
    flags = [arg for extra in extras for arg in ("--extra", extra)]
    exported = subprocess.run(
        ["bash", str(REPO / "scripts" / "uv"), "export", "--locked", "--no-emit-project", "--format",
         "requirements-txt", "--no-emit-package", "torch", "--quiet", *flags],
        cwd=REPO, capture_output=True, text=True, check=True).stdout
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", exported, re.MULTILINE)
    names = {name.lower().replace("_", "-") for name, _ in pins}
    assert {"anthropic", "fastapi", "redis", "rq", "pandas", "psycopg", "psycopg-binary"} <= names, names
    assert ("sentence-transformers" in names) == ("factsim" in extras)
    assert "torch" not in names and "pytest" not in names  # torch comes from its CPU index; no dev tools
    assert exported.count("--hash=sha256:") >= len(pins), "every pin carries its hash"
