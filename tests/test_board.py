"""The leaderboard rows: fitted rating, interval, live Elo and counts, best first."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from leaderboard.board import build_board
from leaderboard.ratings import bradley_terry, bradley_terry_intervals, online_elo
from leaderboard.types import Battle, Rating, Winner
from tests.required import skip_required

LLMFAO = Path(__file__).resolve().parents[2] / "shared" / "data" / "llmfao" / "crowd-comparisons.csv"
POSITION = {"left": Winner.A, "right": Winner.B, "tie": Winner.TIE}

# zephyr 3-1-0, llama 2-2-1, alpaca 0-2-1 (wins-losses-ties): the rating order is not the name order.
BATTLES = [
    Battle("zephyr", "llama", Winner.A, "q1"),
    Battle("zephyr", "llama", Winner.A, "q2"),
    Battle("llama", "alpaca", Winner.TIE, "q1"),
    Battle("alpaca", "zephyr", Winner.B, "q2"),
    Battle("llama", "alpaca", Winner.A, "q3"),
    Battle("llama", "zephyr", Winner.A, "q3"),
]


def test_empty_board() -> None:
    assert build_board([]) == []


def test_board_rows_join_the_views() -> None:
    board = build_board(BATTLES, k=16.0)
    assert [row.player for row in board] == ["zephyr", "llama", "alpaca"]
    fitted = bradley_terry_intervals(BATTLES)
    elo = online_elo(BATTLES, k=16.0)
    for row in board:
        assert isinstance(row, Rating)
        assert (row.rating, row.ci_low, row.ci_high) == pytest.approx(fitted[row.player])
        assert row.ci_low < row.rating < row.ci_high
        assert row.elo == pytest.approx(elo[row.player])
        assert row.matches == row.wins + row.losses + row.ties
    top, middle, bottom = board
    assert (top.wins, top.losses, top.ties, top.matches) == (3, 1, 0, 4)
    assert (top.component, top.bounded, top.rank, top.rank_low, top.rank_high, top.points, top.win_rate) == (1, True, 1, 1, 3, 3.0, 0.75)
    assert (top.ci_missing, top.plain_rating, top.plain_ci_low, top.plain_ci_high) == (None, None, None, None)
    assert [row.rank for row in board] == [1, 2, 3]
    assert (middle.wins, middle.losses, middle.ties) == (2, 2, 1)
    assert (bottom.wins, bottom.losses, bottom.ties) == (0, 2, 1)
    assert board[0].rating > board[1].rating > board[2].rating


def test_board_k_only_changes_elo() -> None:
    slow, fast = build_board(BATTLES, k=4.0), build_board(BATTLES, k=64.0)
    assert [r.rating for r in slow] == [r.rating for r in fast]
    assert abs(fast[0].elo - 1000) > abs(slow[0].elo - 1000)


def test_equal_ratings_break_ties_by_name() -> None:
    board = build_board([Battle("zed", "amy", Winner.A), Battle("zed", "amy", Winner.B), Battle("bob", "zed", Winner.TIE), Battle("bob", "amy", Winner.TIE)])
    assert [row.player for row in board] == ["amy", "bob", "zed"]
    assert board[0].rating == pytest.approx(board[2].rating)


def test_board_on_llmfao_crowd_votes() -> None:
    if not LLMFAO.exists():
        skip_required("shared-data", f"missing {LLMFAO}")
    with LLMFAO.open(newline="", encoding="utf-8") as handle:
        battles = [Battle(r["left"], r["right"], POSITION[r["winner"]], r["prompt"]) for r in csv.DictReader(handle)]
    board = build_board(battles, k=4.0)
    assert len(board) == 59
    assert board[0].player == "GPT 4"  # first in the published crowd leaderboard
    assert sum(row.matches for row in board) == 2 * len(battles)
    plain = bradley_terry(battles, ridge=0)
    assert max(abs(row.rating - plain[row.player]) for row in board) < 1.0  # the default ridge is mild


def test_rank_intervals_separate_clear_gaps_and_join_close_players() -> None:
    # Three far apart (a long way between each) and two level players at the bottom.
    battles = (
        [Battle("top", "mid", Winner.A)] * 60 + [Battle("top", "mid", Winner.B)] * 4
        + [Battle("mid", "low1", Winner.A)] * 60 + [Battle("mid", "low1", Winner.B)] * 4
        + [Battle("mid", "low2", Winner.A)] * 60 + [Battle("mid", "low2", Winner.B)] * 4
        + [Battle("low1", "low2", Winner.A), Battle("low1", "low2", Winner.B)] * 10
    )
    board = build_board(battles)
    ranks = {row.player: (row.rank_low, row.rank, row.rank_high) for row in board}
    assert ranks["top"] == (1, 1, 1)
    assert ranks["mid"] == (2, 2, 2)
    assert {ranks["low1"][0], ranks["low1"][2], ranks["low2"][0], ranks["low2"][2]} == {3, 4}
    assert ranks["low1"][0] == ranks["low2"][0] == 3 and ranks["low1"][2] == ranks["low2"][2] == 4
