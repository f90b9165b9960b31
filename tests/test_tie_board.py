"""The Davidson board (leaderboard.tie_board): each component of the plain board refitted by
`leaderboard.ties.davidson_intervals` on its own, ν per component, unbounded ones kept apart."""
from __future__ import annotations

import math
import random

import pytest

from leaderboard.battles import pair_counts
from leaderboard.board import build_board
from leaderboard.tie_board import tied_board
from leaderboard.ties import davidson_intervals
from leaderboard.types import Battle, Winner


def battles(players: str, games: int, seed: int) -> list[Battle]:
    rng = random.Random(seed)
    out = []
    for i in range(games):
        a, b = rng.sample(players, 2)
        out.append(Battle(a, b, rng.choice([Winner.A, Winner.B, Winner.TIE, Winner.TIE]), f"{players}{i}"))
    return out


def test_each_component_is_fitted_on_its_own() -> None:
    big, small = battles("abcd", 200, 1), battles("xy", 60, 2)
    plain = build_board(big + small)
    found = tied_board(plain, pair_counts(big + small))
    assert [p.component for p in found.tie_parameters] == [1, 2]
    for parameter, piece in zip(found.tie_parameters, (big, small)):
        expected = davidson_intervals(piece)
        assert (parameter.nu, parameter.low, parameter.high) == pytest.approx(expected.tie_parameter, abs=1e-12)
        assert parameter.tie_probability_equal == pytest.approx(parameter.nu / (2 + parameter.nu))
        for player, (rating, low, high) in expected.ratings.items():
            [row] = [r for r in found.rows if r.player == player]
            assert (row.rating, row.ci_low, row.ci_high) == pytest.approx((rating, low, high), abs=1e-9)
    plain_of = {r.player: r.rating for r in plain}
    assert all(r.plain_rating == plain_of[r.player] for r in found.rows)
    assert [r.player for r in found.rows[:4]] == sorted("abcd", key=lambda p: -davidson_intervals(big).ratings[p][0])


def test_an_unbounded_component_keeps_no_interval_and_weights_are_refused() -> None:
    clean = [Battle("a", "b", Winner.A, "q1"), Battle("b", "c", Winner.A, "q2"), Battle("a", "c", Winner.A, "q3")]
    plain = build_board(clean)
    assert not plain[0].bounded
    found = tied_board(plain, pair_counts(clean))
    assert all(math.isnan(r.ci_low) and math.isnan(r.ci_high) for r in found.rows)
    assert [(r.player, r.rank_low, r.rank_high) for r in found.rows] == [
        (r.player, r.rank_low, r.rank_high) for r in plain]
    weighted = [Battle("a", "b", Winner.A, "q1", weight=2.0), Battle("b", "a", Winner.TIE, "q2")]
    with pytest.raises(ValueError, match="weights other than 1"):
        tied_board(build_board(weighted), pair_counts(weighted))
