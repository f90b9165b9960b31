"""What failed attempts paid, on its way to the store even while the database is down.

An attempt that paid for calls and stores no judgement charges them to its match
(`Store.charge_match`: the run's spend, the failed-call counts, `joust_unrecorded_spent_usd`).
When the database does not answer at that moment (an outage met by a worker that is stopping, so
it cannot wait for the database), the charge must not be forgotten, or a call paid twice would
show in no figure. So `UnrecordedCharges.charge` writes it to the store at once when it can, and
otherwise keeps it in a Redis list shared by every worker; `flush` (run when a worker sees the
database back, and at every reaper turn) writes the kept charges to the store, under a lock so
that two workers never write one charge twice.

A charge moves from `PENDING` to `WRITING` while it is written and is removed once the store has
it; a worker that died between the two leaves it in `WRITING`, which the next flush puts back.
The store may then count it twice (a commit whose answer was lost): the error is on the side of
counting a paid call, never of losing one.
"""
from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis

from service.store import Store, StoreUnavailable

from .lua import LuaScript

log = logging.getLogger(__name__)

PENDING = "joust:unrecorded:pending"
WRITING = "joust:unrecorded:writing"
FLUSH_LOCK = "joust:unrecorded:lock"
LOCK_TTL_MS = 60_000
# KEYS[1]: the lock. ARGV[1]: our token. Give the lock back unless it lapsed and another took it.
_UNLOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"

Offload = Callable[..., Awaitable[Any]]


class UnrecordedCharges:
    """Charges for paid calls no judgement records: to the store, or kept until it answers."""

    def __init__(self, redis: Redis, store: Store, io_once: Offload) -> None:
        self.redis = redis
        self.store = store
        self.io_once = io_once  # one try on the thread pool, never waiting for the database
        self._unlock = LuaScript(redis, _UNLOCK)

    async def charge(self, match_id: int, cost_usd: float | None, calls: int) -> None:
        """Charge the match now; while the database is down, keep the charge for `flush`."""
        try:
            await self.io_once(self.store.charge_match, match_id, cost_usd, calls=calls)
        except StoreUnavailable as exc:
            entry = json.dumps({"id": uuid.uuid4().hex, "match": match_id, "usd": cost_usd, "calls": calls})
            await self.redis.lpush(PENDING, entry)
            log.warning("match %d: %d paid calls kept in Redis until the database answers (%s)",
                        match_id, calls, exc.reason)

    async def waiting(self) -> int:
        """How many charges wait for the database."""
        return int(await self.redis.llen(PENDING)) + int(await self.redis.llen(WRITING))

    async def flush(self) -> int:
        """Write the kept charges to the store, oldest first, until none is left or the database
        stops answering; how many were written. Another worker flushing meanwhile: 0."""
        if not await self.waiting():
            return 0
        token = uuid.uuid4().hex
        if not await self.redis.set(FLUSH_LOCK, token, nx=True, px=LOCK_TTL_MS):
            return 0
        written = 0
        try:
            while await self.redis.rpoplpush(WRITING, PENDING) is not None:  # a flusher died mid-write
                pass
            while True:
                raw = await self.redis.lmove(PENDING, WRITING, "RIGHT", "LEFT")
                if raw is None:
                    break
                entry = json.loads(raw)
                try:
                    await self.io_once(self.store.charge_match, int(entry["match"]), entry["usd"],
                                       calls=int(entry["calls"]))
                except StoreUnavailable:
                    await self.redis.lmove(WRITING, PENDING, "LEFT", "RIGHT")  # back where it was, oldest
                    break
                await self.redis.lrem(WRITING, 1, raw)
                written += 1
        finally:
            await self._unlock(keys=[FLUSH_LOCK], args=[token])
        if written:
            log.warning("charged %d kept charges of paid calls now that the database answers", written)
        return written
