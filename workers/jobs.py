"""RQ job entry points. Jobs carry match ids only; the database holds the rest.

A job may run twice (a killed worker's match is handed out again) or alongside a twin: the
judgement is stored once under its content key, and a match is resolved once, so nothing is
lost or duplicated. A provider error re-schedules the match with backoff (honouring
retry-after) up to `job_retries` times, then records it as failed with the reason; an
unparseable verdict or a permanent error fails the match at once, never as a tie.
"""
from __future__ import annotations

import logging
import random
from datetime import timedelta

from rq import Queue

from leaderboard.consistency import match_seed
from leaderboard.keys import content_hash, judgement_key, orient
from leaderboard.types import OrderPolicy, Winner
from service.store import MatchContext, NewJudgement, NotFound

from . import runtime
from .errors import PermanentJudgeError, TransientJudgeError, VerdictParseError
from .pairwise import calls_as_json, judge_pair
from .prompts import TEMPLATE_VERSION

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 600.0


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
    key = judgement_key(spec["judge"], TEMPLATE_VERSION, criteria, ctx.a.question, ctx.a.output, ctx.b.output)
    cached = rt.store.find_judgement(key)
    if cached is not None:
        winner = orient(Winner(cached["outcome"]), cached["a_hash"], ctx.a.output)
        rt.store.resolve_match(match_id, cached["id"], winner, cached["consistent"])
        return "cached"
    if not rt.store.start_match(match_id):
        return "skipped"
    try:
        judge = rt.judge(spec["judge"])
        calls, outcome = rt.run(
            judge_pair(judge, ctx.a, ctx.b, OrderPolicy(spec.get("order", "both")), random.Random(match_seed(key)))
        )
    except TransientJudgeError as exc:
        return _retry_later(ctx, exc)
    except (PermanentJudgeError, VerdictParseError, ValueError) as exc:
        rt.store.fail_match(match_id, f"{type(exc).__name__}: {exc}", final=True)
        return "failed"
    judgement_id, _created = rt.store.save_judgement(
        NewJudgement(
            key=key,
            judge=spec["judge"],
            criteria=criteria,
            template_version=TEMPLATE_VERSION,
            a_id=ctx.a.id,
            b_id=ctx.b.id,
            a_hash=content_hash(ctx.a.output),
            outcome=outcome.winner,
            consistent=outcome.consistent,
            calls=calls_as_json(calls),
            input_tokens=sum(c.input_tokens for c in calls),
            output_tokens=sum(c.output_tokens for c in calls),
        )
    )
    rt.store.resolve_match(match_id, judgement_id, outcome.winner, outcome.consistent)
    return "judged"


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
