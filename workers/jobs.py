"""RQ job entry points. Jobs carry match ids only; the database holds the rest.

A job may run twice (a killed worker's match is handed out again) or alongside a twin: the
judgement is stored once under its content key, and a match is resolved once, so nothing is
lost or duplicated. A provider error re-schedules the match with backoff (honouring
retry-after) up to `job_retries` times, then records it as failed with the reason; an
unparseable verdict or a permanent error fails the match at once, never as a tie.

Each call and each judgement record their cost from the price table (`Settings.price_table`;
None when the judge has no price), and a tournament whose budget is spent is stopped before the
next paid call (`workers.budget`); a match answered by a stored judgement costs nothing. An
attempt that pays for calls and stores no judgement (it failed, or will be retried) charges
their cost to its match, so the run's spend and budget still see it.
"""
from __future__ import annotations

import logging
import random
import uuid
from datetime import timedelta

from rq import Queue

from leaderboard.consistency import match_seed
from leaderboard.keys import content_hash, judgement_key, orient
from leaderboard.pricing import priced_calls
from leaderboard.templates import template_version
from leaderboard.types import OrderPolicy, Winner
from service.store import MatchContext, NewJudgement, NotFound

from . import runtime
from .budget import Meter, MeteredJudge, charge_unrecorded, stop_if_over_budget
from .criteria import criteria_set
from .errors import PermanentJudgeError, TransientJudgeError, VerdictParseError
from .pairwise import calls_as_json

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 600.0
TWIN_WAIT_S = 2.0
CLAIM_PREFIX = "joust:judging:"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def judge_match(match_id: int) -> str:
    """Judge one match (or reuse its judgement) and record the result; returns what happened."""
    rt = runtime.current()
    try:
        ctx = rt.store.match_context(match_id)
    except NotFound:
        return "missing"
    if ctx.status not in ("pending", "queued", "running"):
        return "skipped"
    spec = ctx.spec
    criteria = spec.get("criteria", "overall")
    version = template_version(criteria)
    key = judgement_key(spec["judge"], version, criteria, ctx.a.question, ctx.a.output, ctx.b.output)
    if _resolve_from_store(rt, ctx, key):
        return "cached"
    if stop_if_over_budget(rt.store, rt.settings, ctx):
        return "stopped"
    claim = _claim(rt, key)
    if claim is None:
        return _wait_for_twin(ctx)
    try:
        if _resolve_from_store(rt, ctx, key):  # a twin stored it between our look and our claim
            return "cached"
        return _judge_and_record(rt, ctx, key, criteria, version)
    finally:
        _release(rt, key, claim)


def _resolve_from_store(rt: runtime.Runtime, ctx: MatchContext, key: str) -> bool:
    """Resolve the match from a judgement already stored under its key, if there is one."""
    cached = rt.store.find_judgement(key)
    if cached is None:
        return False
    winner = orient(Winner(cached["outcome"]), cached["a_hash"], ctx.a.output)
    rt.store.resolve_match(ctx.match_id, cached["id"], winner, cached["consistent"])
    return True


def _judge_and_record(rt: runtime.Runtime, ctx: MatchContext, key: str, criteria: str, version: str) -> str:
    """Ask the judge (the content is ours to judge now) and store the judgement and the result."""
    match_id, spec = ctx.match_id, ctx.spec
    if not rt.store.start_match(match_id):
        return "skipped"
    meter = Meter()
    try:
        try:
            judge = MeteredJudge(rt.judge(spec["judge"]), meter)
            judge_criteria = criteria_set(criteria)  # workers.criteria.CRITERIA: overall, dimensions, compqa, factsim
            calls, outcome, _extra = rt.run(
                judge_criteria(judge, ctx, OrderPolicy(spec.get("order", "both")), random.Random(match_seed(key)),
                               scores=rt.store)
            )
        except BaseException:
            charge_unrecorded(rt.store, rt.settings, ctx, meter)  # paid for, and no judgement will say so
            raise
    except TransientJudgeError as exc:
        return _retry_later(ctx, exc)
    except (PermanentJudgeError, VerdictParseError, ValueError) as exc:
        rt.store.fail_match(match_id, f"{type(exc).__name__}: {exc}", final=True)
        return "failed"
    priced, cost = priced_calls(calls_as_json(calls), spec["judge"], rt.settings.price_table())
    judgement_id, created = rt.store.save_judgement(
        NewJudgement(
            key=key,
            judge=spec["judge"],
            criteria=criteria,
            template_version=version,
            a_id=ctx.a.id,
            b_id=ctx.b.id,
            a_hash=content_hash(ctx.a.output),
            outcome=outcome.winner,
            consistent=outcome.consistent,
            calls=priced,
            input_tokens=sum(c.input_tokens for c in calls),
            output_tokens=sum(c.output_tokens for c in calls),
            cost_usd=cost,
            match_id=match_id,
        )
    )
    if not created:  # a twin (its claim had expired) stored the pair first: ours is not kept
        charge_unrecorded(rt.store, rt.settings, ctx, meter)
    rt.store.resolve_match(match_id, judgement_id, outcome.winner, outcome.consistent)
    return "judged"


def _claim(rt: runtime.Runtime, key: str) -> str | bool | None:
    """Take the right to judge this content: two workers holding twin matches (two tournaments
    over the same pairs) must not both pay for it. None when another worker holds it; True
    when there is no Redis to coordinate through (a single process)."""
    if rt.redis is None:
        return True
    token = uuid.uuid4().hex
    ttl = int(max(1, rt.settings.match_timeout_s))
    return token if rt.redis.set(f"{CLAIM_PREFIX}{key}", token, nx=True, ex=ttl) else None


def _release(rt: runtime.Runtime, key: str, claim: str | bool) -> None:
    """Give the claim back, unless it expired and someone else holds it now."""
    if rt.redis is not None and isinstance(claim, str):
        rt.redis.eval(_RELEASE, 1, f"{CLAIM_PREFIX}{key}", claim)


def _wait_for_twin(ctx: MatchContext) -> str:
    """Another worker is judging the same content: look again shortly, when its judgement is
    stored and this match resolves from it for free (no attempt is spent)."""
    rt = runtime.current()
    assert rt.redis is not None
    job = Queue(rt.settings.queue_name, connection=rt.redis).enqueue_in(
        timedelta(seconds=TWIN_WAIT_S),
        judge_match,
        ctx.match_id,
        job_timeout=int(max(1, rt.settings.match_timeout_s / 2)),
        description=f"judge match {ctx.match_id} (after its twin)",
    )
    rt.store.mark_queued({ctx.match_id: job.id})
    return "waiting"


def _retry_later(ctx: MatchContext, exc: TransientJudgeError) -> str:
    """Re-schedule a match after a provider error, or fail it when out of attempts."""
    rt = runtime.current()
    attempt = ctx.attempts + 1  # start_match counted this one
    error = f"{type(exc).__name__}: {exc}"
    if attempt > rt.settings.job_retries or rt.redis is None:
        rt.store.fail_match(ctx.match_id, f"gave up after {attempt} attempts: {error}", final=True)
        return "failed"
    delay = min(MAX_BACKOFF_S, max(exc.retry_after or 0.0, rt.settings.retry_backoff_s * 2 ** (attempt - 1)))
    rt.store.fail_match(ctx.match_id, error, final=False)
    queue = Queue(rt.settings.queue_name, connection=rt.redis)
    job = queue.enqueue_in(
        timedelta(seconds=delay),
        judge_match,
        ctx.match_id,
        job_timeout=int(max(1, rt.settings.match_timeout_s / 2)),
        description=f"judge match {ctx.match_id} (retry {attempt})",
    )
    rt.store.mark_queued({ctx.match_id: job.id})
    log.info("match %d: %s; retrying in %.1fs", ctx.match_id, error, delay)
    return "retrying"
