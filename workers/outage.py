"""A worker process's view of the database: up, or down since when, and a wait for its return.

Why: when the database stops (a restart, a failover, a lost network) a worker must neither burn
the jobs it takes (each failing at once, its match dropped) nor throw away the replies of calls
already paid for. So the first store call that meets the outage (`StoreUnavailable`) marks the
database down here, after one look of its own (`ping`: a call that fails while the database
answers is no outage, and is raised after OWN_ERRORS tries); one probe then asks every `every_s`
until it answers. Meanwhile the engine's store calls wait in `call` and are made again once it is
back (a store call is one transaction: one that failed changed nothing, unless the answer to its
commit was what got lost), new matches wait before they are leased, and the reaper leaves expired
leases alone.

A full disk (`StoreFull`) is waited out the same way, with two differences: it needs no look
of its own (the database said so; a read would answer, only writes fail), and the probe is a
write (`ping_write`), so judging resumes within `every_s` of space being freed.

Time is passed in (`sleep`, `clock`), so the waits are tested without a wall clock.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from service.store import StoreFull, StoreUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")
PROBE_EVERY_S = 0.5
OWN_ERRORS = 3


class DatabaseWatch:
    """Whether the database answers, as this process last saw it. Lives on one event loop."""

    def __init__(self, ping: Callable[[], Awaitable[object]], *, every_s: float = PROBE_EVERY_S,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic,
                 on_back: Callable[[], Awaitable[None]] | None = None,
                 ping_write: Callable[[], Awaitable[object]] | None = None) -> None:
        self._ping = ping
        self._ping_write = ping_write or ping
        self.full = False  # down for want of space: probed with a write
        self.every_s = every_s
        self._sleep = sleep
        self._clock = clock
        self._on_back = on_back
        self._up = asyncio.Event()
        self._up.set()
        self.down_since: float | None = None
        self.reason = ""
        self._probe: asyncio.Task[None] | None = None

    @property
    def down(self) -> bool:
        return not self._up.is_set()

    async def back(self, timeout_s: float | None = None) -> bool:
        """Wait until the database answers again (at most `timeout_s`); whether it does."""
        if timeout_s is None:
            await self._up.wait()
            return True
        try:
            await asyncio.wait_for(self._up.wait(), timeout_s)
        except asyncio.TimeoutError:
            return False
        return True

    async def confirm(self, error: StoreUnavailable) -> bool:
        """A store call failed with `error`: True when the database is down (marked so, and
        probed until it answers); False when it answers, so the error was the call's own."""
        if self.down:
            return True
        full = isinstance(error, StoreFull)
        if not full:
            try:
                await self._ping()
            except StoreUnavailable:
                pass
            else:
                return False
        if not self.down:
            self._up.clear()
            self.down_since = self._clock()
            self.reason = error.reason
            self.full = full
            if full:
                assert isinstance(error, StoreFull)
                log.warning("the database's disk is full at %s (%s): matches in flight wait for space, no new one "
                            "is taken", error.where, error.reason)
            else:
                log.warning("the database does not answer (%s): matches in flight wait for it, no new one is taken",
                            error.reason)
            self._probe = asyncio.get_running_loop().create_task(self._until_back())
        return True

    async def call(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """`attempt()`, made again each time it meets an outage, once the database is back. An
        error the database's own answer contradicts (it answered the look right after) is tried
        OWN_ERRORS times in all, for a database that came back between the two, then raised."""
        own = 0
        while True:
            if self.down:
                await self.back()
            try:
                return await attempt()
            except StoreUnavailable as exc:
                if not await self.confirm(exc):
                    own += 1
                    if own >= OWN_ERRORS:
                        raise

    async def _until_back(self) -> None:
        while True:
            await self._sleep(self.every_s)
            try:
                await (self._ping_write() if self.full else self._ping())
            except StoreUnavailable as exc:
                self.reason = exc.reason
                continue
            except asyncio.CancelledError:
                raise
            except Exception:  # a probe that fails otherwise (a bug, a full pool) still probes again
                log.exception("probing the database failed")
                continue
            break
        lasted = self._clock() - (self.down_since or self._clock())
        self.down_since = None
        self._up.set()
        if self.full:
            log.warning("the database takes writes again after %.1f s (space was freed): judging resumes", lasted)
        else:
            log.warning("the database answers again after %.1f s: judging resumes", lasted)
        self.full = False
        if self._on_back is not None:
            try:
                await self._on_back()
            except Exception:  # whatever it does is done again at its next turn
                log.exception("catching up after the database came back failed")

    async def close(self) -> None:
        """Stop probing (the engine is closing)."""
        if self._probe is not None and not self._probe.done():
            self._probe.cancel()
            await asyncio.gather(self._probe, return_exceptions=True)
