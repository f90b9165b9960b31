"""A worker process's engine: dozens of matches in flight on one event loop, fed by RQ.

RQ stays the queue. `joust worker` runs RQ's `SimpleWorker` (jobs run in its own process, so the
engine and its clients live across jobs). A job (`workers.jobs.judge_match`) does not judge its
match: it leases it (`workers.leases`) and hands it to this engine, waiting only while the engine
already holds `Settings.matches_in_flight` matches, then returns, and RQ takes the next job while
the earlier matches still wait on the judge. So one process keeps as many calls in flight as the
provider's limit allows (`workers.gate`), not one match at a time.

Why this rather than jobs that carry a chunk of matches: a chunk ends with its slowest match, so
the process idles at every chunk's tail; and a lost chunk loses many matches at once. Here each
match is its own job, its own lease and its own retry, and the engine refills a free slot the
moment one frees.

The engine's loop runs on a thread of its own; the store (SQLAlchemy, blocking) is called on a
small thread pool, Redis through its asyncio client, so neither stalls the matches in flight. A
heartbeat renews every lease and claim of the process; a reaper hands out again the matches whose
lease expired (their worker died). On shutdown the engine stops taking matches, waits
`drain_timeout_s` for those in flight, then gives the rest back (their leases expire at once, so
the next reaper hands them out).

A database outage (`workers.outage`) is waited out, not failed on: the matches in flight keep
their leases (the heartbeat is Redis only) and their replies, and make their store calls once the
database is back, so no call is paid twice for it; a job that arrives meanwhile waits before its
match is leased (the rest stay on the queue), and past a quarter of `match_timeout_s` goes back on
the queue with a delay; the reaper hands nothing out until the database answers. What a stopping
worker paid and could not store is kept in Redis and charged when it answers
(`workers.unrecorded`).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import random
import threading
from collections import Counter
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from leaderboard.types import MatchOutcome
from service.config import Settings
from service.store import Store, StoreUnavailable
from service.store.queue import JUDGE_MATCH as JUDGE_MATCH  # named here before (tests import it)
from service.store.queue import job_queue

from . import logcontext
from .breaker import CircuitBreaker
from .budget import SpendBook
from .callstats import CallStats
from .closing import release
from .connections import async_clients, connect
from .dispatch import OVERDUE_S as OVERDUE_S  # named here before (tests import it)
from .dispatch import enqueue, move_overdue
from .leases import Leases
from .match import Deps, judge_one
from .outage import DatabaseWatch
from .ratelimit import SharedRateLimit
from .registry import JudgePool
from .stalls import describe
from .stopping import REDIS_RETRIES, redis_retry  # noqa: F401 (both named here before)
from .unrecorded import UnrecordedCharges

log = logging.getLogger(__name__)

T = TypeVar("T")
IO_THREADS = 8


class Engine:
    """One per worker process: build it with the process's settings, `admit` matches from jobs,
    `close` it on the way out."""

    def __init__(self, settings: Settings, *, rng: random.Random | None = None) -> None:
        # The gate retries each call through the shared rate limit: the SDKs must not retry alone.
        self.settings = settings.with_(sdk_max_retries=0)
        self.store = Store(settings.resolved_database_url)
        self.redis = connect(settings.redis_url) if settings.redis_url else None
        self.queue = job_queue(self.redis, settings.queue_name) if self.redis is not None else None
        self.outcomes: Counter[MatchOutcome] = Counter()
        self._rng = rng or random.Random()
        self._executor = concurrent.futures.ThreadPoolExecutor(IO_THREADS, thread_name_prefix="joust-io")
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="joust-engine", daemon=True)
        self._thread.start()
        self._running: dict[int, asyncio.Task[MatchOutcome]] = {}
        self._closing = False
        self._bookkeeping: set[asyncio.Task[None]] = set()  # queue records waiting for the database
        self._again: set[int] = set()  # matches whose job came while their task here was ending
        self._readmits: set[asyncio.Task[None]] = set()  # those jobs being taken up
        self.deps: Deps = self.run(self._build())

    # ---- the loop's side ---------------------------------------------------------------------

    async def _build(self) -> Deps:
        aredis = lease_redis = None
        if self.settings.redis_url:  # pools of their own (`workers.connections.async_clients`)
            aredis, lease_redis = async_clients(self.settings.redis_url)
        self._slots = asyncio.Semaphore(self.settings.matches_in_flight)
        self.charges = UnrecordedCharges(aredis, self.store, self.io_once) if aredis is not None else None
        self.database = DatabaseWatch(lambda: self.io_once(self.store.ping), on_back=self._caught_up,
                                      ping_write=lambda: self.io_once(self.store.ping_write))
        deps = Deps(
            settings=self.settings,
            store=self.store,
            io=self.io,
            judges=JudgePool(self.settings),
            requeue=self.requeue if self.queue is not None else None,
            leases=Leases(lease_redis, self.settings.lease_ttl_s) if lease_redis is not None else None,
            limiter=SharedRateLimit(aredis) if aredis is not None else None,
            spend=SpendBook(aredis, self.store, self.io) if aredis is not None else None,
            redis=aredis,
            rng=self._rng,
            stats=CallStats(aredis, self.settings.call_stats_key) if aredis is not None else None,
            charges=self.charges,
            breaker=CircuitBreaker(aredis, self.settings.breaker()) if aredis is not None else None,
        )
        loop = asyncio.get_running_loop()
        self._beating = [loop.create_task(self._heartbeat(deps)), loop.create_task(self._reaper(deps))] \
            if deps.leases else []
        return deps

    async def io(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a blocking call on the engine's thread pool; one the database could not take is
        made again once it answers (`DatabaseWatch.call`), so only a blocking call that is
        safe to repeat (a store call: one transaction) may come here."""
        return await self.database.call(lambda: self.io_once(fn, *args, **kwargs))

    async def io_once(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a blocking call on the engine's thread pool, once."""
        context = contextvars.copy_context()  # the match's log ids travel to the thread
        return await asyncio.get_running_loop().run_in_executor(self._executor, lambda: context.run(fn, *args, **kwargs))

    async def requeue(self, match_id: int, delay_s: float, why: str) -> None:
        """Put a match back on the queue in `delay_s` seconds (RQ's scheduler moves it there)."""
        await self._hand_out([match_id], delay_s, why)

    async def _hand_out(self, match_ids: list[int], delay_s: float, why: str) -> None:
        """Put matches on the queue (Redis), then record their jobs in the store; while the
        database is down that record waits for it in the background: the jobs are out already,
        and the record only tells the scheduler's sweep they are alive."""
        jobs = await self.io_once(self._enqueue, match_ids, delay_s, why)
        try:
            await self.io_once(self.store.mark_queued, jobs)
        except StoreUnavailable as exc:
            await self.database.confirm(exc)
            self._track(self.io(self.store.mark_queued, jobs))

    def _enqueue(self, match_ids: list[int], delay_s: float, why: str) -> dict[int, str]:
        assert self.queue is not None
        return enqueue(self.queue, match_ids, delay_s, why, self.settings.match_timeout_s)

    async def _heartbeat(self, deps: Deps) -> None:
        """Renew this process's leases and claims, three times per ttl. Nothing else runs in
        this task (Redis only, on connections of its own), so no store call can delay it."""
        assert deps.leases is not None
        every = self.settings.lease_ttl_s / 3
        while True:
            try:
                lost_matches, lost_claims = await deps.leases.renew()
                if lost_matches or lost_claims:
                    log.warning("heartbeat late: lost leases %s and claims %d", sorted(lost_matches), len(lost_claims))
            except asyncio.CancelledError:
                raise
            except Exception:  # keep beating through a Redis hiccup
                log.exception("heartbeat failed")
            await asyncio.sleep(every)

    async def _reaper(self, deps: Deps) -> None:
        """Hand out again, every half ttl, the matches whose worker died; and charge what was
        paid while the database was down, once it answers."""
        while True:
            try:
                await self._reap(deps)
                if self.queue is not None:
                    await self.io_once(self.move_overdue)
                if self.charges is not None and not self.database.down:
                    await self.charges.flush()
            except asyncio.CancelledError:
                raise
            except Exception:  # keep reaping through a Redis or database hiccup
                log.exception("reaping lost matches failed")
            await asyncio.sleep(self.settings.lease_ttl_s / 2)

    def move_overdue(self) -> list[str]:
        """Put on the queue the delayed jobs overdue by `OVERDUE_S` (`workers.dispatch`)."""
        assert self.queue is not None and self.redis is not None
        moved = move_overdue(self.queue, self.redis)
        if moved:
            log.warning("put %d overdue delayed jobs on the queue (RQ's scheduler is not running)", len(moved))
        return moved

    async def _reap(self, deps: Deps) -> list[int]:
        """Hand out again the matches whose lease expired (in any process). Nothing is taken
        while the database is down; what was taken and cannot be handed out is given back."""
        assert deps.leases is not None
        if self.database.down or self.queue is None:
            return []
        expired = await deps.leases.reap()
        if not expired:
            return []
        try:
            active = await self.io_once(self.store.active_matches, expired)
            if active:
                await self._hand_out(active, 0.0, "its worker stopped")
        except BaseException as exc:
            await deps.leases.unreaped(expired)
            if isinstance(exc, StoreUnavailable):
                await self.database.confirm(exc)
                return []
            raise
        await deps.leases.rehanded(expired)
        if active:
            log.warning("handed out again %d matches whose worker stopped: %s", len(active), active[:20])
        return active

    async def _caught_up(self) -> None:
        """The database answers again: hand out what lapsed meanwhile and charge what was kept."""
        if self.deps.leases is not None:
            await self._reap(self.deps)
        if self.charges is not None:
            await self.charges.flush()

    async def _admit(self, match_id: int, wait_s: float) -> str:
        deps = self.deps
        if self._closing:
            await self.requeue(match_id, 0.0, "its worker is stopping")
            return "requeued"
        if match_id in self._running:
            # Handed out again while its task here has not left: a retry's or a wait's job can
            # arrive before the task that queued it has ended (the queue is written before the
            # store), and dropping it lost the match until the sweep. Take it up when the task ends.
            self._again.add(match_id)
            return "deferred"
        if self.database.down and not await self.database.back(wait_s):  # keep the rest on the queue
            await self.requeue(match_id, max(1.0, self.settings.lease_ttl_s), "the database is down")
            return "requeued"
        if deps.leases is not None:
            await deps.leases.hold(match_id)
        try:
            await asyncio.wait_for(self._slots.acquire(), wait_s)
        except asyncio.TimeoutError:  # this process is busy: let another take it
            if deps.leases is not None:
                await deps.leases.drop(match_id)
            await self.requeue(match_id, 0.0, "its worker was busy")
            return "requeued"
        self._running[match_id] = asyncio.get_running_loop().create_task(self._judge(match_id))
        return "admitted"

    async def _judge(self, match_id: int) -> MatchOutcome:
        logcontext.MATCH_ID.set(match_id)  # this task's lines, its failure included
        deps = self.deps
        abandoned = False
        try:
            outcome = await judge_one(deps, match_id)
            self.outcomes[outcome] += 1
            log.debug("match %d: %s", match_id, outcome.value)
            return outcome
        except asyncio.CancelledError:
            abandoned = True
            self.outcomes[MatchOutcome.ABANDONED] += 1
            raise
        except Exception:
            # A database or Redis fault, or a bug: nothing was decided. Let the lease expire at
            # once, so a reaper hands the match out again.
            log.exception("match %d: judging it failed", match_id)
            abandoned = True
            self.outcomes[MatchOutcome.ABANDONED] += 1
            return MatchOutcome.ABANDONED
        finally:
            self._slots.release()
            try:
                if deps.leases is not None:  # before it leaves `_running`: a later job's lease stays
                    if abandoned:
                        await deps.leases.abandon([match_id])
                    else:
                        await deps.leases.drop(match_id)
            finally:
                self._running.pop(match_id, None)
                if match_id in self._again:
                    self._again.discard(match_id)
                    task = asyncio.get_running_loop().create_task(self._readmit(match_id))
                    self._readmits.add(task)
                    task.add_done_callback(self._readmits.discard)

    async def _readmit(self, match_id: int) -> None:
        """Take up a job that arrived while the match's task here was still ending."""
        try:
            await self._admit(match_id, max(1.0, self.settings.match_timeout_s / 4))
        except Exception:  # the scheduler's sweep hands it out again
            log.exception("match %d: taking up its deferred job failed", match_id)

    def _track(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run background work the shutdown cancels and waits for."""
        task = asyncio.get_running_loop().create_task(coro)
        self._bookkeeping.add(task)
        task.add_done_callback(self._bookkeeping.discard)

    async def _drain(self, timeout_s: float) -> list[int]:
        self._closing = True
        tasks = list(self._running.values())
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)
        left = {match_id: task for match_id, task in self._running.items() if not task.done()}
        for task in left.values():
            task.cancel()
        if left:
            await asyncio.wait(list(left.values()), timeout=5)
        if self._readmits:  # deferred jobs go back on the queue (the engine is closing)
            await asyncio.wait(list(self._readmits), timeout=5)
        return sorted(left)

    async def _shutdown(self) -> list[str]:
        """Release what the loop holds, each step bounded (`workers.closing`); what did not close."""
        for task in [*self._beating, *self._bookkeeping]:
            task.cancel()
        steps: list[tuple[str, Awaitable[object]]] = [
            ("background tasks", asyncio.gather(*self._beating, *self._bookkeeping, return_exceptions=True)),
            ("the database watch", self.database.close()),
            ("the judges' clients", self.deps.judges.aclose()),
        ]
        if self.deps.redis is not None:
            steps.append(("the Redis pool", self.deps.redis.aclose(close_connection_pool=True)))
        if self.deps.leases is not None:
            steps.append(("the leases' Redis pool", self.deps.leases.redis.aclose(close_connection_pool=True)))
        return await release(steps, lambda: describe(self.loop, self._thread))

    # ---- the caller's side (RQ's main thread, tests) -------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a coroutine on the engine's loop and wait for its result; past `timeout` the
        error says what the loop and its tasks were doing (`workers.stalls`)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the engine's loop did not finish within {timeout} s:\n"
                               + describe(self.loop, self._thread)) from None

    def admit(self, match_id: int) -> str:
        """Lease a match and hand it to the loop; waits while the engine is full, at most about
        a quarter of `match_timeout_s` (then the match goes back on the queue for another
        worker). "admitted", "requeued", or "deferred" when it is in flight here already (taken up
        when that task ends)."""
        return self.run(self._admit(match_id, max(1.0, self.settings.match_timeout_s / 4)))

    def judge_now(self, match_id: int) -> MatchOutcome:
        """Judge one match to its end and say what happened (tests; the naive benchmark)."""

        async def one() -> MatchOutcome:
            leases = self.deps.leases
            if leases is not None:
                await leases.hold(match_id)
            try:
                return await judge_one(self.deps, match_id)
            finally:
                if leases is not None:
                    await leases.drop(match_id)

        return self.run(one())

    def in_flight(self) -> int:
        """Matches being judged in this process now."""
        return len(self._running)

    def drain(self, timeout_s: float | None = None) -> list[int]:
        """Stop taking matches; wait for those in flight, give back what is left (its ids)."""
        wait = self.settings.drain_timeout_s if timeout_s is None else timeout_s
        left = self.run(self._drain(wait))
        if left:
            log.warning("gave back %d matches still in flight: %s", len(left), left[:20])
        return left

    def close(self, drain_s: float | None = None) -> None:
        """Drain, then release the clients, the store, Redis and the loop's thread."""
        if self._thread.is_alive():
            try:
                self.drain(drain_s)
                self.run(self._shutdown(), timeout=30)
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)
                self._thread.join(timeout=30)
        self._executor.shutdown(wait=True)
        self.store.close()
        if self.redis is not None:
            self.redis.close()
        if not self.loop.is_running():
            self.loop.close()
