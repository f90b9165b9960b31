"""What every match path needs, apart from how it judges: the worker's dependencies and the
record of a failed match.

Why a module of its own: one match judged (`workers.match`), a panel's match (`workers.panel`)
and the batch driver all take a `Deps` and may `fail` a match; kept here, none of them imports
another to get at these.
"""
from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from service.config import Settings
from service.store import MatchContext, Store

from .breaker import CircuitBreaker
from .budget import SpendBook
from .callstats import CallStats
from .leases import Leases
from .ratelimit import SharedRateLimit
from .registry import JudgePool
from .unrecorded import UnrecordedCharges

log = logging.getLogger("workers.match")  # the failures are a match's story: logged under its name

Offload = Callable[..., Awaitable[Any]]
Requeue = Callable[[int, float, str], Awaitable[None]]


@dataclass
class Deps:
    """What judging a match needs, built once per worker process and handed to every match.

    `io(fn, *args)` runs a blocking store call on a thread, and through a database outage makes
    it again once the database answers (`workers.outage`); `requeue(match_id, delay_s,
    why)` puts a match back on the queue; `redis` is the asyncio client the leases, the rate
    limit and the spend book share; `rng` draws the retry jitter; `charges` takes what an attempt
    paid and stored no judgement for, even while the database is down.
    """

    settings: Settings
    store: Store
    io: Offload
    judges: JudgePool
    requeue: Requeue | None = None
    leases: Leases | None = None
    limiter: SharedRateLimit | None = None
    spend: SpendBook | None = None
    redis: Redis | None = None
    rng: random.Random = field(default_factory=random.Random)
    slots: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    stats: CallStats | None = None  # the process's call counts for /metrics
    breaker: CircuitBreaker | None = None  # the judges' circuit breakers, shared by every worker
    # charges for paid calls no judgement records, kept in Redis while the database is down
    charges: UnrecordedCharges | None = None

    def slot(self, spec: str, concurrency: int) -> asyncio.Semaphore:
        """The process's limit of calls in flight to judge `spec`."""
        found = self.slots.get(spec)
        if found is None:
            found = self.slots[spec] = asyncio.Semaphore(concurrency)
        return found



async def fail(deps: Deps, ctx: MatchContext, error: str) -> None:
    """Record the match as failed; its run stops itself after too many failures in a row."""
    stopped = await deps.io(deps.store.fail_match, ctx.match_id, error, final=True,
                            stop_after=deps.settings.stop_after_failures)
    if stopped:
        log.warning("tournament %d stopped: %d matches failed in a row, the last with %s",
                    ctx.tournament_id, deps.settings.stop_after_failures, error)
