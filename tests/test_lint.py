"""The house rules a tool checks: the layers' import contracts (import-linter, over packages, so
a new module is under them the day it is written), ruff's lint, and mypy's types for the pure
domain and the store's typed rows; each configured in pyproject.toml."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PACKAGES = ("service", "workers", "leaderboard", "joust")


def run(tool: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / tool), *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PATH": f"{BIN}:/usr/bin:/bin", "PYTHONPATH": str(cwd), "HOME": str(cwd)})


def test_each_layer_imports_only_the_layers_below_it() -> None:
    done = run("lint-imports", "--no-cache")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_a_layer_that_imports_one_above_it_breaks_the_contract(tmp_path: Path) -> None:
    """The contracts bite: a copy of the packages where the store imports the web layer fails."""
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    (tmp_path / "service" / "store" / "breach.py").write_text("from service.web import app  # noqa: F401\n")
    done = run("lint-imports", "--no-cache", cwd=tmp_path)
    assert done.returncode != 0
    assert "service.store.breach -> service.web.app" in done.stdout, done.stdout


def test_ruff_finds_nothing() -> None:
    done = run("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_pure_domain_type_checks_strictly() -> None:
    """mypy with --strict's flags on leaderboard/ and the store's typed rows (pyproject.toml's
    [tool.mypy]); no cache, so a stale one cannot hide an error."""
    done = run("mypy", "--cache-dir=/dev/null", "leaderboard", "service/store/rows.py", "service/store/tournament_rows.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success"), done.stdout
