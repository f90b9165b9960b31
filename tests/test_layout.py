"""The one-way import rule of DESIGN.md: service -> leaderboard; workers -> leaderboard,
service.config, service.store; leaderboard -> nothing with I/O; the client package `joust`
imports none of the three, and none of them imports it but the CLI's HTTP commands
(`service/cli/remote_cli.py`, `service/cli/remote_judges.py`, built on the client as every other user of
the API would be)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IO_MODULES = {"os", "sqlite3", "sqlalchemy", "redis", "rq", "httpx", "requests", "socket", "subprocess",
              "anthropic", "openai", "fastapi", "time", "datetime", "pathlib", "service", "workers"}
SDKS = {"anthropic", "openai"}


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, as written (relative imports resolved to the package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = path.parent.relative_to(REPO).as_posix().replace("/", ".")
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.add(f"{base}.{node.module}" if node.module else base)
            else:
                found.add(node.module or "")
    return found


def modules(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


@pytest.mark.parametrize("path", modules("leaderboard"), ids=lambda p: p.name)
def test_leaderboard_does_no_io(path: Path) -> None:
    bad = {name for name in imports_of(path) if name.split(".")[0] in IO_MODULES}
    assert not bad, f"{path.name} imports {sorted(bad)}: leaderboard/ stays pure"


def test_sdks_are_imported_lazily() -> None:
    """No module imports an LLM SDK at its top level: a missing SDK must not break the others."""
    for path in modules("workers"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n.split(".")[0] in SDKS for n in names), f"{path.name} imports an SDK at top level"


def test_the_guard_sees_imports() -> None:
    """The checks above would catch a violation: the parser finds this file's own imports."""
    assert {"ast", "pathlib", "pytest", "__future__"} <= imports_of(Path(__file__))
