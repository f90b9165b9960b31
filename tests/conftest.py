"""Shared fixtures: a real redis-server per session (flushed per test), a real PostgreSQL server per
session (a fresh database per test), and a real store on each backend."""
from __future__ import annotations

from pathlib import Path

import pytest

from service.store import Store
from tests.api_fixtures import *  # noqa: F401,F403  (api_database_url, api_settings, client, make_client, queue)
from tests.postgres_fixture import *  # noqa: F401,F403  (postgres_server, postgres_url)
from tests.redis_fixture import *  # noqa: F401,F403  (redis_url, redis_server)
from tests.worker_fixtures import *  # noqa: F401,F403  (fake, env_vars, worker_database_url, env, db)

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database: a fresh SQLite file, then a fresh PostgreSQL database (each
    test that asks for it runs on both; the PostgreSQL run is skipped where PostgreSQL is absent)."""
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_url")
    return f"sqlite:///{tmp_path / 'joust.db'}"


@pytest.fixture
def store(store_url: str) -> Store:
    """A store on a fresh database of each backend (see `store_url`)."""
    st = Store(store_url)
    yield st
    st.close()
