"""The one-way import rule of DESIGN.md: service -> leaderboard; workers -> leaderboard,
service.config, service.store; leaderboard -> nothing with I/O; the client package `joust`
imports none of the three, and none of them imports it but the CLI's HTTP commands
(`service/remote_cli.py`, `service/remote_judges.py`, built on the client as every other user of
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


@pytest.mark.parametrize("path", modules("service"), ids=lambda p: p.relative_to(REPO).as_posix())
def test_service_never_imports_workers_or_an_sdk(path: Path) -> None:
    bad = {name for name in imports_of(path) if name.split(".")[0] in {"workers", *SDKS}}
    assert not bad, f"{path.name} imports {sorted(bad)}: the service enqueues by dotted path"


@pytest.mark.parametrize("path", modules("workers"), ids=lambda p: p.relative_to(REPO).as_posix())
def test_workers_use_only_config_and_store_of_the_service(path: Path) -> None:
    bad = {
        name for name in imports_of(path)
        if name.startswith("service") and name not in {"service.config", "service.store", *LEAVES}
    }
    assert not bad, f"{path.name} imports {sorted(bad)}"


LEAVES = {"service.orphans"}
"""Modules of the service that import nothing of joust (a process's lifetime): below every layer."""


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_the_leaves_workers_may_use_import_nothing_of_joust(leaf: str) -> None:
    path = REPO / (leaf.replace(".", "/") + ".py")
    bad = {name for name in imports_of(path) if name.split(".")[0] in {"service", "workers", "leaderboard", "joust"}}
    assert not bad, f"{leaf} imports {sorted(bad)}: a leaf imports nothing of joust"


@pytest.mark.parametrize("path", modules("joust"), ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_client_imports_none_of_the_service(path: Path) -> None:
    bad = {name for name in imports_of(path) if name.split(".")[0] in {"leaderboard", "workers", "service", *SDKS}}
    assert not bad, f"{path.name} imports {sorted(bad)}: the client speaks to joust over HTTP only"


# The one front end built on the client: the CLI's commands that talk to a joust over HTTP.
CLIENT_FRONT_ENDS = {"service/remote_cli.py", "service/remote_judges.py"}


@pytest.mark.parametrize("package", ["leaderboard", "workers", "service"])
def test_nothing_of_the_service_imports_the_client(package: str) -> None:
    bad = [p.relative_to(REPO).as_posix() for p in modules(package)
           if any(name.split(".")[0] == "joust" for name in imports_of(p))]
    assert set(bad) <= CLIENT_FRONT_ENDS, f"{sorted(set(bad) - CLIENT_FRONT_ENDS)} import the client package"
    assert all((REPO / p).is_file() for p in CLIENT_FRONT_ENDS)


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
