"""A board's bootstrap intervals (`leaderboard.resampled`): per connected group, never zero-width
where the questions cannot measure a spread, and marked unbounded where the resamples lose what
bounded a rating; checked against a plain recomputation and against the closed-form intervals."""
from __future__ import annotations

import math

import numpy as np
import pytest

from leaderboard.board import build_board, with_intervals
from leaderboard.ratings import bootstrap_intervals, bradley_terry, bradley_terry_intervals
from leaderboard.resampled import Missing, Resampled, board_bootstrap
from leaderboard.types import Battle, Winner


def noisy(rng: np.random.Generator, strength: dict[str, float], questions: list[str]) -> list[Battle]:
    """Every pair once per question, Bradley-Terry on `strength` (Elo points)."""
    names = list(strength)
    return [Battle(a, b, Winner.A if rng.random() < 1 / (1 + 10 ** ((strength[b] - strength[a]) / 400)) else Winner.B, q)
            for q in questions for i, a in enumerate(names) for b in names[i + 1:]]


def alike(names: list[str], questions: list[str]) -> list[Battle]:
    """The same verdicts on every question: the first beats the second, the second the third,
    and the first and the third tie (bounded: the tie gives points both ways)."""
    first, second, third = names
    return [battle for q in questions for battle in (
        Battle(first, second, Winner.A, q), Battle(second, third, Winner.A, q), Battle(first, third, Winner.TIE, q))]


QUESTIONS = [f"q{i}" for i in range(40)]


def test_a_group_the_questions_never_vary_has_no_interval_not_a_point() -> None:
    # 80 matches a player, a bounded group, but every question gave the same verdicts: every
    # resample is the same data, so the plain bootstrap says [r, r]
    battles = alike(["a", "b", "c"], QUESTIONS)
    plain = bootstrap_intervals(battles, np.random.default_rng(0), rounds=200)
    assert all(high - low < 1e-6 for low, high in plain.values())  # the defect: zero width
    closed = bradley_terry_intervals(battles)
    assert all(high - low > 100 for _, low, high in closed.values())  # what the data support
    found = board_bootstrap(battles, np.random.default_rng(0), rounds=200)
    assert set(found) == {"a", "b", "c"}
    for interval in found.values():
        assert interval.missing is Missing.NO_SPREAD and math.isnan(interval.low) and math.isnan(interval.high)


def test_players_with_two_matches_get_no_point_interval() -> None:
    one_question = [Battle("a", "b", Winner.A, "q1"), Battle("b", "c", Winner.A, "q1"), Battle("a", "c", Winner.TIE, "q1")]
    two_ties = [Battle("x", "y", Winner.TIE, "q1"), Battle("y", "x", Winner.TIE, "q2")]
    split = [Battle("u", "v", Winner.A, "q1"), Battle("v", "u", Winner.A, "q2")]
    plain = {}
    for battles in (one_question, two_ties, split):
        plain.update(bootstrap_intervals(battles, np.random.default_rng(0), rounds=200))
    assert plain["x"] == pytest.approx((1000.0, 1000.0))  # the defect: [1000, 1000] after two ties
    found = board_bootstrap(one_question + two_ties + split, np.random.default_rng(0), rounds=200)
    assert {p: found[p].missing for p in "abcxy"} == dict.fromkeys("abcxy", Missing.NO_SPREAD)
    # u and v each won once: a resample that draws one question twice leaves one of them unbeaten
    # (half the rounds), and its rating would be the ridge's: unbounded, not the prior's extremes
    assert plain["u"][1] - plain["u"][0] > 500
    assert (found["u"].missing, found["v"].missing) == (Missing.UNBOUNDED, Missing.UNBOUNDED)


def test_three_groups_each_resampled_within_itself() -> None:
    rng = np.random.default_rng(24)
    strength = {"a1": 200.0, "a2": 0.0, "a3": -100.0}
    bounded = noisy(rng, strength, QUESTIONS)  # 80 matches a player
    store = bounded + alike(["d1", "d2", "d3"], [f"d{i}" for i in range(10)]) + [
        Battle("c1", "c2", Winner.A, "o1"), Battle("c2", "c3", Winner.A, "o2"), Battle("c1", "c3", Winner.A, "o3")]
    alone = board_bootstrap(bounded, np.random.default_rng(3), rounds=200)
    found = board_bootstrap(store, np.random.default_rng(3), rounds=200)
    # group 1 (three equal sizes: the first player's name decides) draws first: its intervals are
    # those of the group alone, the same draws
    assert {p: found[p] for p in strength} == alone
    closed = {row.player: row for row in build_board(store)}
    for player in strength:
        low, high, missing = found[player]
        assert missing is None and low < closed[player].rating < high
        ratio = (high - low) / (closed[player].ci_high - closed[player].ci_low)
        assert 0.6 < ratio < 1.6, (player, ratio)  # the closed form's width, give or take resampling
    assert all(found[p].missing is Missing.NO_SPREAD for p in ("d1", "d2", "d3"))
    # a perfectly ordered group: unbounded on the board already, not resampled at all
    assert all(found[p].missing is Missing.UNBOUNDED and not closed[p].bounded for p in ("c1", "c2", "c3"))
    rows = {r.player: r for r in with_intervals(build_board(store), found)}
    assert [rows[p].ci_missing for p in ("a1", "d1")] == [None, Missing.NO_SPREAD]
    assert math.isnan(rows["d1"].ci_low) and (rows["d1"].rank_low, rows["d1"].rank_high) == (1, 3)


def test_a_newcomer_whose_one_loss_may_be_lost_is_unbounded_and_leaves_the_rest_alone() -> None:
    rng = np.random.default_rng(1)
    strength = {f"p{i}": float(s) for i, s in enumerate(rng.normal(0, 150, 8))}
    names = list(strength)
    established = []
    for q in range(30):
        for _ in range(20):
            a, b = rng.choice(names, 2, replace=False)
            p = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 400))
            established.append(Battle(a, b, Winner.A if rng.random() < p else Winner.B, f"q{q}"))
    newcomer = [Battle("new", "p1", Winner.A, "q1"), Battle("new", "p2", Winner.A, "q2"), Battle("p3", "new", Winner.A, "q3")]
    without = board_bootstrap(established, np.random.default_rng(0), rounds=200)
    found = board_bootstrap(established + newcomer, np.random.default_rng(0), rounds=200)  # the same draws
    assert build_board(established + newcomer)[0].bounded  # the full data bound everyone
    assert found["new"].missing is Missing.UNBOUNDED  # a third of the resamples lose its only loss
    plain = bootstrap_intervals(established + newcomer, np.random.default_rng(0), rounds=200)
    for player in names:  # the others keep intervals near those without it; the plain ones swing with it
        assert found[player].missing is None
        assert found[player][:2] == pytest.approx(without[player][:2], abs=25)  # its verdicts count a little
        assert max(abs(x - y) for x, y in zip(plain[player], without[player][:2])) > 2 * max(
            abs(x - y) for x, y in zip(found[player][:2], without[player][:2]))


def plain_bootstrap(battles: list[Battle], seed: int, rounds: int,
                    alpha: float = 0.025) -> tuple[dict[str, Resampled], dict[str, int]]:
    """`board_bootstrap` of one connected group, written out plainly: draw the questions, keep the
    drawn battles as weights, find who bounds whom by following wins, refit with `bradley_terry`.
    Also how many rounds left each player unbounded."""
    questions = list(dict.fromkeys(b.question_id for b in battles))
    draws = np.random.default_rng(seed).multinomial(len(questions), [1 / len(questions)] * len(questions), size=rounds)
    full = bradley_terry(battles)
    players = sorted(full)
    values: dict[str, list[float]] = {p: [] for p in players}
    unbounded = dict.fromkeys(players, 0)
    for r in range(rounds):
        drawn = [Battle(b.a, b.b, b.winner, weight=float(draws[r, questions.index(b.question_id)])) for b in battles]
        drawn = [b for b in drawn if b.weight > 0]
        present = sorted({p for b in drawn for p in (b.a, b.b)})
        took = {p: set() for p in present}
        for b in drawn:
            if b.winner is not Winner.B:
                took[b.a].add(b.b)
            if b.winner is not Winner.A:
                took[b.b].add(b.a)

        def reach(start: str, edges: dict[str, set[str]]) -> set[str]:
            seen, todo = {start}, [start]
            while todo:
                for nxt in edges[todo.pop()] - seen:
                    seen.add(nxt)
                    todo.append(nxt)
            return seen

        back = {p: {q for q in present if p in took[q]} for p in present}
        pieces = {frozenset(reach(p, took) & reach(p, back)) for p in present}
        core = max(pieces, key=len)
        if 2 * len(core) <= len(present) or len(core) < 2:
            core = frozenset()
        for p in present:
            if p not in core:
                unbounded[p] += 1
        if core:
            fitted = bradley_terry([b for b in drawn if b.a in core and b.b in core])
            shift = np.mean([full[p] for p in core]) - np.mean(list(fitted.values()))
            for p in core:
                values[p].append(fitted[p] + shift)
    found = {}
    for p in players:  # unbounded rounds count in both tails: below every value for the low end, above for the high
        low_side = [-math.inf] * unbounded[p] + values[p]
        high_side = values[p] + [math.inf] * unbounded[p]
        with np.errstate(invalid="ignore"):
            low, high = np.quantile(low_side, alpha), np.quantile(high_side, 1 - alpha)
        if not (math.isfinite(low) and math.isfinite(high)):
            found[p] = Resampled(math.nan, math.nan, Missing.UNBOUNDED)
        elif high - low <= 1e-6:
            found[p] = Resampled(math.nan, math.nan, Missing.NO_SPREAD)
        else:
            found[p] = Resampled(float(low), float(high))
    return found, unbounded


def test_board_bootstrap_equals_a_plain_recomputation() -> None:
    # a group with players that drop out of rounds (z: one question) and rounds that lose what
    # bounded part of it (y: its one loss is on q1, so a third of the rounds; x: its losses are on
    # four questions, so a round or two, which the tails absorb), over few questions
    rng = np.random.default_rng(7)
    battles = noisy(rng, {"a": 100.0, "b": 0.0, "c": -50.0, "d": -100.0}, [f"q{i}" for i in range(12)])
    battles += [Battle("z", "a", Winner.A, "q0"), Battle("b", "z", Winner.TIE, "q0"),
                Battle("y", "b", Winner.A, "q2"), Battle("y", "c", Winner.A, "q5"), Battle("d", "y", Winner.A, "q1")]
    battles += [Battle("x", o, Winner.A, q) for o, q in (("a", "q0"), ("b", "q2"), ("c", "q4"), ("d", "q6"))]
    battles += [Battle(o, "x", Winner.A, q) for o, q in (("a", "q1"), ("b", "q3"), ("c", "q7"), ("d", "q9"))]
    got = board_bootstrap(battles, np.random.default_rng(4), rounds=200)
    want, unbounded = plain_bootstrap(battles, seed=4, rounds=200)
    assert got.keys() == want.keys()
    for player, interval in want.items():
        assert got[player].missing == interval.missing, player
        if interval.missing is None:
            assert got[player][:2] == pytest.approx(interval[:2], abs=1e-6), player
    assert want["y"].missing is Missing.UNBOUNDED and unbounded["y"] > 50
    assert want["x"].missing is None and 0 < unbounded["x"] <= 4  # placed in the tails, still bounded
