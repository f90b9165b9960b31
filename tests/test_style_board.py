"""leaderboard.style_board: the plain board's players, rated with a length-loving judge's taste
removed; components fitted apart; imported battles refused with the reason."""
from __future__ import annotations

import numpy as np
import pytest

from leaderboard.board import build_board
from leaderboard.players import SideRow, StyledRow, battles_at_level
from leaderboard.style import StyleUnavailable
from leaderboard.style_board import styled_board
from leaderboard.types import PLACEHOLDER_OUTPUT, Level, Winner

STRENGTH = {"m1": 1.0, "m2": 0.0, "m3": -1.0}  # true order m1 > m2 > m3
WORDS = {"m1": 20, "m2": 200, "m3": 40}  # m2 pads its answers


def planted(seed: int = 0, questions: int = 150) -> list[StyledRow]:
    """A judge whose logit is the strength difference plus 1.5 x the (normalised) length
    difference: m2's padding beats m1's substance on the plain board."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(questions):
        for a, b in (("m1", "m2"), ("m2", "m3"), ("m1", "m3")):
            text = {m: " ".join(["word"] * int(WORDS[m] * rng.uniform(0.8, 1.2))) for m in (a, b)}
            la, lb = len(text[a]), len(text[b])
            logit = STRENGTH[a] - STRENGTH[b] + 1.5 * 4 * (la - lb) / (la + lb + 1)
            winner = Winner.A if rng.random() < 1 / (1 + np.exp(-logit)) else Winner.B
            rows.append(StyledRow(SideRow(a, "s", b, "s", winner, f"q{q}"), text[a], text[b]))
    return rows


def test_style_control_recovers_the_order_length_hid() -> None:
    rows = planted()
    plain = build_board(battles_at_level([r.row for r in rows], Level.MODEL))
    assert plain[0].player == "m2"  # the padded model tops the plain board
    styled = styled_board(rows, Level.MODEL, plain)
    assert [r.player for r in styled.rows] == ["m1", "m2", "m3"]
    assert [r.rank for r in styled.rows] == [1, 2, 3]
    for r in styled.rows:  # the plain figures ride along
        assert r.plain_rating == next(p.rating for p in plain if p.player == r.player)
        assert r.ci_low < r.rating < r.ci_high
    length = next(c.coefficient for c in styled.coefficients if c.coefficient.name == "length")
    assert length.low > 0  # the judge's taste for length, found


def test_each_component_is_fitted_apart() -> None:
    rows = planted(questions=60)
    other = [StyledRow(SideRow(f"x{q % 2}", "s", f"y{q % 3}", "s", Winner.A if q % 3 else Winner.B, f"r{q}"),
                       "short answer" * (1 + q % 4), "a longer answer " * (1 + q % 5)) for q in range(40)]
    rows = rows + other
    plain = build_board(battles_at_level([r.row for r in rows], Level.MODEL))
    styled = styled_board(rows, Level.MODEL, plain)
    assert {r.component for r in styled.rows} == {1, 2}
    assert {c.component for c in styled.coefficients} == {1, 2}
    assert sorted(r.player for r in styled.rows) == sorted(r.player for r in plain)


def test_battles_without_outputs_say_why() -> None:
    rows = [StyledRow(SideRow("a", "s", "b", "s", Winner.A, "q"), PLACEHOLDER_OUTPUT, PLACEHOLDER_OUTPUT)]
    plain = build_board(battles_at_level([r.row for r in rows], Level.MODEL))
    with pytest.raises(StyleUnavailable, match="1 of 1 battles have no outputs"):
        styled_board(rows, Level.MODEL, plain)
