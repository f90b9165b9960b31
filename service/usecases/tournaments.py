"""Starting a tournament run: plan its pairs, store its matches, hand them to the queue.

The API and the scheduler both start runs through `launch` (with a spec built and checked by
`service.usecases.tournament_requests`, or stored), so a nightly re-run is planned exactly like
the first run, against the submissions present at that moment; `retry` hands a finished run's
failed matches out again. `dry_run` plans the same way and says what judging would take,
creating nothing. Neither pairs a placeholder (an imported battle's submission, which has no
output to show a judge); a dry run says how many it left out.

A judge panel's run (`spec.judges`, `leaderboard.panel`) is launched as one run per member (an
ordinary run of that judge, listed as a run of the panel's: `parent_id`), each judging every
pair under its own judgement key, and the panel's own run whose matches, one per pair with
aggregation `majority`, make the panel's verdicts of the members' (`workers.panel`; no call).
With `separate` the panel's run makes no verdict of its own: its matches, and those of one more
run per further member (`spec.layer` k: a run holds a pair once), are each resolved with a free
copy of the first (k-th) member's verdict filed under the panel, so the panel's board pools the
members' verdicts, each one battle.
"""
from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass

from redis.exceptions import RedisError

from leaderboard import callplan, pairing
from leaderboard.factsim import summary_sources
from leaderboard.panel import Aggregation
from leaderboard.pricing import Price, cost_usd, delivery_discount, price_of
from leaderboard.rubric import RULES_VERSION
from leaderboard.shown import pair_keys
from leaderboard.spec import RunSpec
from leaderboard.templates import compqa_score_version
from leaderboard.types import Delivery, Mode, Pair, Submission
from service.store import RetryRefused, Store
from service.store.queue import JobQueue
from service.usecases import rounds
from service.usecases.errors import UseCaseError

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
    """What starting a run now would take. `calls` counts the judge calls the run's criteria
    set would make (`leaderboard.callplan`: pairwise for overall and dimensions, one per
    submission to score for compqa, one per text to extract for factsim); `cached` counts the
    matches a judgement answers without a call (one stored already, or made by an earlier match
    of the same run); `estimated_cost_usd` is None when calls are needed and the judge has no
    price (`priced` False); 0.0 when no call is needed; rounded to micro-dollars; at the price
    the run would pay, so half the list price for `delivery` batch (`leaderboard.pricing`).
    `placeholders_skipped`: submissions the filters admit that no live run pairs (imported
    battles' placeholders)."""

    matches: int
    calls: int
    cached: int
    estimated_cost_usd: float | None
    judge: str
    priced: bool
    placeholders_skipped: int
    delivery: str


def plan(store: Store, spec: RunSpec) -> list[Pair]:
    """The pairs a tournament spec asks for, over the submissions stored now (for an adaptive
    spec, its first round)."""
    if spec.adaptive:
        return rounds.first_round(store, spec).pairs
    if spec.anchored:
        return rounds.anchored_pairs(store, spec)
    return _pairs(rounds.field_of(store, spec), spec)


def dry_run(store: Store, spec: RunSpec, prices: Mapping[str, Price]) -> DryRun:
    """Plan the run and count its calls and cost without creating anything.

    Each pair's judgement key is computed as a worker would and looked up in one read, with the
    other keys whose judgement would answer it (a `both` judgement answers a `single` run); the
    pairs of the distinct keys not answered are counted, in plan order, as the spec's criteria set
    spends (`leaderboard.callplan`): what a stored score or stored facts already answer (compqa,
    factsim) costs nothing, and work shared between pairs (a submission's score, a source's
    facts) is counted once. Each call is estimated at chars/4 tokens of the texts it shows plus
    the prompt's own, and its reply as `callplan` says, at the judge's price for the run's
    delivery (a batch run pays half). The reminder re-ask, retries and failing matches are not
    counted.
    """
    if spec.judges is not None:
        return _panel_dry_run(store, spec, prices)
    subs = rounds.field_of(store, spec)
    pairs = plan(store, spec)
    by_id = {sub.id: sub for sub in subs}
    judge, criteria, order = spec.judge, spec.criteria, spec.order
    references = store.references([sub.question_id for sub in subs], spec.reference_model, spec.reference_scenario)
    first_of_key: dict[str, tuple[Pair, tuple[str, ...]]] = {}
    for pair in pairs:
        a, b = by_id[pair.a], by_id[pair.b]
        keys = pair_keys(judge, criteria, order, a, b, references.get(a.question_id))
        first_of_key.setdefault(keys.key, (pair, keys.answering))
    stored = store.existing_keys([key for _, keys in first_of_key.values() for key in keys])
    todo = [(by_id[pair.a], by_id[pair.b]) for pair, keys in first_of_key.values() if stored.isdisjoint(keys)]
    calls = callplan.count_calls(criteria, todo, order, _stored(store, spec, todo))
    estimate = cost_usd(judge, calls.input_tokens, calls.output_tokens, prices)
    if estimate is not None:
        estimate *= delivery_discount(spec.batch)
    return DryRun(
        matches=len(pairs),
        calls=calls.calls,
        cached=len(pairs) - len(todo),
        estimated_cost_usd=(None if estimate is None else round(estimate, 6)) if calls.calls else 0.0,
        judge=judge,
        priced=price_of(judge, prices) is not None,
        placeholders_skipped=store.count_placeholders(models=spec.models, scenarios=spec.scenarios,
                                                      questions=spec.questions),
        delivery=spec.delivery.value,
    )


def _panel_dry_run(store: Store, spec: RunSpec, prices: Mapping[str, Price]) -> DryRun:
    """A panel's dry run: its members' added up (the panel's own verdicts cost nothing);
    `matches` and `cached` count member matches."""
    members = [dry_run(store, spec.for_member(m), prices) for m in spec.judges or ()]
    costs = [m.estimated_cost_usd for m in members]
    return DryRun(
        matches=sum(m.matches for m in members),
        calls=sum(m.calls for m in members),
        cached=sum(m.cached for m in members),
        estimated_cost_usd=None if None in costs else round(sum(c or 0.0 for c in costs), 6),
        judge=spec.judge,
        priced=all(m.priced for m in members),
        placeholders_skipped=members[0].placeholders_skipped if members else 0,
        delivery=spec.delivery.value,
    )


def _stored(store: Store, spec: RunSpec, todo: list[tuple[Submission, Submission]]) -> callplan.Stored:
    """What the store already holds that spares the run's criteria set a call: the sides'
    single scores under this judge (compqa, factsim) and, for factsim, the texts each side
    summarises."""
    criteria = spec.criteria
    if criteria not in ("compqa", "factsim"):
        return callplan.Stored()
    ids = sorted({sub.id for pair in todo for sub in pair})
    scores = {sid: callplan.stored_score(found.detail)
              for sid, found in store.find_scores(ids, spec.judge, criteria).items()}
    if criteria == "compqa":
        # An offline judge scores with its own rubric rules, and its scores carry their version.
        rules = RULES_VERSION if spec.judge.startswith("offline/") else None
        return callplan.Stored(scores=scores, compqa_version=compqa_score_version(rules))
    metadata = store.submission_metadata(ids)
    by_id = {sub.id: sub for pair in todo for sub in pair}
    return callplan.Stored(scores=scores, sources={sid: _sources(by_id[sid], metadata.get(sid, {})) for sid in ids})


def _sources(sub: Submission, metadata: dict) -> tuple[str, ...] | None:
    """The texts a factsim worker extracts for `sub`; None when its metadata cannot say (its
    matches fail without a call)."""
    try:
        return summary_sources(sub.question, metadata)
    except ValueError:
        return None


def _pairs(subs: list[Submission], spec: RunSpec) -> list[Pair]:
    """The pairs of the spec's mode over `subs`."""
    if spec.mode is Mode.SAMPLED:
        if spec.opponents is None:
            raise ValueError("a sampled tournament needs its number of opponents")
        return pairing.sampled(subs, spec.opponents, random.Random(spec.seed or 0))
    if spec.against_baseline:
        if spec.baseline is None:
            raise ValueError("a baseline tournament needs its baseline player")
        return pairing.against_baseline(subs, spec.baseline, spec.level)
    if spec.mode is not Mode.ROUND_ROBIN:
        raise ValueError(f"no pairing plan for mode {spec.mode.value!r} here")
    return pairing.round_robin(subs)


def launch(
    store: Store,
    queue: JobQueue,
    name: str,
    spec: RunSpec,
    *,
    schedule: str | None = None,
    next_run_at: float | None = None,
    parent_id: int | None = None,
) -> Launched:
    """Create a run and enqueue its matches (an adaptive run: its first round, or none and
    done at once with its `stopped_reason`); a batch run's matches wait for the batch driver."""
    if spec.judges is not None:
        return _launch_panel(store, queue, name, spec, schedule=schedule, next_run_at=next_run_at,
                             parent_id=parent_id)
    step = rounds.first_round(store, spec) if spec.adaptive else rounds.Step(plan(store, spec), None)
    pairs = step.pairs
    tid = store.create_tournament(
        name, spec, pairs, schedule=schedule, next_run_at=next_run_at, parent_id=parent_id,
        rounds=1 if spec.adaptive else 0, stopped_reason=step.reason,
    )
    if spec.batch:  # its matches are never enqueued as jobs: they stay pending for the batch driver
        return Launched(id=tid, matches_total=len(pairs), queued=wake_driver(queue))
    return Launched(id=tid, matches_total=len(pairs), queued=hand_out(store, queue, store.pending_matches(tid)))


def _launch_panel(store: Store, queue: JobQueue, name: str, spec: RunSpec, *, schedule: str | None,
                  next_run_at: float | None, parent_id: int | None) -> Launched:
    """A panel's run and one run per member (module docstring): members' matches are handed
    out first, so the panel's usually find their verdicts made."""
    jury = spec.jury
    assert jury is not None
    pairs = plan(store, spec)
    members = [(f"{name} [{member}]", spec.for_member(member)) for member in jury.members]
    if jury.aggregation is Aggregation.SEPARATE:  # a run holds a pair once: one copy run per further member
        members += [(f"{name} [copies of {member}]", spec.with_(layer=k))
                    for k, member in enumerate(jury.members) if k > 0]
    # One transaction: a crash never leaves a panel with some of its members.
    tid = store.create_tournament(name, spec, pairs, schedule=schedule, next_run_at=next_run_at, parent_id=parent_id,
                                  runs=members)
    runs = store.get_tournament(tid).runs  # the members' runs, in the order made
    queued = True
    for run in [*runs, tid]:
        queued = hand_out(store, queue, store.pending_matches(run)) and queued
    return Launched(id=tid, matches_total=len(pairs), queued=queued)


def retry(store: Store, queue: JobQueue, tournament_id: int) -> int:
    """Hand a finished run's failed matches out again (and those its "failing" stop cancelled):
    how many. A `UseCaseError` (conflict) while it runs or when nothing failed, since only then
    is there something to retry; the store's NotFound for an unknown id."""
    try:
        ids = store.retry_failed(tournament_id)
    except RetryRefused as exc:
        raise UseCaseError("conflict", str(exc)) from exc
    if store.get_tournament(tournament_id).delivery == Delivery.LIVE.value:
        hand_out(store, queue, ids)  # a batch run's driver takes pending matches itself
    return len(ids)


def wake_driver(queue: JobQueue) -> bool:
    """Have the next scheduler tick enqueue the batch driver; False if Redis is down (the
    driver still comes, at its poll interval)."""
    try:
        queue.wake_driver()
    except RedisError as exc:
        log.warning("could not wake the batch driver: %s", exc)
        return False
    return True


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
