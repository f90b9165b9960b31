"""The batch driver: the RQ job `drive()` moves every batch run one cycle forward.

Batch delivery (a tournament's `"delivery": "batch"`) sends its calls through Anthropic's
Message Batches API at half the price. Its matches are never RQ jobs: the scheduler enqueues
`workers.batches.drive_job` at most once per `batch_poll_s` while there is batch work
(`service.store.queue.JobQueue.enqueue_driver`), and each cycle, under a Redis lock so that one
driver runs at a time across machines:

1. replays the ready matches of active batch runs (`workers.batch_judge.replay`): each one is
   judged from stored results, or stores the requests it still needs and waits on them;
2. submits the pending requests, grouped by model, in chunks within `batch_max_requests` and
   `batch_max_bytes`. To keep the crash window tiny, it first writes a "creating" batch row with
   its request count and time (its requests move to "submitted" with it), then calls create,
   then stores the provider's id. A "creating" row left by a driver that died in between is
   resolved on the next cycle by listing the provider's batches created since: one with the same
   request count that no row knows is adopted; else, once older than `CREATING_GRACE_S`, its
   requests go back to pending. A create call is never retried blindly (its SDK retries are off):
   nothing is submitted twice while an earlier submission may still produce a result;
3. polls the open batches, cancels those whose requests no active match waits on any more, and
   streams an ended batch's results into its requests: transient errors (api_error,
   overloaded_error...), expired and canceled requests go back to pending, and are given up, with
   their waiting matches failed, after `job_retries` re-submissions; a permanent error
   (invalid_request_error) fails the matches that replay it;
4. replays the matches that became ready, and submits what they asked for (reminder re-asks).

Every batch id and request state lives in the database, so any process may die at any moment.
Budget reservations (`workers.budget.SpendBook`) are made when a request is first stored and
settled with its real cost, at the batch price, when its result comes.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import LockError

from leaderboard.pricing import BATCH_DISCOUNT, cost_usd
from service.config import Settings
from service.store import (
    ACTIVE,
    BatchCounts,
    BatchResult,
    BatchRow,
    BatchStatus,
    NotFound,
    Outgoing,
    RequestStatus,
    Settled,
)

from . import jobs
from .batch_judge import replay
from .match import Deps, fail

log = logging.getLogger(__name__)

LOCK_KEY = "joust:batches:driver:{queue}"
LOCK_TTL_S = 60.0  # renewed every third of it while the cycle runs
CREATING_GRACE_S = 900.0  # a "creating" row no provider batch matches is given back after this
LIST_SKEW_S = 300.0  # clock difference allowed between our "creating" time and the provider's
RESULT_CHUNK = 1000  # results stored per transaction
ENVELOPE_BYTES = 1024  # a create call's bytes beside its requests
SDK_RETRIES = 2  # for retrieve, list, results and cancel; never for create
TRANSIENT_ERRORS = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error",
                              "gateway_timeout_error"})
NOT_REFUSED = frozenset({408, 409, 429})  # 4xx statuses after which the batch may exist


@dataclass(frozen=True)
class Cycle:
    """What one cycle did (the RQ job's result, a test's check); `ran` False when another
    driver held the lock."""

    ran: bool = True
    outcomes: Mapping[str, int] = field(default_factory=dict)
    submitted: int = 0
    created: tuple[str, ...] = ()
    adopted: tuple[str, ...] = ()
    ended: tuple[str, ...] = ()


def drive() -> Cycle:
    """One cycle of the batch driver on this worker process's engine."""
    engine = jobs.engine()
    return engine.run(drive_once(engine.deps))


def drive_job() -> dict[str, Any]:
    """The RQ job: one cycle; its result as plain data (jobs and results travel as JSON)."""
    return dataclasses.asdict(drive())


async def drive_once(deps: Deps) -> Cycle:
    """One cycle under the driver's lock (nothing when another driver holds it)."""
    if deps.redis is None:
        raise RuntimeError("the batch driver needs Redis (REDIS_URL) for its lock")
    lock = deps.redis.lock(LOCK_KEY.format(queue=deps.settings.queue_name), timeout=LOCK_TTL_S)
    if not await lock.acquire(blocking=False):
        return Cycle(ran=False)
    keeper = asyncio.get_running_loop().create_task(_keep(lock))
    try:
        async with _client(deps.settings) as client:
            return await Driver(deps, client).cycle()
    finally:
        keeper.cancel()
        await asyncio.gather(keeper, return_exceptions=True)
        try:
            await lock.release()
        except LockError:
            log.warning("the batch driver's lock lapsed during its cycle")


async def _keep(lock: Any) -> None:
    while True:
        await asyncio.sleep(LOCK_TTL_S / 3)
        try:
            await lock.extend(LOCK_TTL_S, replace_ttl=True)
        except Exception:  # keep trying through a Redis hiccup
            log.exception("could not renew the batch driver's lock")


def _client(settings: Settings) -> Any:
    import anthropic

    return anthropic.AsyncAnthropic(api_key=settings.anthropic_api_key or "missing",
                                    base_url=settings.anthropic_base_url, max_retries=SDK_RETRIES,
                                    timeout=settings.judge_timeout_s)


class Driver:
    """One cycle's state: the client, the limits, and what was done (see the module docstring)."""

    def __init__(self, deps: Deps, client: Any, *, grace_s: float | None = None) -> None:
        self.deps, self.client = deps, client
        self.io, self.store = deps.io, deps.store
        self.give_up_after = deps.settings.job_retries + 1  # submissions of one request
        self.grace_s = CREATING_GRACE_S if grace_s is None else grace_s
        self.halted = False  # a create call's outcome is unknown: submit nothing more this cycle
        self.outcomes: Counter[str] = Counter()
        self.submitted = 0
        self.created: list[str] = []
        self.adopted: list[str] = []
        self.ended: list[str] = []

    async def cycle(self) -> Cycle:
        await self.replay_ready()
        await self.resolve_creating()
        await self.submit()
        await self.poll()
        await self.replay_ready()
        await self.submit()
        return Cycle(True, dict(self.outcomes), self.submitted, tuple(self.created), tuple(self.adopted),
                     tuple(self.ended))

    async def replay_ready(self) -> None:
        """Replay, one at a time, every match whose requests have all ended: replays are
        database-bound, and a score one keeps is then reused by the next, not paid twice."""
        for match_id in await self.io(self.store.ready_batch_matches):
            try:
                outcome = (await replay(self.deps, match_id)).value
            except Exception:  # a database fault or a bug: the match stays ready for the next cycle
                log.exception("match %d: its batch replay failed", match_id)
                outcome = "error"
            self.outcomes[outcome] += 1

    async def submit(self) -> None:
        """Drop the requests nobody waits on any more, then put the pending ones in batches."""
        if self.halted:
            return
        await self.settle(await self.io(self.store.drop_orphan_requests))
        by_model: dict[str, list[Outgoing]] = {}
        for request in await self.io(self.store.pending_requests):
            by_model.setdefault(request.model, []).append(request)
        settings = self.deps.settings
        for model, requests in by_model.items():
            for chunk in chunks(requests, settings.batch_max_requests, settings.batch_max_bytes):
                if not await self._create(model, chunk):
                    self.halted = True
                    return

    async def _create(self, model: str, chunk: Sequence[Outgoing]) -> bool:
        """One batch: the "creating" row, the create call, the provider's id. False when the
        call's outcome is unknown (the row stays "creating", resolved next cycle)."""
        import anthropic

        opened = await self.io(self.store.open_batch, model, [r.custom_id for r in chunk])
        if opened is None:
            return True
        body = [{"custom_id": r.custom_id, "params": json.loads(r.params)} for r in opened.requests]
        try:
            made = await self.client.with_options(max_retries=0).messages.batches.create(requests=body)
        except anthropic.APIStatusError as exc:
            if not (400 <= exc.status_code < 500) or exc.status_code in NOT_REFUSED:
                log.warning("batch of %d requests: HTTP %d; resolved next cycle", len(body), exc.status_code)
                return False
            why = f"the provider refused the batch: HTTP {exc.status_code}: {exc.message}"
            log.warning("%s", why)
            await self.settle(await self.io(self.store.close_batch, opened.id, BatchStatus.ABANDONED,
                                            self.give_up_after, error=why))
            return True
        except anthropic.AnthropicError as exc:  # a timeout, a lost connection: it may exist
            log.warning("batch of %d requests: %s; resolved next cycle", len(body), exc)
            return False
        await self.io(self.store.batch_created, opened.id, made.id, open_status(made), counts_of(made),
                      made.created_at.timestamp())
        self.submitted += len(body)
        self.created.append(made.id)
        log.info("submitted batch %s: %d requests to %s", made.id, len(body), model)
        return True

    async def resolve_creating(self) -> None:
        """Adopt the provider's batch of each "creating" row a dead driver left, or give its
        requests back once no batch has shown up for `grace_s`."""
        import anthropic

        rows = await self.io(self.store.batches_in, BatchStatus.CREATING)
        if not rows:
            return
        since = min(row.created_at for row in rows) - LIST_SKEW_S
        listed = []
        try:
            async for batch in self.client.messages.batches.list(limit=100):  # newest first
                if batch.created_at.timestamp() < since:
                    break
                listed.append(batch)
        except anthropic.AnthropicError as exc:
            log.warning("could not list the provider's batches: %s; tried again next cycle", exc)
            return
        known = await self.io(self.store.known_provider_ids, [b.id for b in listed])
        free = sorted((b for b in listed if b.id not in known), key=lambda b: b.created_at)
        for row in rows:
            found = next((b for b in free if counts_of(b).total == row.request_count
                          and b.created_at.timestamp() >= row.created_at - LIST_SKEW_S), None)
            if found is not None:
                free.remove(found)
                if await self.io(self.store.batch_created, row.id, found.id, open_status(found), counts_of(found),
                                 found.created_at.timestamp()):
                    self.adopted.append(found.id)
                    log.warning("adopted batch %s of %d requests, created by a driver that stopped", found.id,
                                row.request_count)
            elif time.time() - row.created_at > self.grace_s:
                why = "its create call never reached the provider"
                await self.settle(await self.io(self.store.close_batch, row.id, BatchStatus.ABANDONED,
                                                self.give_up_after, error=why))

    async def poll(self) -> None:
        """Look at every open batch: collect it once ended, cancel it when nobody needs it."""
        import anthropic

        rows = await self.io(self.store.batches_in, BatchStatus.IN_PROGRESS, BatchStatus.CANCELING)
        idle = await self.io(self.store.idle_batches) if rows else set()
        for row in rows:
            assert row.provider_id is not None
            try:
                got = await self.client.messages.batches.retrieve(row.provider_id)
                if got.processing_status == BatchStatus.ENDED.value:
                    await self.collect(row, got)
                    continue
                if row.id in idle and got.processing_status == BatchStatus.IN_PROGRESS.value:
                    got = await self.client.messages.batches.cancel(row.provider_id)
                    log.info("canceled batch %s: no active match waits on its requests", row.provider_id)
                await self.io(self.store.update_batch, row.id, BatchStatus(got.processing_status), counts_of(got))
            except anthropic.AnthropicError as exc:
                log.warning("batch %s: %s; polled again next cycle", row.provider_id, exc)

    async def collect(self, row: BatchRow, got: Any) -> None:
        """Stream an ended batch's results into its requests, then mark it ended."""
        assert row.provider_id is not None
        decoder = await self.client.messages.batches.results(row.provider_id)
        chunk: list[BatchResult] = []
        async for line in decoder:
            chunk.append(result_of(line))
            if len(chunk) >= RESULT_CHUNK:
                await self.settle(await self.io(self.store.store_results, row.id, chunk, self.give_up_after))
                chunk = []
        if chunk:
            await self.settle(await self.io(self.store.store_results, row.id, chunk, self.give_up_after))
        ended_at = got.ended_at.timestamp() if got.ended_at is not None else time.time()
        await self.settle(await self.io(self.store.close_batch, row.id, BatchStatus.ENDED, self.give_up_after,
                                        counts=counts_of(got), ended_at=ended_at))
        self.ended.append(row.provider_id)

    async def settle(self, settled: Sequence[Settled]) -> None:
        """Replace each ended request's budget reservation by its real cost (at the batch
        price; nothing for one not answered), and fail the matches waiting on one given up."""
        spend, table = self.deps.spend, self.deps.settings.price_table()
        for done in settled:
            if spend is not None and done.tournament_id is not None and done.reserved_usd is not None:
                actual = 0.0
                if done.status is RequestStatus.SUCCEEDED:
                    price = cost_usd(done.judge, done.input_tokens, done.output_tokens, table)
                    actual = (price or 0.0) * BATCH_DISCOUNT
                await spend.settle(done.tournament_id, done.reserved_usd, actual)
            for match_id in done.waiting if done.gave_up else ():
                try:
                    ctx = await self.io(self.store.match_context, match_id)
                except NotFound:
                    continue
                if ctx.status in ACTIVE:
                    await fail(self.deps, ctx, f"gave up after {done.attempts} attempts: {done.error}")


def chunks(requests: Sequence[Outgoing], max_requests: int, max_bytes: int) -> Iterator[list[Outgoing]]:
    """The requests in order, cut into batches of at most `max_requests` and `max_bytes`."""
    chunk: list[Outgoing] = []
    size = ENVELOPE_BYTES
    for request in requests:
        if chunk and (len(chunk) >= max_requests or size + request.size + 1 > max_bytes):
            yield chunk
            chunk, size = [], ENVELOPE_BYTES
        chunk.append(request)
        size += request.size + 1
    if chunk:
        yield chunk


def open_status(batch: Any) -> BatchStatus:
    """Our status of a batch not yet collected: "ended" is ours to set once its results are stored."""
    return BatchStatus.CANCELING if batch.processing_status == BatchStatus.CANCELING.value else BatchStatus.IN_PROGRESS


def counts_of(batch: Any) -> BatchCounts:
    """The request counts of an SDK `MessageBatch`."""
    c = batch.request_counts
    return BatchCounts(c.processing, c.succeeded, c.errored, c.canceled, c.expired)


def result_of(line: Any) -> BatchResult:
    """One SDK `MessageBatchIndividualResponse` as the store takes it."""
    result, custom_id = line.result, line.custom_id
    if result.type == RequestStatus.SUCCEEDED.value:
        message = result.message
        text = "".join(block.text for block in message.content if getattr(block, "type", None) == "text")
        usage = message.usage
        return BatchResult(custom_id, RequestStatus.SUCCEEDED, text, int(usage.input_tokens or 0),
                           int(usage.output_tokens or 0))
    if result.type == RequestStatus.ERRORED.value:
        error = result.error.error
        kind = getattr(error, "type", None) or "api_error"
        return BatchResult(custom_id, RequestStatus.ERRORED, error=f"{kind}: {getattr(error, 'message', '')}",
                           retry=kind in TRANSIENT_ERRORS)
    return BatchResult(custom_id, RequestStatus(result.type), error=f"{result.type} in its batch", retry=True)
