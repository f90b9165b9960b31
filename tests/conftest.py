"""Shared fixtures: a real redis-server per session (flushed per test) and a real SQLite store."""
from __future__ import annotations

from pathlib import Path

import pytest

from service.store import Store
from tests.api_fixtures import *  # noqa: F401,F403  (api_settings, client, make_client, queue)
from tests.redis_fixture import *  # noqa: F401,F403  (redis_url, redis_server)
from tests.worker_fixtures import *  # noqa: F401,F403  (fake, env_vars, env, db)

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """A store on a fresh SQLite file."""
    st = Store(f"sqlite:///{tmp_path / 'joust.db'}")
    yield st
    st.close()
