"""`?turn=` and `?votes=`: which verdicts a board (and judge health, for `turn`) counts.

`turn=N` keeps the judgements on turn N of multi-turn questions (`leaderboard.turns`: MT-Bench's
turn 2 is the question `<id>#turn2`), so one data dir holds every turn and each is rated apart.
`votes=majority` takes each pair's verdicts as one, their majority (`leaderboard.board_slice`),
as published human win rates count several voters on one pair; `each` (the default) counts every
verdict. Both are rebuilt from the store when the revision moves (like a tournament's board),
not followed one verdict at a time.
"""
from __future__ import annotations

from typing import Annotated

from fastapi import Query

from leaderboard.board_slice import BoardSlice
from leaderboard.turns import TURN_MAX
from service.web.api_models import Vocabulary


class Votes(Vocabulary):
    """`votes=`: every verdict a battle (`each`), or each pair's verdicts as one, their majority."""

    EACH = "each"
    MAJORITY = "majority"


TurnParam = Annotated[int | None, Query(
    ge=1, le=TURN_MAX, description="only the judgements on this turn of multi-turn questions (turn N > 1 is the "
                                   "question <question_id>#turn<N>; a single-turn question is turn 1)")]
VotesParam = Annotated[Votes, Query(
    description="each: every verdict counts (the default); majority: each pair of submissions counts once, with "
                "the verdict more than half of its verdicts name, else a tie (several human voters on one pair)")]


def board_slice(turn: int | None, votes: Votes) -> BoardSlice:
    """The verdicts a board with these parameters counts."""
    return BoardSlice(turn=turn, majority=votes is Votes.MAJORITY)
