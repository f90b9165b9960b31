"""Anchored mode: every entrant meets three anchors, and the fit holds the anchors' ratings."""
from __future__ import annotations

import math
import random
from collections import defaultdict

import pytest

from leaderboard.anchors import anchored_intervals, anchored_ratings, plan_anchored
from leaderboard.fit import ConvergenceError
from leaderboard.pairing import round_robin
from leaderboard.ratings import bradley_terry
from leaderboard.types import Battle, Pair, Submission, Winner

ANCHORS = ["anchor-1", "anchor-2", "anchor-3", "anchor-4", "anchor-5"]
ENTRANTS = ["new-a", "new-b", "new-c"]


def field(players: list[str], questions: int) -> list[Submission]:
    return [
        Submission(id=q * len(players) + x + 1, question_id=f"q{q}", question=f"question {q}",
                   model=p, scenario="default", output=f"{p}/{q}")
        for q in range(questions) for x, p in enumerate(players)
    ]


def met(plan: list[Pair], subs: list[Submission], judged: set[tuple[int, int]] = frozenset()) -> dict[str, list[str]]:
    """entrant → the anchors it meets in the plan and in `judged` (with repeats)."""
    model = {s.id: s.model for s in subs}
    out: dict[str, list[str]] = defaultdict(list)
    for a, b in [(p.a, p.b) for p in plan] + sorted(judged):
        x, y = model[a], model[b]
        entrant, anchor = (x, y) if y in ANCHORS else (y, x)
        out[entrant].append(anchor)
    return out


# ---------------------------------------------------------------- planning


def test_every_entrant_meets_three_distinct_anchors_on_shared_questions() -> None:
    subs = field(ANCHORS + ENTRANTS, 6)
    question = {s.id: s.question_id for s in subs}
    model = {s.id: s.model for s in subs}
    plan = plan_anchored(subs, ANCHORS, "model", judged=set(), rng=random.Random(0))
    assert len(plan) == 3 * len(ENTRANTS) and len(set(plan)) == len(plan)
    assert all(p.a < p.b and question[p.a] == question[p.b] for p in plan)
    assert all((model[p.a] in ANCHORS) != (model[p.b] in ANCHORS) for p in plan)  # entrant vs anchor only
    meetings = met(plan, subs)
    assert sorted(meetings) == ENTRANTS
    assert all(len(set(anchors)) == 3 == len(anchors) for anchors in meetings.values())


def test_the_load_spreads_over_anchors_and_questions() -> None:
    subs = field(ANCHORS + ENTRANTS, 6)
    question = {s.id: s.question_id for s in subs}
    plan = plan_anchored(subs, ANCHORS, "model", per_anchor=2, judged=set(), rng=random.Random(1))
    meetings = met(plan, subs)
    used = [a for anchors in meetings.values() for a in set(anchors)]
    assert max(used.count(a) for a in ANCHORS) - min(used.count(a) for a in ANCHORS) <= 1
    for entrant, anchors in meetings.items():
        assert len(anchors) == 6  # 3 anchors x 2 verdicts
        own = [question[p.a] for p in plan if entrant in {s.model for s in subs if s.id in (p.a, p.b)}]
        assert len(set(own)) == 6, f"{entrant} repeats a question while others are free"


def test_judged_meetings_count_and_are_never_planned_again() -> None:
    subs = field(ANCHORS + ["new-a"], 4)
    model = {s.id: s.model for s in subs}
    cached = {(p.a, p.b) for p in round_robin(subs)
              if {model[p.a], model[p.b]} in ({"new-a", "anchor-1"}, {"new-a", "anchor-2"})}
    plan = plan_anchored(subs, ANCHORS, "model", judged=cached, rng=random.Random(2))
    assert len(plan) == 1
    assert met(plan, subs)["new-a"][0] not in {"anchor-1", "anchor-2"}
    assert not {(p.a, p.b) for p in plan} & cached


def test_an_entrant_meets_every_anchor_it_can_when_fewer_than_three_share_its_questions() -> None:
    subs = [s for s in field(ANCHORS + ["new-a"], 3) if s.model in ("new-a", "anchor-1", "anchor-2") or s.question_id != "q0"]
    subs = [s for s in subs if not (s.model == "new-a" and s.question_id != "q0")]
    plan = plan_anchored(subs, ANCHORS, "model", judged=set(), rng=random.Random(0))
    assert sorted(met(plan, subs)["new-a"]) == ["anchor-1", "anchor-2"]


def test_same_seed_same_plan_and_bad_arguments() -> None:
    subs = field(ANCHORS + ENTRANTS, 5)
    one = plan_anchored(subs, ANCHORS, "model", judged=set(), rng=random.Random(9))
    assert plan_anchored(list(reversed(subs)), ANCHORS, "model", judged=set(), rng=random.Random(9)) == one
    assert plan_anchored(subs, ANCHORS + ENTRANTS, "model", judged=set(), rng=random.Random(9)) == []
    with pytest.raises(ValueError):
        plan_anchored(subs, ANCHORS, "model", per_anchor=0, judged=set(), rng=random.Random(9))


# ---------------------------------------------------------------- rating


def test_golden_one_entrant_against_one_anchor() -> None:
    """3 wins in 4 against an anchor held at 1000: odds 3, so 1000 + 400·log10(3); a tie is half."""
    wins = [Battle("new-a", "anchor-1", Winner.A)] * 3 + [Battle("new-a", "anchor-1", Winner.B)]
    expected = 1000.0 + 400.0 * math.log10(3.0)
    assert anchored_ratings(wins, {"anchor-1": 1000.0}, ridge=0) == pytest.approx(
        {"anchor-1": 1000.0, "new-a": expected}, abs=1e-6)
    half = [Battle("new-a", "anchor-1", Winner.A), Battle("new-a", "anchor-1", Winner.TIE)]
    assert anchored_ratings(half, {"anchor-1": 1000.0}, ridge=0)["new-a"] == pytest.approx(expected, abs=1e-6)


def simulate(truth: dict[str, float], count: int, seed: int, anchors: list[str]) -> list[Battle]:
    """Entrant-vs-anchor and entrant-vs-entrant battles, Bradley-Terry on the truth, with ties
    (up to 20%, most between close players) that keep a's expected score at p, as the half-point
    tie rule assumes; ties at a flat rate regardless of p would pull every rating inward."""
    rng = random.Random(seed)
    entrants = [p for p in truth if p not in anchors]
    out = []
    for _ in range(count):
        a = rng.choice(entrants)
        b = rng.choice([p for p in truth if p != a])
        p = 1.0 / (1.0 + 10 ** ((truth[b] - truth[a]) / 400))
        tie = 0.4 * min(p, 1.0 - p)
        draw = rng.random()
        winner = Winner.TIE if draw < tie else (Winner.A if draw < tie + p - tie / 2 else Winner.B)
        out.append(Battle(a, b, winner))
    return out


TRUTH = {"anchor-1": 900.0, "anchor-2": 1000.0, "anchor-3": 1100.0, "anchor-4": 1250.0, "anchor-5": 1400.0,
         "new-a": 1500.0, "new-b": 1320.0, "new-c": 1180.0}


def test_entrants_land_at_their_strengths_relative_to_fixed_anchors() -> None:
    anchors = {p: TRUTH[p] for p in ANCHORS}
    fitted = anchored_ratings(simulate(TRUTH, 6000, 3, ANCHORS), anchors)
    assert {p: fitted[p] for p in ANCHORS} == anchors  # exactly, not approximately
    for entrant in ENTRANTS:
        assert fitted[entrant] == pytest.approx(TRUTH[entrant], abs=30.0)
    # A free board re-centres on the field's mean, so the same data reads ~180 points lower
    # and the anchors drift: what anchoring prevents.
    free = bradley_terry(simulate(TRUTH, 6000, 3, ANCHORS))
    assert free["anchor-5"] < TRUTH["anchor-5"] - 100


def test_anchors_at_the_free_fit_reproduce_the_free_fit() -> None:
    """With ridge 0 the free optimum is stationary in every player, so holding some players at
    their free ratings leaves the others where the free fit put them."""
    battles = simulate(TRUTH, 3000, 4, ANCHORS)
    free = bradley_terry(battles, ridge=0)
    anchored = anchored_ratings(battles, {p: free[p] for p in ANCHORS[:2]}, ridge=0)
    assert anchored == pytest.approx(free, abs=1e-6)


def test_intervals_are_zero_for_anchors_and_cover_entrants() -> None:
    anchors = {p: TRUTH[p] for p in ANCHORS}
    intervals = anchored_intervals(simulate(TRUTH, 3000, 5, ANCHORS), anchors)
    ratings = anchored_ratings(simulate(TRUTH, 3000, 5, ANCHORS), anchors)
    for player, (rating, low, high) in intervals.items():
        assert rating == pytest.approx(ratings[player])
        if player in ANCHORS:
            assert low == rating == high
        else:
            assert 20 < high - low < 120 and low < TRUTH[player] < high


def test_no_finite_fit_raises_and_ridge_keeps_it_finite() -> None:
    unbeaten = [Battle("new-a", "anchor-1", Winner.A)] * 2
    with pytest.raises(ConvergenceError):
        anchored_ratings(unbeaten, {"anchor-1": 1000.0}, ridge=0)
    assert 1000 < anchored_ratings(unbeaten, {"anchor-1": 1000.0})["new-a"] < 3000
    with pytest.raises(ValueError):
        anchored_ratings(unbeaten, {})
    # Anchors without battles are returned as given; entrants with no evidence sit at the anchors' mean.
    lonely = anchored_ratings([Battle("new-b", "new-c", Winner.TIE)], {"anchor-1": 900.0, "anchor-2": 1100.0})
    assert lonely == pytest.approx({"anchor-1": 900.0, "anchor-2": 1100.0, "new-b": 1000.0, "new-c": 1000.0})
