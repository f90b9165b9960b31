"""Rounds of adaptive (and the one round of anchored) tournaments, planned against the store.

An adaptive run is judged in rounds. Its first round is planned when it is created; each later
round is planned by the scheduler's tick once the previous one has no active match: fit the
judge's verdicts at the run's level (only between players of the run's field), and either stop
(`StopReason`: the target is met, the calls or the money are spent, or no uncached pair is
left) or plan the next `round_size` pairs with `leaderboard.adaptive.plan_round`. A pair the
judge has already judged (same criteria and prompt version) or this run has already planned is
never planned again. A scheduled re-run (`spec.rerun`, set by the scheduler) also skips pairs
of players whose intervals no longer overlap, so a night spends only on new submissions and
pairs still unsettled; a first run may still use them to narrow intervals (`target_ci_width`).
Two schedulers may tick at once: a round is claimed with a compare-and-set on the run's `rounds`
counter, so it is planned (or finished) once. `max_calls` counts every call the run used
(`Store.calls_made`): its judgements' calls, and those of attempts that stored none.
"""
from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.adaptive import StopReason, plan_round, stop_reason
from leaderboard.anchors import anchored_intervals, plan_anchored
from leaderboard.board import build_board
from leaderboard.keys import answering_orders
from leaderboard.players import battles_at_level, player_of
from leaderboard.ranks import rank_intervals
from leaderboard.ratings import bradley_terry_intervals
from leaderboard.spec import RunSpec
from leaderboard.templates import version_variants
from leaderboard.types import Battle, Level, Pair, Rating, Submission
from service.store import Store

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class Step:
    """What an adaptive run does next: judge `pairs`, or stop for `reason`."""

    pairs: list[Pair]
    reason: str | None


def field_of(store: Store, spec: RunSpec) -> list[Submission]:
    """The submissions a spec's filters select, as stored now (never a placeholder, nor the
    reference model's: its output is what the others are checked against)."""
    subs = store.select_submissions(models=spec.models, scenarios=spec.scenarios, questions=spec.questions)
    return [sub for sub in subs if not spec.is_reference(sub.model, sub.scenario)]


def field_battles(store: Store, spec: RunSpec, subs: list[Submission]) -> list[Battle]:
    """The judge's counted verdicts at the spec's level between two players of the field."""
    players = {player_of(s.model, s.scenario, spec.level) for s in subs}
    battles = battles_at_level(store.side_rows(judge=spec.judge), spec.level)
    return [b for b in battles if b.a in players and b.b in players]


def known_pairs(store: Store, spec: RunSpec, tournament_id: int | None) -> set[tuple[int, int]]:
    """Pairs never to pay for again: judged by this judge already (with a judgement that
    answers the spec's order policy), or planned by this run."""
    versions = version_variants(spec.criteria)  # with or without a reference, conversations
    known = store.judged_pairs(spec.judge, spec.criteria, versions, answering_orders(spec.order))
    return known | (store.tournament_pairs(tournament_id) if tournament_id is not None else set())


def settled_pairs(subs: list[Submission], battles: list[Battle], level: Level) -> set[tuple[int, int]]:
    """Submission pairs between two players whose 95% intervals no longer overlap.

    Their order is already certain, so a round (a nightly re-run above all) spends nothing on
    them; players without verdicts are never settled.
    """
    fitted = bradley_terry_intervals(battles) if battles else {}
    if len(fitted) < 2:
        return set()
    player = {s.id: player_of(s.model, s.scenario, level) for s in subs}
    by_question: dict[str, list[Submission]] = {}
    for s in subs:
        by_question.setdefault(s.question_id, []).append(s)
    settled: set[tuple[int, int]] = set()
    for group in by_question.values():
        for i, x in enumerate(group):
            for y in group[i + 1:]:
                px, py = player[x.id], player[y.id]
                if px != py and px in fitted and py in fitted:
                    (_, low_x, high_x), (_, low_y, high_y) = fitted[px], fitted[py]
                    if low_x > high_y or low_y > high_x:
                        settled.add((min(x.id, y.id), max(x.id, y.id)))
    return settled


def next_step(store: Store, spec: RunSpec, tournament_id: int | None, round_no: int) -> Step:
    """Stop or plan round `round_no` (1 at creation, `tournament_id` None then)."""
    subs = field_of(store, spec)
    battles = field_battles(store, spec, subs)
    level, budget = spec.level, spec.budget
    if tournament_id is not None and budget is not None and store.tournament_spend(tournament_id) >= budget:
        return Step([], StopReason.BUDGET.value)
    reached = stop_reason(battles, level, target_ci_width=spec.target_ci_width, submissions=subs)
    if reached is not None:
        return Step([], reached.value)
    size = spec.round_size
    per = spec.calls_per_judgement
    if spec.max_calls is not None:
        used = store.calls_made(tournament_id, per) if tournament_id is not None else 0
        size = min(size, (spec.max_calls - used) // per)
        if size <= 0:
            return Step([], StopReason.MAX_CALLS.value)
    rng = random.Random(f"{spec.seed or 0}/{round_no}")
    skip = known_pairs(store, spec, tournament_id)
    if spec.rerun:  # a scheduled re-run spends only on new submissions and unsettled pairs
        skip |= settled_pairs(subs, battles, level)
    pairs = plan_round(subs, battles, level, budget=size, judged=skip, rng=rng)
    return Step(pairs, None) if pairs else Step([], StopReason.EXHAUSTED.value)


def first_round(store: Store, spec: RunSpec) -> Step:
    """Round 1 of a new adaptive run."""
    return next_step(store, spec, None, 1)


def advance(store: Store, tournament_id: int, spec: RunSpec, rounds: int) -> list[int] | None:
    """After a round: finish the run or claim and store the next round.

    The new round's pending match ids (the caller hands them out), or None when the run was
    finished here or another planner got there first.
    """
    step = next_step(store, spec, tournament_id, rounds + 1)
    if step.reason is not None:
        if store.finish_rounds(tournament_id, rounds, step.reason):
            log.info("adaptive tournament %d stopped after %d rounds: %s", tournament_id, rounds, step.reason)
        return None
    if not store.add_round(tournament_id, rounds, step.pairs):
        return None
    log.info("adaptive tournament %d: round %d, %d pairs", tournament_id, rounds + 1, len(step.pairs))
    return store.pending_matches(tournament_id)


# ---------------------------------------------------------------- anchored


def anchor_ratings(store: Store, judge: str, level: Level, anchors: Sequence[str]) -> dict[str, float]:
    """The anchors' ratings on the judge's current board; ValueError naming any without battles."""
    fitted = bradley_terry_intervals(battles_at_level(store.side_rows(judge=judge), level))
    missing = [a for a in anchors if a not in fitted]
    if missing:
        raise ValueError(f"no battles for this judge at level {level.value}: {', '.join(missing)}")
    return {a: float(fitted[a][0]) for a in anchors}


def anchored_pairs(store: Store, spec: RunSpec) -> list[Pair]:
    """Every entrant meets at least three anchors; pairs already judged are not planned."""
    rng = random.Random(f"{spec.seed or 0}/anchored")
    return plan_anchored(
        field_of(store, spec), list(spec.anchors or ()), spec.level, judged=known_pairs(store, spec, None), rng=rng
    )


def anchored_board(store: Store, spec: RunSpec, *, k: float = 32.0) -> list[Rating]:
    """An anchored tournament's board, best first: the judge's verdicts between players of its
    field, rated with the anchors held at the ratings stored in its spec (counts and online Elo
    as on any board; ranks from the anchored intervals)."""
    battles = field_battles(store, spec, field_of(store, spec))
    fixed = dict(spec.anchor_ratings or {})
    fitted = anchored_intervals(battles, fixed)
    rows = build_board(battles, k=k)
    rated = [dataclasses.replace(r, rating=fitted[r.player][0], ci_low=fitted[r.player][1], ci_high=fitted[r.player][2])
             for r in rows if r.player in fitted]
    rated.sort(key=lambda r: (-r.rating, r.player))
    ranks = rank_intervals({r.player: (r.ci_low, r.ci_high) for r in rated})
    return [dataclasses.replace(r, rank=position, rank_low=ranks[r.player][0], rank_high=ranks[r.player][1])
            for position, r in enumerate(rated, start=1)]
