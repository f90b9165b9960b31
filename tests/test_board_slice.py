"""The pure parts of `?turn=`, `?votes=majority` and `?humans=` patterns, on golden cases:
a submission's turn (`leaderboard.turns`), each pair's majority (`leaderboard.board_slice`) and
the human reference set named by names and patterns (`leaderboard.reference_humans`)."""
from __future__ import annotations

import pytest

from leaderboard.board_slice import WHOLE, BoardSlice, majority_rows
from leaderboard.players import SideRow
from leaderboard.reference_humans import NotHuman, NoVotes, chosen, matcher, names_of
from leaderboard.turns import TURN_MAX, turn_of
from leaderboard.types import Winner

A, B, TIE = Winner.A, Winner.B, Winner.TIE


@pytest.mark.parametrize(("question_id", "metadata", "turn"), [
    ("81", None, 1), ("81#turn2", None, 2), ("81#turn12", {"turn": 3}, 12),  # the id's suffix first
    ("hashed", {"turn": 2}, 2), ("hashed", {"turn": "2"}, 1), ("hashed", {"turn": True}, 1),
    ("hashed", {"turn": 0}, 1), ("q#turn", None, 1), ("q#turn0", None, 1), ("q#turn02", None, 1),
    ("q#turn2x", None, 1), (f"q#turn{TURN_MAX + 1}", None, 1), ("a#turn2#turn3", None, 3),
])
def test_the_turn_of_a_submission(question_id: str, metadata: dict | None, turn: int) -> None:
    assert turn_of(question_id, metadata) == turn


def row(a: str, b: str, winner: Winner, question: str = "q1") -> SideRow:
    return SideRow(a, "default", b, "default", winner, question)


def test_each_pair_by_the_majority_of_its_verdicts() -> None:
    rows = [row("x", "y", A), row("x", "z", A), row("y", "x", B),  # x beats y twice (once sent the other way)
            row("x", "y", B), row("x", "z", B),  # x, z: one each way, a tie
            row("y", "z", TIE), row("y", "z", A), row("z", "y", B),  # y: A, A against one tie: y
            row("x", "y", B, "q2")]  # another question: another pair
    assert majority_rows(rows) == [row("x", "y", A), row("x", "z", TIE), row("y", "z", A), row("x", "y", B, "q2")]
    assert majority_rows([row("x", "y", A), row("y", "x", A), row("x", "y", TIE)]) == [row("x", "y", TIE)]
    assert majority_rows([]) == []
    assert BoardSlice(majority=True).rows(rows) == majority_rows(rows) and WHOLE.rows(rows) == rows
    assert WHOLE.whole and not BoardSlice(turn=1).whole and not BoardSlice(majority=True).whole


KNOWN = ("human/alice", "human/expert_1", "human/expert_2", "human/expert*", "human/x[1]")


@pytest.mark.parametrize(("values", "picked"), [
    (["human/alice"], {"human/alice"}),
    (["human/expert_*"], {"human/expert_1", "human/expert_2"}),
    (["human/expert*"], {"human/expert_1", "human/expert_2", "human/expert*"}),  # a `*` in a name: a wildcard
    (["human/*"], set(KNOWN)),
    ([" human/alice , human/*_2"], {"human/alice", "human/expert_2"}),
    (["human/x[1]"], {"human/x[1]"}),  # `[` is itself
    (["human/alice", "human/alice,human/alice"], {"human/alice"}),
])
def test_names_and_patterns_choose_the_reference_set(values: list[str], picked: set[str]) -> None:
    assert chosen(names_of(values), KNOWN) == picked


@pytest.mark.parametrize(("values", "error", "words"), [
    (["alice"], NotHuman, "'alice' is not a human judge"),
    (["human/"], NotHuman, "'human/' is not a human judge"),
    (["human/alice,"], NotHuman, "'' is not a human judge"),
    (["import/*"], NotHuman, "'import/*' is not a human judge"),
    (["human/bob"], NoVotes, "no votes by human/bob: the human judges are human/alice, human/expert*"),
    (["human/b*"], NoVotes, "no human judge matches human/b*: the human judges are"),
    (["human/expert_?"], NoVotes, "no votes by human/expert_?"),
])
def test_bad_names_and_patterns(values: list[str], error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=None) as caught:
        chosen(names_of(values), KNOWN)
    assert words in str(caught.value)


def test_no_human_votes_at_all() -> None:
    with pytest.raises(NoVotes, match="no human votes are stored"):
        chosen(names_of(["human/*"]), ())


def test_a_pattern_is_a_whole_match_with_no_regex_in_it() -> None:
    assert matcher("human/a.*").fullmatch("human/a.b") and not matcher("human/a.*").fullmatch("human/ab")
    assert not matcher("human/a*").fullmatch("human/ba") and matcher("human/a*").fullmatch("human/a\nb")
