"""Lists of judgements: one judge's, newest first, narrowed to a player (and an opponent) at a
level, a question, a tournament, or the inconsistent, tied or decided ones, a page at a time.

What the page shows behind a board's number. A player is matched by name at its level, as the
boards name it (`leaderboard.players.keys_of`), and a judgement whose two sides are the same
player there is left out, as the boards leave it out. Sides are the judgement's own a and b
(what its judge was shown), so a row reads the same as `get_judgement` on its id.

Two ways to a page, chosen per request (`walks`), both through indexes (schema version 9):
- walk: the judge's judgements newest first along (judge, id) (its inconsistent ones along
  (judge, consistent, id)), each side looked up by its id, until the page is full. Quick when
  the rows asked for are common (a model among a few, a scenario, a filter that keeps one in
  ten): it stops after the page.
- seek: a player's (or the opponent's, or the question's) submissions, then the judgements
  naming them through (a_id, b_id) and (b_id, a_id), the other side tested in that index, then
  sorted. Quick when those are few (one system of hundreds, one matrix cell, one question),
  where the walk would read much of the judge's history.
A player's judgements are counted first through the same indexes, up to where the walk is
surely shorter. SQLite keeps no statistics, so the SQL steers its planner (`_steered`);
PostgreSQL's planner chooses within the plan given. `python bench/judgement_lists.py` measures
pages at a million judgements (a busy 2-core machine): on SQLite every first page of 50 in 1-80
ms, one 5,000 deep in about 0.13 s; on PostgreSQL (random_page_cost 1.1, as docker-compose.yml
sets it) 5-150 ms.

No total is given: counting every judgement of a common player is what the walk avoids, and the
board already says how many (`matches` of a row, `battles` of a cell). A tournament narrows a
list (each judgement probed through ix_matches_judgement) but is never the way in.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from sqlalchemy import and_, false, func, not_, or_, select, union_all
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement, Select

from leaderboard.players import PlayerKey, keys_of, player_of
from leaderboard.types import Level, MatchStatus, Winner

from . import schema as s
from .base import Database
from .tournament_scope import played_in
from .views import WINNERS, judge_is

# Judgements of a player counted at most, to choose (`walks`): a player, or the rarer of a pair,
# with this many is walked. A pair's seek tests the other side in the side index, about 1 us a
# row, so a cell of two players this common costs about 0.1 s either way at a million judgements.
SEEK = 50_000


class Shown(str, Enum):
    """Which judgements a list keeps: the orders disagreed, a tie, or a winner."""

    INCONSISTENT = "inconsistent"
    TIES = "ties"
    DECIDED = "decided"


class Result(str, Enum):
    """A judgement's outcome for the player a list was asked about."""

    WIN = "win"
    LOSS = "loss"
    TIE = "tie"


@dataclass(frozen=True)
class JudgementQuery:
    """Which judgements to list: `judge`'s (`human`: every human voter's), narrowed by the
    rest (None: not narrowed); `upto` keeps ids at most that, so later pages hold still while
    new judgements land. `player` and `opponent` are names at `level`, one on each side (either
    alone: on one side and not the other); `result` is the outcome for `player`."""

    judge: str
    level: Level = Level.MODEL
    player: str | None = None
    opponent: str | None = None
    question_id: str | None = None
    shown: Shown | None = None
    tournament_id: int | None = None
    upto: int | None = None
    limit: int = 100
    offset: int = 0


@dataclass(frozen=True)
class SideSummary:
    """One side of a listed judgement: the submission and the length of its output."""

    id: int
    model: str
    scenario: str
    output_chars: int


@dataclass(frozen=True)
class JudgementSummary:
    """A listed judgement: its sides as judged, the outcome for a, whether the orders agreed,
    and (when the list named a player) the outcome for that player."""

    id: int
    judge: str
    criteria: str
    question_id: str
    a: SideSummary
    b: SideSummary
    outcome: Winner
    consistent: bool
    created_at: float
    result: Result | None = None


class JudgementLists(Database):
    """Lists of judgements, newest first, narrowed as the page asks (see the module docstring)."""

    def list_judgements(self, query: JudgementQuery) -> list[JudgementSummary]:
        """`query.limit` judgements from `query.offset`, newest first (ids grow with storage)."""
        with self._read() as conn:
            ids = list(conn.execute(_page(conn, query)).scalars())
            found = {r.id: r for r in conn.execute(_summaries(ids))} if ids else {}
        return [_summary(found[i], query) for i in ids]


# ---- the query --------------------------------------------------------------------------------


def _is(side: Any, keys: Sequence[PlayerKey]) -> ColumnElement[bool]:
    """The SQL test for a submission (`side`, a submissions alias) being one of `keys`."""
    tests = [and_(*([side.c.model == k.model] if k.model is not None else []),
                  *([side.c.scenario == k.scenario] if k.scenario is not None else []))
             for k in keys]
    return or_(*tests) if tests else false()


def _narrowed(query: JudgementQuery, *, hide_judge: bool = False) -> list[ColumnElement[bool]]:
    """The tests on the judgement row itself: judge, outcome, agreement, tournament, `upto`.
    `hide_judge` hides the judge's indexes from the planner (a seek on SQLite, see `_steered`)."""
    j, m = s.judgements, s.matches
    tests = [judge_is(j.c.judge, query.judge, indexed=not hide_judge)]
    if query.shown is Shown.INCONSISTENT:
        tests.append(j.c.consistent == false())
    elif query.shown is Shown.TIES:
        tests.append(j.c.outcome == Winner.TIE.value)
    elif query.shown is Shown.DECIDED:
        tests.append(j.c.outcome.in_([Winner.A.value, Winner.B.value]))
    if query.upto is not None:
        tests.append(j.c.id <= query.upto)
    if query.tournament_id is not None:
        # per judgement, through ix_matches_judgement: a tournament is never the way in
        tests.append(select(m.c.id).where(m.c.judgement_id == j.c.id, m.c.status == MatchStatus.DONE,
                                          played_in(query.tournament_id)).exists())
    return tests


def _steered(conn: Connection) -> bool:
    """Whether a seek must hide the indexes it must not take: SQLite keeps no statistics, and
    would walk the judge's index (or probe a side index once per pair of submission ids)
    rather than start from the few submissions sought. PostgreSQL's planner knows better, and
    hidden indexes would only blind it."""
    return conn.dialect.name == "sqlite"


def _page(conn: Connection, query: JudgementQuery) -> Select:
    """The ids of the page: walked or sought (module docstring), whichever reads fewer rows."""
    steer = _steered(conn)
    names = [name for name in (query.player, query.opponent) if name is not None]
    if not names:
        return _walk(query, []) if query.question_id is None else _question(query, steer)
    if len(names) == 2 and names[0] == names[1]:  # a player never meets itself at its level
        return select(s.judgements.c.id).where(false())
    named = [keys_of(name, query.level) for name in names]
    other = named[1] if len(named) == 2 else None
    if query.question_id is not None:  # a question's few submissions are always the way in
        return _sought(query, named[0], other, steer)
    rows = query.offset + query.limit
    total = int(conn.execute(select(func.max(s.judgements.c.id))).scalar_one() or 0)
    # Past sqrt(rows * total) judgements a lone player is common enough that the walk reads less.
    cap = SEEK if other is not None else min(SEEK, math.isqrt(rows * total) + 1)
    counts = [_count(conn, keys, cap) for keys in named]
    if walks(rows, counts, cap, total):
        return _walk(query, named)
    if other is not None and counts[1] < counts[0]:
        return _sought(query, other, named[0], steer)
    return _sought(query, named[0], other, steer)


def walks(rows: int, counts: Sequence[int], cap: int, total: int) -> bool:
    """Whether a walk finds `rows` reading fewer judgements than a seek reads: the player's (and
    opponent's) judgements `counts` (counted up to `cap`) of `total`. A seek reads the fewest
    player's; a walk about `rows` over the share of judgements the page keeps, the players taken
    as common in the judge's judgements as in all, two players meeting at random. (Both read a
    row for a few microseconds at a million judgements: SQLite, one core.)"""
    fewest = min(counts)
    if fewest >= cap:
        return True
    share = 1.0
    for count in counts:
        share *= count / total if total else 0.0
    if len(counts) == 2:
        share /= 2  # each of the two on either side: 2 * (p/2) * (o/2)
    return share > 0 and rows / share <= fewest


def _question(query: JudgementQuery, steer: bool) -> Select:
    """A question's judgements, through its submissions on side a (b answers the same question)."""
    j, sp = s.judgements, s.submissions.alias("sp")
    return (select(j.c.id).select_from(sp).join(j, j.c.a_id == sp.c.id)
            .where(sp.c.question_id == query.question_id, *_narrowed(query, hide_judge=steer))
            .order_by(_unordered(j.c.id).desc()).limit(query.limit).offset(query.offset))


def _sought(query: JudgementQuery, keys: list[PlayerKey], other: list[PlayerKey] | None, steer: bool) -> Select:
    """The page from the submissions of `keys` (with `other` on the other side, when given):
    each side's newest rows, then the two together (a judgement is in one only)."""
    j = s.judgements
    rows = query.offset + query.limit
    branches = [_seek(query, keys, other, on_a, steer).order_by(_unordered(j.c.id).desc()).limit(rows)
                .subquery()
                for on_a in (True, False)]
    page = union_all(*(select(b.c.id) for b in branches)).subquery()
    return select(page.c.id).order_by(page.c.id.desc()).limit(query.limit).offset(query.offset)


def _unordered(column: ColumnElement[int]) -> ColumnElement[int]:
    """`column` to sort a seek's rows by, hiding its index order from the planner: with a LIMIT,
    both backends would rather walk the id index backwards (on PostgreSQL's estimate that the
    rows sought are spread evenly: a side of a pair rarely is) than start from the submissions."""
    return column + 0


def _walk(query: JudgementQuery, named: list[list[PlayerKey]]) -> Select:
    """The judge's judgements newest first, each tested as it comes (see the module docstring):
    with one of `named` on a side, the other (if any) on the other."""
    j = s.judgements
    found = select(j.c.id).where(*_narrowed(query))
    if named:
        sa, sb = s.submissions.alias("sa"), s.submissions.alias("sb")
        found = (found.join(sa, sa.c.id == j.c.a_id).join(sb, sb.c.id == j.c.b_id)
                 .where(or_(_pair(sa, sb, named), _pair(sb, sa, named))))
    return found.order_by(j.c.id.desc()).limit(query.limit).offset(query.offset)


def _pair(mine: Any, theirs: Any, named: list[list[PlayerKey]]) -> ColumnElement[bool]:
    """`mine` is the first named, `theirs` the second (one name: not the first; two players'
    submissions are never the same one, their names differing)."""
    first = named[0]
    return and_(_is(mine, first), _is(theirs, named[1]) if len(named) == 2 else not_(_is(theirs, first)))


def _seek(query: JudgementQuery, keys: list[PlayerKey], other: list[PlayerKey] | None, on_a: bool,
          steer: bool) -> Select:
    """The judgements with a submission of `keys` on side a (`on_a`) or b, and on the other side
    one of `other` (when given) or anything but `keys`; from the submissions of `keys`.

    On SQLite (`steer`) the other side is tested as a set of ids in the side index's second
    column, never a way into it, so only the rows kept are read; PostgreSQL's planner costs a
    set test on a side as a filter it cannot start from, and is given the other submission
    joined instead."""
    j = s.judgements
    sp = s.submissions.alias("sp")
    mine, theirs = (j.c.a_id, j.c.b_id) if on_a else (j.c.b_id, j.c.a_id)
    found = (select(j.c.id).select_from(sp).join(j, mine == sp.c.id)
             .where(_is(sp, keys), *_narrowed(query, hide_judge=steer)))
    if query.question_id is not None:
        found = found.where(sp.c.question_id == query.question_id)
    if not steer:
        so = s.submissions.alias("so")
        return found.join(so, so.c.id == theirs).where(_is(so, other) if other is not None else not_(_is(so, keys)))
    theirs = theirs + 0
    return found.where(theirs.in_(_ids(other)) if other is not None else theirs.not_in(_ids(keys)))


def _ids(keys: list[PlayerKey]) -> Select:
    """The ids of the submissions of `keys`."""
    sub = s.submissions.alias("ids")
    return select(sub.c.id).where(_is(sub, keys))


def _count(conn: Connection, keys: list[PlayerKey], cap: int) -> int:
    """The judgements naming a submission of `keys` on either side (any judge), counted up to
    `cap` (through the submissions' and the sides' indexes only)."""
    j, sp = s.judgements, s.submissions.alias("sp")
    found = 0
    for column in (j.c.a_id, j.c.b_id):
        named = (select(column).select_from(sp).join(j, column == sp.c.id).where(_is(sp, keys))
                 .limit(cap - found).subquery())
        found += int(conn.execute(select(func.count()).select_from(named)).scalar_one())
        if found >= cap:
            break
    return found


def _summaries(ids: Sequence[int]) -> Select:
    """The listed judgements' rows with both sides' model, scenario and output length."""
    j = s.judgements
    sa, sb = s.submissions.alias("sa"), s.submissions.alias("sb")
    return (select(j.c.id, j.c.judge, j.c.criteria, j.c.outcome, j.c.consistent, j.c.created_at, sa.c.question_id,
                   sa.c.id.label("a_id"), sa.c.model.label("a_model"), sa.c.scenario.label("a_scenario"),
                   func.length(sa.c.output).label("a_chars"),
                   sb.c.id.label("b_id"), sb.c.model.label("b_model"), sb.c.scenario.label("b_scenario"),
                   func.length(sb.c.output).label("b_chars"))
            .join(sa, sa.c.id == j.c.a_id).join(sb, sb.c.id == j.c.b_id).where(j.c.id.in_(list(ids))))


def _summary(row: Any, query: JudgementQuery) -> JudgementSummary:
    outcome = WINNERS[row.outcome]
    a = SideSummary(row.a_id, row.a_model, row.a_scenario, int(row.a_chars))
    b = SideSummary(row.b_id, row.b_model, row.b_scenario, int(row.b_chars))
    return JudgementSummary(id=row.id, judge=row.judge, criteria=row.criteria, question_id=row.question_id, a=a,
                            b=b, outcome=outcome, consistent=bool(row.consistent), created_at=row.created_at,
                            result=_result(a, outcome, query))


def _result(a: SideSummary, outcome: Winner, query: JudgementQuery) -> Result | None:
    """The outcome for the query's player (None when it named none)."""
    if query.player is None:
        return None
    if outcome is Winner.TIE:
        return Result.TIE
    player_is_a = player_of(a.model, a.scenario, query.level) == query.player
    return Result.WIN if (outcome is Winner.A) == player_is_a else Result.LOSS
