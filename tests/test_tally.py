"""Tally: the incremental aggregate gives the same board as building it from all battles at once."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from leaderboard.board import build_board
from leaderboard.fit import DEFAULT_RIDGE
from leaderboard.ratings import bradley_terry_intervals
from leaderboard.tally import Tally
from leaderboard.types import Battle, Rating, Winner

NAMES = ["zed", "amy", "kim", "bob", "yan", "cat", "max", "dee", "lou"]
PLACING = ("component", "bounded", "rank", "rank_low", "rank_high", "ci_missing", "plain_rating", "plain_ci_low", "plain_ci_high")


def random_battles(rng: np.random.Generator, count: int, players: int = 9) -> list[Battle]:
    """Skewed strengths, ties, a few weights; players join over time, not in name order."""
    strength = np.linspace(1.5, -1.5, players)
    battles = []
    for t in range(count):
        pool = max(2, min(players, 2 + t * players // max(count // 2, 1)))  # new players keep arriving
        i, j = rng.choice(pool, size=2, replace=False)
        p = 1 / (1 + np.exp(strength[j] - strength[i]))
        u = rng.random()
        winner = Winner.TIE if u < 0.2 else (Winner.A if u < 0.2 + 0.8 * p else Winner.B)
        weight = 2.0 if rng.random() < 0.1 else 1.0
        battles.append(Battle(NAMES[i], NAMES[j], winner, f"q{t % 17}", weight))
    return battles


def chunks(rng: np.random.Generator, battles: list[Battle]) -> list[list[Battle]]:
    cuts = sorted(rng.choice(np.arange(1, len(battles)), size=7, replace=False).tolist())
    return [battles[i:j] for i, j in zip([0, *cuts], [*cuts, len(battles)])]


def assert_same_board(got: list[Rating], want: list[Rating]) -> None:
    assert [r.player for r in got] == [r.player for r in want]
    for g, w in zip(got, want):
        for name in ("rating", "ci_low", "ci_high", "elo"):
            assert getattr(g, name) == pytest.approx(getattr(w, name), abs=1e-9, nan_ok=True), (g.player, name)
        assert (g.wins, g.losses, g.ties, g.matches) == (w.wins, w.losses, w.ties, w.matches)
        for name in ("points", "win_rate"):
            assert getattr(g, name) == pytest.approx(getattr(w, name), abs=1e-9), (g.player, name)
        assert [getattr(g, name) for name in PLACING] == [getattr(w, name) for name in PLACING], g.player


@pytest.mark.parametrize("seed", range(5))
def test_chunked_tally_equals_the_board_of_all_battles(seed: int) -> None:
    rng = np.random.default_rng(seed)
    battles = random_battles(rng, 600)
    tally = Tally(k=24.0)
    for chunk in chunks(rng, battles):
        tally.add(chunk)
    assert tally.battles == len(battles)
    assert_same_board(tally.board(), build_board(battles, k=24.0))


def test_tally_agrees_with_the_views_computed_independently() -> None:
    """Checked from first principles, battle by battle in plain Python (not through the
    functions the Tally itself calls): Elo's update rule, the W/L/T records, and the
    Bradley-Terry fit's optimality (the penalised score equations hold at its ratings)."""
    battles = random_battles(np.random.default_rng(9), 800)
    tally = Tally(k=16.0)
    for battle in battles[:50]:
        tally.add([battle])  # one at a time, too
    tally.add(iter(battles[50:]))  # any iterable

    elo: dict[str, float] = {}
    records: dict[str, list[int]] = {}  # wins, losses, ties
    for b in battles:
        ra, rb = elo.setdefault(b.a, 1000.0), elo.setdefault(b.b, 1000.0)
        score = {Winner.A: 1.0, Winner.B: 0.0, Winner.TIE: 0.5}[b.winner]
        delta = 16.0 * b.weight * (score - 1 / (1 + 10 ** ((rb - ra) / 400)))
        elo[b.a], elo[b.b] = ra + delta, rb - delta
        for player, points in ((b.a, score), (b.b, 1 - score)):
            record = records.setdefault(player, [0, 0, 0])
            record[0 if points == 1 else 1 if points == 0 else 2] += 1
    assert tally.elo() == pytest.approx(elo, abs=1e-9)

    board = tally.board()
    assert {r.player for r in board} == set(records)
    for row in board:
        wins, losses, ties = records[row.player]
        assert (row.wins, row.losses, row.ties) == (wins, losses, ties)
        assert row.points == wins + ties / 2 and row.win_rate == (wins + ties / 2) / (wins + losses + ties)
        assert row.ci_low < row.rating < row.ci_high

    # Bradley-Terry with the default ridge: at the fitted natural-log strengths θ (mean 0), every
    # player's expected points minus its points, plus ridge·θ, is zero.
    theta = {r.player: (r.rating - 1000.0) * math.log(10) / 400 for r in board}
    assert sum(theta.values()) == pytest.approx(0.0, abs=1e-9)
    gradient = {p: DEFAULT_RIDGE * t for p, t in theta.items()}
    for b in battles:
        score = {Winner.A: 1.0, Winner.B: 0.0, Winner.TIE: 0.5}[b.winner]
        p_a = 1 / (1 + math.exp(theta[b.b] - theta[b.a]))
        gradient[b.a] += b.weight * (p_a - score)
        gradient[b.b] -= b.weight * (p_a - score)
    assert max(abs(g) for g in gradient.values()) < 1e-7
    # the intervals are the engine's own (bradley_terry_intervals, which the Tally calls too)
    fitted = bradley_terry_intervals(battles)
    for row in board:
        assert (row.rating, row.ci_low, row.ci_high) == pytest.approx(fitted[row.player], abs=1e-9)


def test_board_snapshots_along_a_stream() -> None:
    battles = random_battles(np.random.default_rng(3), 300)
    tally = Tally()
    for end in (1, 2, 40, 41, 150, 300):
        tally.add(battles[tally.battles:end])
        assert_same_board(tally.board(), build_board(battles[:end]))


def test_copy_is_independent() -> None:
    battles = random_battles(np.random.default_rng(1), 200)
    tally = Tally()
    tally.add(battles[:100])
    fork = tally.copy()
    fork.add(battles[100:])
    assert tally.battles == 100 and fork.battles == 200
    assert_same_board(tally.board(), build_board(battles[:100]))
    assert_same_board(fork.board(), build_board(battles))


def test_empty_and_malformed() -> None:
    tally = Tally()
    assert tally.board() == [] and tally.battles == 0 and tally.players == []
    tally.add([])
    assert tally.board() == []
    tally.add([("a", "b", "A")])
    before = tally.board()
    with pytest.raises(ValueError):
        tally.add([("a", "c", "A"), ("a", "a", "B")])  # the bad one is second: nothing is counted
    assert tally.battles == 1 and tally.players == ["a", "b"]
    assert_same_board(tally.board(), before)


def test_a_warm_started_board_equals_a_cold_one() -> None:
    """Refits start from the previous board's ratings; the optimum must not depend on it."""
    rng = random.Random(11)
    players = [f"p{i}" for i in range(12)]
    stream = [Battle(*rng.sample(players, 2), rng.choice(list(Winner))) for _ in range(600)]
    warm = Tally()
    for start in range(0, 600, 50):
        warm.add(stream[start:start + 50])
        warm_rows = warm.board()
        cold_rows = build_board(stream[: start + 50])
        assert [r.player for r in warm_rows] == [r.player for r in cold_rows]
        for w, c in zip(warm_rows, cold_rows):
            assert w.rating == pytest.approx(c.rating, abs=1e-7)
            assert w.ci_low == pytest.approx(c.ci_low, abs=1e-7, nan_ok=True)
