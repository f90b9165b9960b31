"""The shared calls-per-minute limit, counted in a real Redis, with time passed in."""
from __future__ import annotations

import asyncio

from redis import Redis

from workers.ratelimit import SharedRateLimit


def test_calls_over_the_limit_wait_for_the_next_window(redis_url: str) -> None:
    now = [120.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    limit = SharedRateLimit(Redis.from_url(redis_url), 3, clock=lambda: now[0], sleep=sleep)
    other_worker = SharedRateLimit(Redis.from_url(redis_url), 3, clock=lambda: now[0], sleep=sleep)

    async def calls() -> None:
        for _ in range(2):
            await limit.acquire("anthropic/x")
        await other_worker.acquire("anthropic/x")  # the third call of the window, from elsewhere
        assert slept == []
        now[0] += 15
        await limit.acquire("anthropic/x")  # the fourth waits for the window at 180 s
        assert slept == [45.0] and now[0] == 180.0
        await limit.acquire("anthropic/other")  # another judge has its own budget
        assert len(slept) == 1

    asyncio.run(calls())
