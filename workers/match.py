"""One match, judged: the coroutine a worker process runs dozens of at once.

`judge_one(deps, match_id)` loads the match, answers it from a stored judgement when one exists
(free: one under its own key, or, for an order `single` match, a `both` judgement of the pair), or
claims its judgement key (`workers.leases`), asks the judge through the match's gate
(`workers.gate`: a slot, the shared rate limit, the budget), stores the judgement once under its
key and resolves the match. Its dependencies are handed in (`Deps`), not rebuilt from the
environment, and every store call runs off the event loop (`Deps.io`), so a blocking database
write never stalls the other matches waiting on the judge.

A match may be judged twice (a dead worker's match handed out again) or alongside a twin (the same
pair in another tournament): the judgement is stored once under its content key and a match is
resolved once, so nothing is lost or duplicated; the claim keeps a twin from paying again. A
provider error puts the match back on the queue with a jittered backoff (honouring retry-after) up
to `job_retries` times, then records it as failed with the reason; an unreadable verdict or a
permanent error fails it at once, never as a tie, and so does a judge whose circuit breaker
says it is down (`JudgeDown`: nothing sent). A run whose matches keep failing stops itself
(`Store.fail_match(stop_after=...)`).
"""
from __future__ import annotations

import asyncio
import logging
import random
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from leaderboard.consistency import match_seed
from leaderboard.keys import content_hash, keyed_order, orient
from leaderboard.pricing import delivery_discount, priced_calls
from leaderboard.shown import pair_keys
from leaderboard.types import MatchOutcome, Winner
from service.store import ACTIVE, KeptScore, MatchContext, NewJudgement, NotFound, Store

from . import logcontext
from .backoff import retry_delay
from .budget import (
    BUDGET,
    BudgetExceeded,
    Meter,
    charge_unrecorded,
    stop_for,
    stop_if_over_budget,
)
from .criteria import Judged, criteria_set
from .deps import Deps, Offload, Requeue, fail  # noqa: F401  (re-exported: the engine and batches import them here)
from .errors import JudgeDown, PermanentJudgeError, TransientJudgeError, VerdictParseError
from .gate import Budget, ClaimLost, Gate, GatedJudge, overload_of
from .leases import Leases
from .pairwise import calls_as_json
from .panel import resolve_panel
from .ratelimit import Limits

log = logging.getLogger(__name__)

TWIN_WAIT_S = 2.0


@dataclass(frozen=True)
class OffLoopScores:
    """The store's score book, each call on a thread (see `workers.criteria.base.ScoreBook`);
    `exclusive` through the process's claims (in Redis), or a lock of this process alone."""

    store: Store
    io: Offload
    leases: Leases | None = None
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def exclusive(self, key: str) -> AbstractAsyncContextManager[None]:
        if self.leases is not None:
            return self.leases.exclusive(key)
        return self.locks.setdefault(key, asyncio.Lock())

    async def find_score(self, submission_id: int, judge: str, criteria: str) -> KeptScore | None:
        return await self.io(self.store.find_score, submission_id, judge, criteria)

    async def keep_score(self, submission_id: int, judge: str, criteria: str, total: float, detail: dict) -> KeptScore:
        return await self.io(self.store.keep_score, submission_id, judge, criteria, total, detail)


@dataclass(frozen=True)
class Keyed:
    """A match's judgement key (the one it stores under and claims), the keys whose stored
    judgement answers it, best first (`leaderboard.keys.answering_keys`), its criteria set and
    that set's prompt version."""

    key: str
    answering: tuple[str, ...]
    criteria: str
    version: str


def key_of(ctx: MatchContext) -> Keyed:
    """How the match's judgement is keyed (see `Keyed`)."""
    spec = ctx.spec
    keys = pair_keys(spec.judge, spec.criteria, spec.order, ctx.a, ctx.b, ctx.reference)
    return Keyed(keys.key, keys.answering, spec.criteria, keys.version)


@dataclass(frozen=True)
class Opened:
    """A match that needs its judge: its context and how its judgement is keyed."""

    ctx: MatchContext
    keyed: Keyed

    @property
    def key(self) -> str:
        return self.keyed.key

    @property
    def criteria(self) -> str:
        return self.keyed.criteria

    @property
    def version(self) -> str:
        return self.keyed.version


async def open_match(deps: Deps, match_id: int) -> Opened | MatchOutcome:
    """Load a match and settle it without the judge where possible: gone, already finished,
    answered by a stored judgement (free), or stopped by its run's budget; else it is Opened."""
    logcontext.MATCH_ID.set(match_id)  # every line of this match's work says which (JSON logs)
    try:
        ctx = await deps.io(deps.store.match_context, match_id)
    except NotFound:
        return MatchOutcome.MISSING
    logcontext.TOURNAMENT_ID.set(ctx.tournament_id)
    if ctx.status not in ACTIVE:
        return MatchOutcome.SKIPPED
    if ctx.spec.judges is not None:  # a panel's match asks no judge: its members' verdicts make its own
        return await resolve_panel(deps, ctx)
    keyed = key_of(ctx)
    if await resolve_from_store(deps, ctx, keyed.answering):
        return MatchOutcome.CACHED
    if await stop_if_over_budget(deps.store, deps.io, deps.spend, deps.settings.price_table(), ctx):
        return MatchOutcome.STOPPED
    return Opened(ctx, keyed)


async def judge_one(deps: Deps, match_id: int) -> MatchOutcome:
    """Judge one match (or reuse its judgement) and record the result; what happened."""
    opened = await open_match(deps, match_id)
    if isinstance(opened, MatchOutcome):
        return opened
    ctx, key, criteria, version = opened.ctx, opened.key, opened.criteria, opened.version
    if deps.leases is not None and not await deps.leases.claim(key):
        return await wait_for_twin(deps, ctx)
    try:
        if await resolve_from_store(deps, ctx, opened.keyed.answering):  # a twin stored it since our look
            return MatchOutcome.CACHED
        return await _judge_and_record(deps, ctx, key, criteria, version)
    finally:
        if deps.leases is not None:
            await deps.leases.release(key)


async def resolve_from_store(deps: Deps, ctx: MatchContext, keys: tuple[str, ...]) -> bool:
    """Resolve the match from a judgement already stored under one of its answering keys (the
    best first), if there is one."""
    cached = await deps.io(deps.store.find_judgement, *keys)
    if cached is None:
        return False
    winner = orient(Winner(cached.outcome), cached.a_hash, ctx.a.output)
    await deps.io(deps.store.resolve_match, ctx.match_id, cached.id, winner, cached.consistent)
    return True


def gate_for(deps: Deps, ctx: MatchContext, key: str, meter: Meter) -> Gate:
    """The gate every call of this match passes (see `workers.gate`)."""
    spec, settings = ctx.spec, deps.settings
    judge = spec.judge
    limits = settings.limits(judge, rpm=spec.rpm, tpm=spec.tpm)
    budget = None
    if spec.budget is not None:
        budget = Budget(ctx.tournament_id, spec.budget, settings.price_table(), delivery_discount(spec.batch))
    leases = deps.leases
    return Gate(
        spec=judge,
        meter=meter,
        max_tokens=settings.judge_max_tokens,
        slot=deps.slot(judge, limits.concurrency),
        limiter=deps.limiter,
        limits=Limits(rpm=limits.rpm, tpm=limits.tpm),
        spend=deps.spend,
        budget=budget,
        still_ours=(lambda: leases.confirm(key)) if leases is not None else None,
        rng=deps.rng,
        stats=deps.stats,
        breaker=deps.breaker,
        overload=overload_of(settings),
        retry_base_s=settings.call_backoff_s,
    )


async def _judge_and_record(deps: Deps, ctx: MatchContext, key: str, criteria: str, version: str) -> MatchOutcome:
    """Ask the judge (the content is ours to judge now) and store the judgement and the result."""
    store, io, settings = deps.store, deps.io, deps.settings
    match_id, spec = ctx.match_id, ctx.spec
    if not await io(store.start_match, match_id):
        return MatchOutcome.SKIPPED
    meter = Meter()
    table = settings.price_table()
    try:
        try:
            # Built off the loop: the first use imports the SDK, which would stall the heartbeat.
            judge = GatedJudge(await io(deps.judges.get, spec.judge), gate_for(deps, ctx, key, meter))
            judged = await criteria_set(criteria)(
                judge, ctx, spec.order, random.Random(match_seed(key)),
                scores=OffLoopScores(store, io, deps.leases),
            )
        except BaseException:  # paid for, and no judgement will say so
            await charge_unrecorded(store, io, table, ctx, meter, charges=deps.charges)
            raise
    except TransientJudgeError as exc:
        return await retry_later(deps, ctx, exc)
    except ClaimLost as exc:
        log.warning("match %d: %s", match_id, exc)
        await io(store.fail_match, match_id, f"ClaimLost: {exc}", final=False)
        return await wait_for_twin(deps, ctx)
    except BudgetExceeded:
        await stop_for(store, io, ctx, BUDGET)
        return MatchOutcome.STOPPED
    except (PermanentJudgeError, JudgeDown, VerdictParseError, ValueError) as exc:  # JudgeDown: nothing sent
        await fail(deps, ctx, f"{type(exc).__name__}: {exc}")
        return MatchOutcome.FAILED
    await record(deps, ctx, key, criteria, version, judged, meter)
    return MatchOutcome.JUDGED


async def record(deps: Deps, ctx: MatchContext, key: str, criteria: str, version: str, judged: Judged, meter: Meter,
                 *, discount: float = 1.0) -> None:
    """Store the judgement once under its key, priced (times `discount` for batch delivery),
    and resolve the match with it; a twin's judgement stored first wins, and what this attempt
    paid is then charged to the match, as it is when the judgement cannot be stored (the worker
    stops while the database is down: a database outage alone is waited out, see `Deps.io`)."""
    store, io, spec = deps.store, deps.io, ctx.spec
    table = deps.settings.price_table()
    priced, cost = priced_calls(calls_as_json(judged.calls), spec.judge, table, discount)
    saving = io(store.save_judgement, NewJudgement(
        key=key,
        judge=spec.judge,
        criteria=criteria,
        template_version=version,
        a_id=ctx.a.id,
        b_id=ctx.b.id,
        a_hash=content_hash(ctx.a.output),
        outcome=judged.outcome.winner,
        consistent=judged.outcome.consistent,
        calls=priced,
        input_tokens=sum(c.input_tokens for c in judged.calls),
        output_tokens=sum(c.output_tokens for c in judged.calls),
        cost_usd=cost,
        match_id=ctx.match_id,
        order=keyed_order(criteria, spec.order),
    ))
    try:
        judgement_id, created = await saving
    except BaseException:
        await charge_unrecorded(store, io, table, ctx, meter, discount, charges=deps.charges)
        raise
    if not created:  # a twin (its claim had lapsed) stored the pair first: ours is not kept
        await charge_unrecorded(store, io, table, ctx, meter, discount, charges=deps.charges)
    await io(store.resolve_match, ctx.match_id, judgement_id, judged.outcome.winner, judged.outcome.consistent,
             made=created)


async def wait_for_twin(deps: Deps, ctx: MatchContext) -> MatchOutcome:
    """Another worker is judging the same content: look again shortly, when its judgement is
    stored and this match resolves from it for free (no attempt is spent)."""
    if deps.requeue is None:  # no queue to come back through: judge it here after all
        raise RuntimeError("a twin holds the claim and there is no queue to wait on")
    await deps.requeue(ctx.match_id, TWIN_WAIT_S, "after its twin")
    return MatchOutcome.WAITING


async def retry_later(deps: Deps, ctx: MatchContext, exc: TransientJudgeError) -> MatchOutcome:
    """Put a match back on the queue after a provider error, or fail it when out of attempts."""
    settings = deps.settings
    attempt = ctx.attempts + 1  # start_match counted this one
    error = f"{type(exc).__name__}: {exc}"
    if attempt > settings.job_retries or deps.requeue is None:
        await fail(deps, ctx, f"gave up after {attempt} attempts: {error}")
        return MatchOutcome.FAILED
    delay = retry_delay(attempt, settings.retry_backoff_s, exc.retry_after, deps.rng)
    await deps.io(deps.store.fail_match, ctx.match_id, error, final=False)
    await deps.requeue(ctx.match_id, delay, f"retry {attempt}")
    log.info("match %d: %s; retrying in %.1fs", ctx.match_id, error, delay)
    return MatchOutcome.RETRYING
