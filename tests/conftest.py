"""Shared fixtures: a real redis-server per session (flushed per test), a real PostgreSQL server per
session (a fresh database per test), and a real store on each backend.

Also here: the environment of the shell never reaches a test (joust's, the providers' and the
database settings are cleared, see `shell_settings`), under CI=true a skip of a required part
fails the run (tests/required.py), and the `slow` marker of the process-level tests, which
`-m "not slow"` leaves out for a quick run while working.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from service.store import Store
from tests.api_fixtures import *  # noqa: F401,F403  (api_database_url, api_settings, client, make_client, queue)
from tests.browser_fixtures import *  # noqa: F401,F403  (browser)
from tests.postgres_fixture import *  # noqa: F401,F403  (postgres_server, postgres_url)
from tests.redis_fixture import *  # noqa: F401,F403  (redis_url, redis_server)
from tests.required import (  # noqa: F401  (the CI=true hooks: pytest finds hooks here by name)
    SHARED_DATA,
    in_ci,
    pytest_make_collect_report,
    pytest_runtest_makereport,
)
from tests.worker_fixtures import *  # noqa: F401,F403  (fake, env_vars, worker_database_url, env, db)

# What a shell may have set that would change what the tests see: joust's settings, the
# providers' keys and URLs, the database and Redis. CI is kept (the hook reads it).
SHELL_PREFIXES = ("JOUST_", "ANTHROPIC_", "OPENAI_")
SHELL_NAMES = ("DATABASE_URL", "REDIS_URL")
# Kept although under JOUST_: not a joust setting but where an optional reference lives for the
# tests (tests/test_style_arena.py: a Python with arena-rank, which cannot sit beside joust's).
SHELL_KEPT = ("JOUST_ARENA_PYTHON",)
_CLEARED = pytest.StashKey[list]()

pytest_plugins = ["tests.xdist_groups"]  # --dist loadgroup on pytest 9.2 (see that module)


def shell_settings(environ: dict[str, str] | os._Environ[str]) -> list[str]:
    """The names in `environ` that `_no_shell_settings` clears."""
    return sorted(n for n in environ if (n.startswith(SHELL_PREFIXES) or n in SHELL_NAMES) and n not in SHELL_KEPT)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a process-level test (a real `joust up`, worker or server "
                                       "processes) or the PostgreSQL run of a test that runs on both "
                                       "backends; `-m 'not slow'` leaves these out for a quick run")
    # Session fixtures and module imports run before any function fixture: clear the shell's
    # settings for the whole session too (this process only), and say so in the header.
    config.stash[_CLEARED] = cleared = shell_settings(os.environ)
    for name in cleared:
        del os.environ[name]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The quick run while working (`-m "not slow"`) runs every test once, on SQLite: the
    PostgreSQL run of a test parametrized over both backends is `slow`, run by the whole suite
    (and by CI) with the process-level tests. Tests that are about PostgreSQL alone stay quick."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if any(isinstance(value, str) and value == "postgresql" for value in params.values()):
            item.add_marker(pytest.mark.slow)


def pytest_report_header(config: pytest.Config) -> list[str]:
    cleared = config.stash.get(_CLEARED, [])
    lines = [f"CI={os.environ.get('CI', '')!r}: required parts {'fail' if in_ci() else 'skip'} when missing"]
    if cleared:
        lines.append(f"cleared from the environment for the tests: {', '.join(cleared)}")
    return lines


@pytest.fixture(autouse=True)
def _no_shell_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts without the shell's settings (anything a fixture sets comes after)."""
    for name in shell_settings(os.environ):
        monkeypatch.delenv(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database: a fresh SQLite file, then a fresh PostgreSQL database (each
    test that asks for it runs on both; the PostgreSQL run is a required part, see tests/required.py)."""
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_url")
    return f"sqlite:///{tmp_path / 'joust.db'}"


@pytest.fixture
def store(store_url: str) -> Store:
    """A store on a fresh database of each backend (see `store_url`)."""
    st = Store(store_url)
    yield st
    st.close()
