"""pytest fixtures backed by a real redis-server on a free loopback port.

Nothing fakes Redis in joust's tests. One server runs for the whole session (no persistence, so
it is quick) and is flushed before each test that asks for `redis_url` or `redis_client`; a test
that restarts or kills a server asks for `redis_server`, its own persistent one.

tests/conftest.py imports them (`from tests.redis_fixture import *` takes exactly `__all__`).
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from service.ops.redis_server import RedisServer

__all__ = ["redis_client", "redis_server", "redis_session", "redis_url"]


@pytest.fixture(scope="session")
def redis_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """The session's shared redis-server (persistence off); prefer `redis_url` in tests."""
    with RedisServer(tmp_path_factory.mktemp("redis-session"), persistence=False) as server:
        yield server


@pytest.fixture
def redis_url(redis_session: RedisServer) -> str:
    """The URL of the shared server, emptied (FLUSHALL) for this test."""
    if not redis_session.running:  # a test killed it: bring it back on the same port
        redis_session.restart()
    client = redis_session.client()
    try:
        client.flushall()
    finally:
        client.close()
    return redis_session.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client of the shared, freshly emptied server; closed after the test."""
    client = redis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """This test's own persistent redis-server, to stop, restart or kill; stopped afterwards."""
    with RedisServer(tmp_path / "redis", persistence=True) as server:
        yield server
