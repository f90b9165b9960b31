"""Counts of the calls a worker sends to its judges, kept in Redis for the API's /metrics.

Workers are processes of their own, on any machine: counters in their memory would be invisible
to the API. So each call adds to one Redis hash shared by every worker (`Settings.call_stats_key`,
fields "<kind>\\x1f<judge>", read by `service.ops.metrics`): `calls:ok`, `calls:rate_limited` (429 or
529), `calls:error` (any other failure of the send), `retries` (a call sent again after the
provider could not answer), `pauses` (a 429/529 made every worker pause: `workers.gate`),
`circuit_opens` (the judge's circuit breaker opened, or reopened after a failed probe), and for
answered calls `latency_sum`, `latency_count` and `latency_le:<bound>` (how many took at most
`bound` seconds and more than the bound before, over `service.config.CALL_LATENCY_BUCKETS`; the
rest only in `latency_count`).

One pipelined round trip per call, next to a call that takes seconds; a Redis fault here is
logged and forgotten: counting must never fail a call already paid for.
"""
from __future__ import annotations

import logging

from redis.asyncio import Redis
from redis.exceptions import RedisError

from service.config import CALL_LATENCY_BUCKETS

log = logging.getLogger(__name__)

SEP = "\x1f"  # as service.ops.metrics reads it


def field(kind: str, judge: str) -> str:
    return f"{kind}{SEP}{judge}"


def bucket_of(latency_s: float) -> str | None:
    """The histogram bucket (its bound, as service.ops.metrics names it) a latency falls in; None
    past the last bound."""
    for bound in CALL_LATENCY_BUCKETS:
        if latency_s <= bound:
            return repr(float(bound))
    return None


class CallStats:
    """Adds each call's outcome to the shared hash (see the module docstring)."""

    def __init__(self, redis: Redis, key: str) -> None:
        self.redis = redis
        self.key = key

    async def answered(self, judge: str, latency_s: float) -> None:
        bucket = bucket_of(latency_s)
        counts = {"calls:ok": 1, "latency_count": 1, **({f"latency_le:{bucket}": 1} if bucket else {})}
        await self._add(judge, counts, latency_s)

    async def failed(self, judge: str, rate_limited: bool) -> None:
        await self._add(judge, {"calls:rate_limited" if rate_limited else "calls:error": 1})

    async def retried(self, judge: str) -> None:
        await self._add(judge, {"retries": 1})

    async def paused(self, judge: str) -> None:
        await self._add(judge, {"pauses": 1})

    async def circuit_opened(self, judge: str) -> None:
        await self._add(judge, {"circuit_opens": 1})

    async def _add(self, judge: str, counts: dict[str, int], latency_s: float | None = None) -> None:
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                for kind, n in counts.items():
                    pipe.hincrby(self.key, field(kind, judge), n)
                if latency_s is not None:
                    pipe.hincrbyfloat(self.key, field("latency_sum", judge), latency_s)
                await pipe.execute()
        except (RedisError, OSError) as exc:
            log.warning("counting a call of %s failed: %s", judge, exc)
