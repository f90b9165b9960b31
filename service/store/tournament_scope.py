"""A tournament's scope: the tournament itself and its runs (a schedule's nightly runs, a panel's
members' runs, an import's layers: `parent_id`). Its board, roster, judgement lists and exports
all count the matches of that one scope, so the test is written here once.
"""
from __future__ import annotations

from sqlalchemy import or_, select
from sqlalchemy.sql import ColumnElement

from . import schema as s


def is_run_of(tournament_id: int) -> ColumnElement[bool]:
    """The SQL test for a tournaments row being the tournament or one of its runs."""
    t = s.tournaments
    return or_(t.c.id == tournament_id, t.c.parent_id == tournament_id)


def played_in(tournament_id: int) -> ColumnElement[bool]:
    """The SQL test for a match being one of the tournament's or of its runs'."""
    return s.matches.c.tournament_id.in_(select(s.tournaments.c.id).where(is_run_of(tournament_id)))


def counted_in(tournament_id: int | None) -> ColumnElement[bool]:
    """The SQL test for a match a board counts on its scope, before each (judgement, pair) is
    kept once: overall (None), the match flagged `counted`; within a tournament, any of its
    scope's (the board keeps the first of each)."""
    return s.matches.c.counted.is_(True) if tournament_id is None else played_in(tournament_id)
