"""leaderboard.bounds: Ford's condition and the rank ranges the win graph allows, worked by hand."""
from __future__ import annotations

import math

import numpy as np

from leaderboard.bounds import bounds


def points(n: int, wins: list[tuple[int, int]], ties: list[tuple[int, int]] = ()) -> np.ndarray:
    matrix = np.zeros((n, n))
    for winner, loser in wins:
        matrix[winner, loser] += 1
    for a, b in ties:
        matrix[a, b] += 0.5
        matrix[b, a] += 0.5
    return matrix


def test_a_cycle_is_bounded() -> None:
    found = bounds(points(3, [(0, 1), (1, 2), (2, 0)]))
    assert found.bounded


def test_a_tie_gives_points_both_ways() -> None:
    assert bounds(points(2, [(0, 1)], ties=[(0, 1)])).bounded
    assert not bounds(points(2, [(0, 1), (0, 1)])).bounded


def test_a_chain_of_clean_wins_fixes_every_rank() -> None:
    found = bounds(points(3, [(0, 1), (1, 2)]))  # 0 > 1 > 2, and 0 never met 2
    assert not found.bounded
    assert found.rank_low.tolist() == [1, 2, 3] and found.rank_high.tolist() == [1, 2, 3]


def test_an_unbeaten_player_above_a_cycle() -> None:
    # 0 beat 1 and 2; 1, 2, 3 beat each other in a cycle: 0 is first, the cycle shares 2..4
    found = bounds(points(4, [(0, 1), (0, 2), (1, 2), (2, 3), (3, 1)]))
    assert not found.bounded
    assert found.rank_low.tolist() == [1, 2, 2, 2] and found.rank_high.tolist() == [1, 4, 4, 4]


def test_two_unbeaten_players_who_never_met_share_the_top() -> None:
    # 0 and 1 each beat 2; 2 and 3 tied: 0 and 1 are above 2 and 3, in either order
    found = bounds(points(4, [(0, 2), (1, 2)], ties=[(2, 3)]))
    assert not found.bounded
    assert found.rank_low.tolist() == [1, 1, 3, 3] and found.rank_high.tolist() == [2, 2, 4, 4]


def field(top_loses: bool) -> list[tuple[str, str, str]]:
    """a, b, c beat each other about evenly (10 games a pair); top beats each of them 10 times,
    and, when `top_loses`, loses one more game to c."""
    battles = []
    for x, y in (("a", "b"), ("b", "c"), ("a", "c")):
        battles += [(x, y, "A")] * 5 + [(x, y, "B")] * 4 + [(x, y, "TIE")]
    for other in ("a", "b", "c"):
        battles += [("top", other, "A")] * 10
    if top_loses:
        battles.append(("top", "c", "B"))
    return battles


def test_a_board_shows_no_interval_the_verdicts_do_not_bound() -> None:
    """The headline failure: an unbeaten player's interval is the ridge prior's (thousands of Elo
    wide) and, ratings being centred on the group's mean, so are its neighbours'. Without a
    bound the board shows none, and ranks by who beat whom."""
    from leaderboard.board import build_board
    from leaderboard.ratings import bradley_terry_intervals

    ridge = bradley_terry_intervals(field(top_loses=False))
    assert ridge["top"][2] - ridge["top"][1] > 1000  # what the board showed before
    rows = {r.player: r for r in build_board(field(top_loses=False))}
    assert [(r.bounded, math.isnan(r.ci_low), math.isnan(r.ci_high)) for r in rows.values()] == \
        [(False, True, True)] * 4
    assert (rows["top"].rank, rows["top"].rank_low, rows["top"].rank_high) == (1, 1, 1)
    assert {p: (rows[p].rank_low, rows[p].rank_high) for p in "abc"} == {p: (2, 4) for p in "abc"}

    bounded = build_board(field(top_loses=True))  # one loss bounds top: every interval is the data's
    assert all(r.bounded for r in bounded)
    assert max(r.ci_high - r.ci_low for r in bounded) < 1000


def test_a_long_chain_of_many_players_is_ranked_exactly() -> None:
    """300 players in a chain of clean wins, each also beating every player below it: more than
    255 paths between two players, which a byte-sized path count once wrapped to none."""
    n = 300
    found = bounds(np.triu(np.ones((n, n)), 1))
    assert not found.bounded
    assert found.rank_low.tolist() == list(range(1, n + 1)) == found.rank_high.tolist()
