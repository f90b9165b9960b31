"""Starting a tournament run: plan its pairs, store its matches, hand them to the queue.

The API and the scheduler both start runs through `launch`, so a nightly re-run is planned
exactly like the first run, against the submissions present at that moment. `dry_run` plans
the same way and says what judging would take, creating nothing.
"""
from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass

from redis.exceptions import RedisError

from leaderboard import pairing
from leaderboard.keys import judgement_key
from leaderboard.pricing import Price, cost_usd, estimate_call, price_of
from leaderboard.templates import (
    ESTIMATED_OUTPUT_TOKENS,
    PROMPT_OVERHEAD_TOKENS,
    template_version,
)
from leaderboard.types import Mode, Pair, Submission

from . import rounds
from .queue import JobQueue
from .store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Launched:
    """A run that was created; `queued` is False when Redis was unreachable (the scheduler's
    sweep hands its matches out later, nothing is lost)."""

    id: int
    matches_total: int
    queued: bool


@dataclass(frozen=True)
class DryRun:
    """What starting a run now would take. `cached` counts the matches a judgement answers
    without a call (one stored already, or made by an earlier match of the same run);
    `estimated_cost_usd` is None when calls are needed and the judge has no price (`priced`
    False) or the criteria set has no prompt size in `leaderboard.templates`; 0.0 when no call
    is needed; rounded to micro-dollars."""

    matches: int
    calls: int
    cached: int
    estimated_cost_usd: float | None
    judge: str
    priced: bool


def plan(store: Store, spec: dict) -> list[Pair]:
    """The pairs a tournament spec asks for, over the submissions stored now (for an adaptive
    spec, its first round)."""
    if spec.get("mode") == "adaptive":
        return rounds.first_round(store, spec).pairs
    if spec.get("mode") == "anchored":
        return rounds.anchored_pairs(store, spec)
    return _pairs(_candidates(store, spec), spec)


def dry_run(store: Store, spec: dict, prices: Mapping[str, Price]) -> DryRun:
    """Plan the run and count its calls and cost without creating anything.

    Each pair's judgement key is computed as a worker would and looked up in one read; every
    distinct key not stored costs 2 calls (order "both") or 1 ("single"), each estimated at
    chars/4 tokens of the question and both outputs plus the prompt's own, and
    `ESTIMATED_OUTPUT_TOKENS` out. The reminder re-ask and retries are not counted.
    """
    subs = _candidates(store, spec)
    pairs = plan(store, spec)
    by_id = {sub.id: sub for sub in subs}
    criteria = spec.get("criteria", "overall")
    version = template_version(criteria)
    first_of_key: dict[str, Pair] = {}
    for pair in pairs:
        a, b = by_id[pair.a], by_id[pair.b]
        first_of_key.setdefault(judgement_key(spec["judge"], version, criteria, a.question, a.output, b.output), pair)
    stored = store.existing_keys(list(first_of_key))
    todo = [pair for key, pair in first_of_key.items() if key not in stored]
    per_pair = 2 if spec.get("order", "both") == "both" else 1
    overhead = PROMPT_OVERHEAD_TOKENS.get(criteria)
    tokens_in = tokens_out = 0
    for pair in todo:
        a, b = by_id[pair.a], by_id[pair.b]
        one_in, one_out = estimate_call(a.question, a.output, b.output, overhead or 0, ESTIMATED_OUTPUT_TOKENS)
        tokens_in, tokens_out = tokens_in + per_pair * one_in, tokens_out + per_pair * one_out
    estimate = cost_usd(spec["judge"], tokens_in, tokens_out, prices) if overhead is not None else None
    return DryRun(
        matches=len(pairs),
        calls=per_pair * len(todo),
        cached=len(pairs) - len(todo),
        estimated_cost_usd=(None if estimate is None else round(estimate, 6)) if todo else 0.0,
        judge=spec["judge"],
        priced=price_of(spec["judge"], prices) is not None,
    )


def _candidates(store: Store, spec: dict) -> list[Submission]:
    """The submissions a spec's filters select, as stored now."""
    return store.select_submissions(
        models=spec.get("models"), scenarios=spec.get("scenarios"), questions=spec.get("questions")
    )


def _pairs(subs: list[Submission], spec: dict) -> list[Pair]:
    """The pairs of the spec's mode over `subs`."""
    mode = Mode(spec.get("mode", Mode.ROUND_ROBIN.value))
    if mode is Mode.SAMPLED:
        return pairing.sampled(subs, int(spec["opponents"]), random.Random(int(spec["seed"])))
    return pairing.round_robin(subs)


def launch(
    store: Store,
    queue: JobQueue,
    name: str,
    spec: dict,
    *,
    schedule: str | None = None,
    next_run_at: float | None = None,
    parent_id: int | None = None,
) -> Launched:
    """Create a run and enqueue its matches (an adaptive run: its first round, or none and
    done at once with its `stopped_reason`)."""
    step = rounds.first_round(store, spec) if spec.get("mode") == "adaptive" else rounds.Step(plan(store, spec), None)
    pairs = step.pairs
    tid = store.create_tournament(
        name, spec, pairs, schedule=schedule, next_run_at=next_run_at, parent_id=parent_id,
        rounds=1 if spec.get("mode") == "adaptive" else 0, stopped_reason=step.reason,
    )
    return Launched(id=tid, matches_total=len(pairs), queued=hand_out(store, queue, store.pending_matches(tid)))


def hand_out(store: Store, queue: JobQueue, match_ids: list[int]) -> bool:
    """Enqueue matches and record their jobs; False (matches stay as they are) if Redis is down."""
    if not match_ids:
        return True
    try:
        jobs = queue.enqueue(match_ids)
    except RedisError as exc:
        log.warning("could not enqueue %d matches, the scheduler will retry: %s", len(match_ids), exc)
        return False
    store.mark_queued(jobs)
    return True
