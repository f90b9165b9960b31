"""Components of the comparison graph, boards ranked per component, and bootstrap intervals
within each component: golden cases worked by hand, seeded randomness."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from leaderboard.battles import battle_table, pair_counts
from leaderboard.board import build_board, with_intervals
from leaderboard.components import components, split_table
from leaderboard.ratings import bradley_terry_intervals
from leaderboard.resampled import board_bootstrap
from leaderboard.types import Battle, Winner
from tests.flat import flat

QUESTIONS = [f"q{i}" for i in range(6)]


def verdict(question: str) -> Winner:
    """The stronger side wins q0-q3, loses q4 and ties q5: never unbeaten."""
    k = int(question[1:])
    return Winner.A if k < 4 else Winner.B if k == 4 else Winner.TIE


def group(players: str) -> list[Battle]:
    """Every pair of `players` (strongest first) on every question."""
    return [Battle(a, b, verdict(q), q) for q in QUESTIONS for a, b in itertools.combinations(players, 2)]


def test_components_by_hand() -> None:
    # players in name order: a b c d e f g; edges a-b, b-c (3 players), d-g (2), e-f (2)
    games = np.zeros((7, 7), dtype=int)
    for i, j in [(0, 1), (1, 2), (3, 6), (4, 5)]:
        games[i, j] = games[j, i] = 1
    # the largest first; equal sizes in the order of their first player's name (d before e)
    assert components(games).tolist() == [1, 1, 1, 2, 3, 3, 2]
    assert components(np.ones((3, 3), dtype=int)).tolist() == [1, 1, 1]
    assert components(np.zeros((0, 0))).tolist() == []
    # a chain linked only through its far end is one piece
    chain = np.zeros((4, 4), dtype=int)
    for i, j in [(0, 3), (3, 1), (1, 2)]:
        chain[i, j] = chain[j, i] = 2
    assert components(chain).tolist() == [1, 1, 1, 1]


def test_a_bigger_piece_comes_first_whatever_its_names() -> None:
    battles = group("yz") + group("cab")  # y-z found first by name, but a-b-c is larger
    labels = components(pair_counts(battles).games)
    assert dict(zip(pair_counts(battles).players, labels.tolist())) == {"a": 1, "b": 1, "c": 1, "y": 2, "z": 2}


def test_two_groups_are_ranked_apart_with_honest_intervals() -> None:
    battles = group("abc") + group("xyz")
    board = build_board(battles)
    assert [(r.player, r.component, r.rank) for r in board] == [
        ("a", 1, 1), ("b", 1, 2), ("c", 1, 3), ("x", 2, 1), ("y", 2, 2), ("z", 2, 3),
    ]
    for row in board:
        assert 1 <= row.rank_low <= row.rank <= row.rank_high <= 3
        width = row.ci_high - row.ci_low
        assert math.isfinite(width) and 0 < width < 400, (row.player, width)
    # each group's ratings equal the fit of that group alone (mean player at 1000)
    alone = bradley_terry_intervals(group("abc"))
    assert flat([(r.rating, r.ci_low, r.ci_high) for r in board[:3]]) == pytest.approx(flat([alone[p] for p in "abc"]))
    assert board[4].rating == pytest.approx(1000.0)
    # pooled into one fit, the groups' offset rests on the prior alone: thousands of Elo wide
    pooled = bradley_terry_intervals(battles)
    assert min(high - low for _, low, high in pooled.values()) > 2000


def test_split_table_keeps_each_pieces_questions_only() -> None:
    battles = [Battle("a", "b", Winner.A, "q1"), Battle("x", "y", Winner.B, "q2"), Battle("b", "a", Winner.TIE, "q3"),
               Battle("y", "x", Winner.A, "q2"), Battle("x", "y", Winner.A, "q4")]
    table = battle_table(battles)
    first, second = split_table(table, components(pair_counts(table).games))
    assert (first.players, first.a.tolist(), first.b.tolist(), first.group.tolist()) == (["a", "b"], [0, 1], [1, 0], [0, 1])
    assert first.score.tolist() == [1.0, 0.5]
    assert (second.players, second.a.tolist(), second.b.tolist()) == (["x", "y"], [0, 1, 0], [1, 0, 1])
    assert second.group.tolist() == [0, 0, 1] and second.groups == 2  # q2, q2, q4: two questions


def test_bootstrap_within_components_is_reproducible_and_bounded() -> None:
    # 18 questions, the pattern of six three times: a resample of only six would hold nothing but
    # clean wins one time in eleven, which bounds no rating (`leaderboard.resampled`); and the
    # second player also beats the first on q3 of each six, else the middle player would sit at
    # the centre of every resample by symmetry (no spread to measure)
    questions = [f"q{i}" for i in range(18)]

    def wide(players: str) -> list[Battle]:
        def outcome(q: str, a: str, b: str) -> Winner:
            k = int(q[1:]) % 6
            return Winner.B if k == 3 and (a, b) == (players[0], players[1]) else verdict(f"q{k}")

        return [Battle(a, b, outcome(q, a, b), q) for q in questions for a, b in itertools.combinations(players, 2)]

    battles = wide("abc") + wide("xyz")
    first = board_bootstrap(battles, np.random.default_rng(7), rounds=200)
    assert first == board_bootstrap(battles, np.random.default_rng(7), rounds=200)  # one seed, one answer
    assert first != board_bootstrap(battles, np.random.default_rng(8), rounds=200)
    assert set(first) == set("abcxyz")
    for low, high, missing in first.values():
        assert missing is None and math.isfinite(low) and math.isfinite(high) and 0 < high - low < 1000
    # the first component draws first on the generator: it equals a bootstrap of that group alone
    alone = board_bootstrap(wide("abc"), np.random.default_rng(7), rounds=200)
    assert {p: first[p] for p in "abc"} == alone


def test_with_intervals_ranks_within_each_component() -> None:
    board = build_board(group("abc") + group("xy"))
    # a is clear of b and c; in the second component x and y overlap
    bounds = {"a": (1200.0, 1300.0), "b": (900.0, 1100.0), "c": (850.0, 950.0), "x": (900.0, 1100.0),
              "y": (950.0, 1050.0)}
    rows = with_intervals(board, bounds)
    assert [(r.player, r.ci_low, r.ci_high) for r in rows] == [(p, *bounds[p]) for p in "abcxy"]
    assert [(r.rank, r.rank_low, r.rank_high) for r in rows] == [
        (1, 1, 1), (2, 2, 3), (3, 2, 3), (1, 1, 2), (2, 1, 2),
    ]
    assert [r.rating for r in rows] == [r.rating for r in board]
    assert board[0].rank_high == 3  # the input rows are left as they were
    missing = with_intervals(board, {})
    assert all(math.isnan(r.ci_low) and r.rank_low == 1 for r in missing)
