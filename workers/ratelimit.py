"""A calls-per-minute limit on one judge, shared by every worker through Redis.

Each worker already caps its own concurrent calls (`judge_concurrency`); a provider's quota is
per account, so the rate is counted in Redis, in fixed one-minute windows (a burst of up to
twice the rate can straddle a window boundary). A caller over the limit waits for the next
window instead of earning a 429.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from redis import Redis

from .errors import PermanentJudgeError
from .judge import Completion, Judge, JudgeReply, Message

WINDOW_S = 60


class SharedRateLimit:
    """Admits at most `per_minute` calls per judge spec per window, across processes."""

    def __init__(
        self,
        redis: Redis,
        per_minute: int,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1")
        self.redis = redis
        self.per_minute = per_minute
        self._clock = clock
        self._sleep = sleep

    async def acquire(self, spec: str) -> None:
        """Return when a call to `spec` may go out now."""
        while True:
            now = self._clock()
            window = int(now // WINDOW_S)
            key = f"joust:rate:{spec}:{window}"
            with self.redis.pipeline() as pipe:
                pipe.incr(key)
                pipe.expire(key, 2 * WINDOW_S)
                count = pipe.execute()[0]
            if count <= self.per_minute:
                return
            await self._sleep((window + 1) * WINDOW_S - now)


@dataclass
class RateLimitedJudge:
    """A judge whose calls first pass the shared limit."""

    judge: Judge
    limit: SharedRateLimit
    spec: str

    async def compare(self, question: str, first: str, second: str) -> JudgeReply:
        await self.limit.acquire(self.spec)
        return await self.judge.compare(question, first, second)

    async def complete(self, system: str, messages: list[Message]) -> Completion:
        """A free-form call, for judges that take one (`PermanentJudgeError` otherwise)."""
        complete = getattr(self.judge, "complete", None)
        if complete is None:
            raise PermanentJudgeError(f"the judge {self.spec!r} cannot answer a free-form question")
        await self.limit.acquire(self.spec)
        return await complete(system, messages)
