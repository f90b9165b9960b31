"""A stopping engine releases what it holds, and nothing it holds can keep it from stopping:
each step of its shutdown is bounded (`workers.closing`), and its Redis pools are closed, not
left to the garbage collector. Real Redis and SQLite; the hanging step is a coroutine of the
test's own."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from redis import Redis

from service.config import Settings
from workers.closing import release
from workers.engine import Engine

DB = 7  # a Redis database of this test's own, so only the engine's connections are counted


def test_a_step_that_hangs_or_fails_is_logged_and_the_rest_still_run(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []

    async def fine(name: str) -> None:
        ran.append(name)

    async def fails() -> None:
        raise ConnectionError("peer gone")

    async def scenario() -> list[str]:
        steps = [("first", fine("first")), ("a hang", asyncio.Event().wait()), ("a failure", fails()),
                 ("last", fine("last"))]
        return await release(steps, lambda: "the loop's state", timeout_s=0.05)

    with caplog.at_level(logging.WARNING, logger="workers.closing"):
        failed = asyncio.run(scenario())
    assert failed == ["a hang", "a failure"]
    assert ran == ["first", "last"]
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["closing a hang failed", "closing a failure failed"]
    assert all("the loop's state" in r.getMessage() for r in caplog.records)


def _clients(redis: Redis) -> int:
    return sum(1 for client in redis.client_list() if int(client["db"]) == DB)


def test_closing_an_engine_closes_its_redis_connections(redis_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'joust.db'}", redis_url=f"{redis_url.rsplit('/', 1)[0]}/{DB}")
    probe = Redis.from_url(redis_url)
    try:
        assert _clients(probe) == 0
        engine = Engine(settings)
        assert engine.deps.leases is not None and engine.deps.redis is not None
        engine.run(engine.deps.leases.hold(1))  # a connection from each asyncio pool
        engine.run(engine.deps.redis.ping())
        assert engine.redis is not None and engine.redis.ping()  # and the blocking client's
        assert _clients(probe) >= 3
        engine.close(drain_s=0)
        assert _clients(probe) == 0
    finally:
        probe.close()
