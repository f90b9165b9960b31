"""Read models over matches and judgements: the listings and the rows ratings are computed from."""
from __future__ import annotations

import json
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement, Select

from leaderboard.dimensions import CRITERIA as DIMENSIONS_CRITERIA
from leaderboard.dimensions import stored_outcome
from leaderboard.judge_health import HUMAN_PREFIX
from leaderboard.judges import HUMANS, JudgeSummary
from leaderboard.players import SideRow, StyledRow
from leaderboard.types import MatchStatus, Winner

from . import schema as s
from .base import Database, NotFound
from .tournament_scope import counted_in, played_in

WINNERS = {w.value: w for w in Winner}  # a dict lookup: Winner(value) costs a second per million rows
RARE = 8  # a judge with fewer than 1 in RARE of the resolved matches is read through its own index


class Views(Database):
    """Read models over matches and judgements: the listings and the rows ratings are computed from."""

    def tournament_judgements(self, tournament_id: int, *, limit: int | None = None, offset: int = 0) -> list[dict]:
        """The judgements of a tournament's matches, oriented to each match's (a, b), in match
        order: all of them, or `limit` from `offset`; raises NotFound."""
        m, j, sa = s.matches, s.judgements, s.submissions
        with self._read() as conn:
            if conn.execute(select(s.tournaments.c.id).where(s.tournaments.c.id == tournament_id)).first() is None:
                raise NotFound(f"no tournament {tournament_id}")
            rows = conn.execute(
                select(
                    m.c.id.label("match_id"),
                    m.c.a_id.label("match_a"),
                    m.c.b_id.label("match_b"),
                    m.c.outcome.label("match_outcome"),
                    m.c.consistent.label("match_consistent"),
                    sa.c.output_hash.label("match_a_hash"),
                    j.c.id, j.c.judge, j.c.criteria, j.c.a_id, j.c.b_id, j.c.a_hash, j.c.calls,
                    j.c.input_tokens, j.c.output_tokens, j.c.cost_usd, j.c.created_at,
                )
                .join(j, j.c.id == m.c.judgement_id)
                .join(sa, sa.c.id == m.c.a_id)
                .where(m.c.tournament_id == tournament_id, m.c.status == MatchStatus.DONE)
                .order_by(m.c.id)
                .limit(limit)
                .offset(offset)
            ).all()
        return [
            {
                "match_id": r.match_id,
                "judgement_id": r.id,
                "a": r.match_a,
                "b": r.match_b,
                "outcome": r.match_outcome,
                "consistent": bool(r.match_consistent),
                "judge": r.judge,
                "criteria": r.criteria,
                "calls": _calls_for(
                    json.loads(r.calls), (r.a_id, r.b_id), (r.match_a, r.match_b), r.a_hash == r.match_a_hash
                ),
                "input_tokens": r.input_tokens,
                "output_tokens": r.output_tokens,
                "cost_usd": r.cost_usd,
                "created_at": r.created_at,
            }
            for r in rows
        ]

    def side_rows_since(
        self, after_seq: int, *, judge: str | None = None, limit: int | None = None
    ) -> tuple[list[SideRow], int]:
        """The counted rows resolved after `after_seq`, in seq order, and the seq read up to.

        An incremental board adds the rows and passes the returned seq next time, so no row is
        missed or read twice. The seq bound is the `resolved` counter, read first: every match
        stamped at or below it has committed (the counter and the stamp share a transaction, and
        the counter row serialises writers), so no later read finds a gap below it. With `limit`,
        a full batch returns the seq of its last row instead; call again until a batch is short.
        """
        m, j = s.matches, s.judgements
        with self._read() as conn:
            upto = int(conn.execute(select(s.counters.c.value).where(s.counters.c.name == "resolved")).scalar_one())
            if upto <= after_seq:
                return [], after_seq
            # No status test: only resolve_match stamps a seq, so a seq means "done", and without
            # one SQLite walks the seq index instead of every done match (then sorting them).
            query = _side_query(m.c.seq, done=False).where(m.c.counted.is_(True), m.c.seq > after_seq, m.c.seq <= upto)
            if judge is not None:
                # The judge's own index is the short way only to a judge with few verdicts, on a
                # first read; the rows since the last read, or most rows, are along the seq index.
                rare = after_seq == 0 and _verdicts(conn, judge) * RARE < upto
                query = query.join(j, j.c.id == m.c.judgement_id).where(judge_is(j.c.judge, judge, indexed=rare))
            if limit is not None:
                query = query.limit(limit)
            rows = conn.execute(query).all()
        if limit is not None and len(rows) == limit:
            upto = int(rows[-1].seq)
        return [SideRow(am, asc, bm, bsc, WINNERS[outcome], q) for _, outcome, am, asc, bm, bsc, q in rows], upto

    def side_rows(
        self, *, tournament_id: int | None = None, judge: str | None = None, after_seq: int = 0,
        turn: int | None = None,
    ) -> list[SideRow]:
        """One row per (judgement, pair of submissions), in resolve order, for the ratings.

        A judgement reached by several matches (several tournaments, nightly re-runs) counts once
        for the same two submissions: overall, the match flagged `counted`; within a tournament
        (and its runs), its first match there. `after_seq` reads only what was resolved since;
        `turn`, only the judgements on that turn of multi-turn questions (`leaderboard.turns`).
        """
        if tournament_id is not None and after_seq:
            raise ValueError("after_seq reads the overall board only: a tournament's rows dedupe over all its runs")
        m = s.matches
        query = _side_query(m.c.judgement_id, m.c.a_id, m.c.b_id, turn=turn).where(m.c.seq > after_seq)
        return [_side_row(r) for r in self._counted_pairs(query, tournament_id=tournament_id, judge=judge)]

    def styled_side_rows(
        self, *, tournament_id: int | None = None, judge: str | None = None, turn: int | None = None
    ) -> list[StyledRow]:
        """`side_rows` with both outputs, for style control (which measures them)."""
        m = s.matches
        query = _side_query(m.c.judgement_id, m.c.a_id, m.c.b_id, outputs=True, turn=turn)
        return [StyledRow(_side_row(r), r.a_output, r.b_output)
                for r in self._counted_pairs(query, tournament_id=tournament_id, judge=judge)]

    def _counted_pairs(self, query: Select, *, tournament_id: int | None, judge: str | None) -> list[Any]:
        """The rows of `query` a board counts: overall, the `counted` matches; within a
        tournament (and its runs), the first match of each (judgement, pair of submissions)."""
        m, j = s.matches, s.judgements
        query = query.where(counted_in(tournament_id))
        if judge is not None:
            query = query.join(j, j.c.id == m.c.judgement_id).where(judge_is(j.c.judge, judge))
        seen: set[tuple[int, int, int]] = set()
        rows = []
        with self._read() as conn:
            for r in conn.execute(query):
                if tournament_id is not None:
                    pair = (r.judgement_id, min(r.a_id, r.b_id), max(r.a_id, r.b_id))
                    if pair in seen:
                        continue
                    seen.add(pair)
                rows.append(r)
        return rows


    def dimension_side_rows(
        self, dimension: str, *, tournament_id: int | None = None, judge: str | None = None,
        turn: int | None = None,
    ) -> list[SideRow]:
        """`side_rows` over `dimensions` judgements only, each row's winner being one dimension's
        outcome: derived from the stored calls (the consistency rule applied to that dimension)
        and oriented to the match's (a, b). Judgements whose calls lack the dimension are skipped."""
        m, j = s.matches, s.judgements
        query = (
            _side_query(m.c.judgement_id, m.c.a_id, m.c.b_id, j.c.a_id.label("judged_a"), j.c.b_id.label("judged_b"),
                        j.c.a_hash, j.c.calls, match_a_hash=True, turn=turn)
            .join(j, j.c.id == m.c.judgement_id)
            .where(j.c.criteria == DIMENSIONS_CRITERIA, counted_in(tournament_id))
        )
        if judge is not None:
            query = query.where(judge_is(j.c.judge, judge))
        seen: set[tuple[int, int, int]] = set()
        rows: list[SideRow] = []
        with self._read() as conn:
            for r in conn.execute(query):
                pair = (r.judgement_id, min(r.a_id, r.b_id), max(r.a_id, r.b_id))
                if pair in seen:
                    continue
                seen.add(pair)
                outcome = stored_outcome(json.loads(r.calls), r.judged_a, r.judged_b, dimension)
                if outcome is None:
                    continue
                winner = outcome.winner if r.a_hash == r.match_a_hash else outcome.winner.flipped()
                rows.append(SideRow(r.a_model, r.a_scenario, r.b_model, r.b_scenario, winner, r.question_id))
        return rows

    def judge_summaries(
        self, *, tournament_id: int | None = None, after_seq: int = 0
    ) -> tuple[list[JudgeSummary], int]:
        """Per judge with verdicts on the board's scope: how many it counts there and the newest
        tournament one came in; and the seq read up to.

        Overall (no tournament): the matches resolved after `after_seq` (verdicts: the counted
        ones; the newest tournament: any), read like `side_rows_since` (the seq bound first), so
        summaries can be merged run after run (`leaderboard.judges.merge`). For a tournament and its runs: every verdict there, one per
        judgement and pair of submissions, as its board counts them (`after_seq` must be 0).
        """
        m, j = s.matches, s.judgements
        with self._read() as conn:
            upto = int(conn.execute(select(s.counters.c.value).where(s.counters.c.name == "resolved")).scalar_one())
            if tournament_id is None:
                if upto <= after_seq:
                    return [], after_seq
                query = (
                    select(j.c.judge, func.sum(case((m.c.counted.is_(True), 1), else_=0)).label("verdicts"),
                           func.max(m.c.tournament_id).label("latest"))
                    .join(j, j.c.id == m.c.judgement_id)
                    .where(m.c.seq > after_seq, m.c.seq <= upto)
                    .group_by(j.c.judge)
                )
                return [JudgeSummary(r.judge, int(r.verdicts or 0), r.latest) for r in conn.execute(query)], upto
            if after_seq:
                raise ValueError("after_seq reads the overall summaries only: a tournament's dedupe over all its runs")
            query = (
                select(j.c.judge, m.c.judgement_id, m.c.a_id, m.c.b_id, m.c.tournament_id)
                .join(j, j.c.id == m.c.judgement_id)
                .where(played_in(tournament_id), m.c.status == MatchStatus.DONE)
            )
            verdicts: dict[str, set[tuple[int, int, int]]] = {}
            latest: dict[str, int] = {}
            for r in conn.execute(query):
                verdicts.setdefault(r.judge, set()).add((r.judgement_id, min(r.a_id, r.b_id), max(r.a_id, r.b_id)))
                latest[r.judge] = max(latest.get(r.judge, 0), r.tournament_id)
        return [JudgeSummary(name, len(found), latest[name]) for name, found in verdicts.items()], upto


def _verdicts(conn: Connection, judge: str) -> int:
    """How many judgements the judge made (its index only)."""
    j = s.judgements
    return int(conn.execute(select(func.count()).select_from(j).where(judge_is(j.c.judge, judge))).scalar_one())


def judge_is(column: ColumnElement, judge: str, *, indexed: bool = True) -> ColumnElement:
    """The SQL test for one judge's verdicts; `human` (leaderboard.judges.HUMANS) is every human voter's.

    `indexed=False` hides the judge's index from the planner (`judge || ''`): SQLite, which keeps
    no statistics, prefers an equality on an index to a range on another, and would read every
    verdict of the judge to find the few resolved since a seq."""
    if not indexed:
        column = column.concat("")
    if judge == HUMANS:
        return column.startswith(HUMAN_PREFIX, autoescape=True)
    return column == judge


def _side_row(r: Any) -> SideRow:
    return SideRow(r.a_model, r.a_scenario, r.b_model, r.b_scenario, Winner(r.outcome), r.question_id)


def _side_query(*extra: Any, done: bool = True, match_a_hash: bool = False, outputs: bool = False,
                turn: int | None = None) -> Select:
    """Matches (`done` ones only, by default) with both sides' model and scenario and the
    question (and, when asked, the output hash of the match's a, or both outputs), in resolve
    order; with `turn`, only those on that turn (both sides answer one question: a's turn is it)."""
    m = s.matches
    sa, sb = s.submissions.alias("sa"), s.submissions.alias("sb")
    query = (
        select(
            *extra,
            m.c.outcome,
            sa.c.model.label("a_model"),
            sa.c.scenario.label("a_scenario"),
            sb.c.model.label("b_model"),
            sb.c.scenario.label("b_scenario"),
            sa.c.question_id,
            *([sa.c.output_hash.label("match_a_hash")] if match_a_hash else []),
            *([sa.c.output.label("a_output"), sb.c.output.label("b_output")] if outputs else []),
        )
        .join(sa, sa.c.id == m.c.a_id)
        .join(sb, sb.c.id == m.c.b_id)
        .order_by(m.c.seq)
    )
    if turn is not None:
        query = query.where(sa.c.turn == turn)
    return query.where(m.c.status == MatchStatus.DONE) if done else query


def _calls_for(calls: list[dict], judged: tuple[int, int], match: tuple[int, int], same_side: bool) -> list[dict]:
    """Calls re-labelled with the match's submission ids.

    A match may reuse a judgement made for other submissions with the same contents, possibly
    the other way round; `same_side` says whether the match's a holds the judgement's a content.
    """
    relabel = {judged[0]: match[0], judged[1]: match[1]} if same_side else {judged[0]: match[1], judged[1]: match[0]}
    return [{**call, "first": relabel.get(call["first"], call["first"])} for call in calls]
