"""The image holds every package the project installs: a package left out of the Dockerfile
would make the `joust` command fail inside the container (no Docker engine here to build it,
so the Dockerfile is read)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def packages() -> list[str]:
    """The top-level packages pyproject.toml includes (`name*` patterns)."""
    found = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    return sorted(pattern.rstrip("*") for pattern in found["include"])


def test_every_installed_package_is_copied_into_the_image() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    copied = set(re.findall(r"^COPY (\w+) \./\1$", dockerfile, re.MULTILINE))
    stubbed = set(re.findall(r"(\w+)/__init__\.py", dockerfile))
    assert packages() == sorted(copied) == sorted(stubbed), (packages(), copied, stubbed)
    assert "joust" in packages()  # the client, which the CLI is built on
