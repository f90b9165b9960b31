"""Read models for judge health: judgements as plain records, and the matches lost to
unreadable verdicts, for `leaderboard.judge_health` to turn into statistics."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection
from typing import Any

from sqlalchemy import Select, func, or_, select

from leaderboard.judge_health import HUMAN_PREFIX, CallRecord, HealthReport, JudgeHealth, JudgementRecord, health_report
from leaderboard.spec import RunSpec
from leaderboard.types import MatchStatus, OrderPolicy, Winner

from . import schema as s
from .base import Database
from .imports import TEMPLATE_VERSION

WINNERS = {w.value: w for w in Winner}
PARSE_ERROR = "VerdictParseError"  # the prefix workers.jobs writes to last_error: "VerdictParseError: ..."


def _calls(raw: str) -> tuple[CallRecord, ...]:
    """The stored calls JSON as records; a call without a readable winner is skipped."""
    out = []
    for call in json.loads(raw):
        winner = WINNERS.get(str(call.get("winner", "")).upper())
        if winner is None:
            continue
        reminded = call.get("reminded")
        out.append(CallRecord(first=call.get("first"), winner=winner,
                              reminded=None if reminded is None else bool(reminded)))
    return tuple(out)


def _records_query(*extra: Any, turn: int | None = None) -> Select:
    """Judgements as health records read them, in id order: with both outputs' lengths; with
    `turn`, only those on that turn of multi-turn questions (a judgement's sides share a question)."""
    j = s.judgements
    sa, sb = s.submissions.alias("sa"), s.submissions.alias("sb")
    query = (
        select(j.c.judge, j.c.a_id, j.c.b_id, j.c.outcome, j.c.calls, j.c.consistent, j.c.order_policy,
               j.c.template_version, func.length(sa.c.output).label("a_length"),
               func.length(sb.c.output).label("b_length"), *extra)
        .join(sa, sa.c.id == j.c.a_id)
        .join(sb, sb.c.id == j.c.b_id)
        .order_by(j.c.id)
    )
    return query if turn is None else query.where(sa.c.turn == turn)


def _record(r: Any) -> JudgementRecord:
    """A stored judgement as health reads it; `imported` when a file gave it (its prompt
    version is the import's)."""
    return JudgementRecord(judge=r.judge, a_id=r.a_id, b_id=r.b_id, outcome=WINNERS[r.outcome], calls=_calls(r.calls),
                           a_length=r.a_length, b_length=r.b_length, consistent=bool(r.consistent),
                           order=None if r.order_policy is None else OrderPolicy(r.order_policy),
                           imported=r.template_version == TEMPLATE_VERSION)


class Health(Database):
    """What judge health is computed from: every judgement once, and parse-failed matches."""

    def health_records(self, judge: str | None = None) -> list[JudgementRecord]:
        """Every judgement of `judge` (of all judges when None), plus every human judgement
        (a judge's agreement with humans needs them), with both outputs' lengths."""
        query = _records_query()
        if judge is not None:
            j = s.judgements
            query = query.where(or_(j.c.judge == judge, j.c.judge.startswith(HUMAN_PREFIX, autoescape=True)))
        with self._read() as conn:
            return [_record(r) for r in conn.execute(query)]

    def health_records_since(
        self, after_id: int = 0, *, limit: int | None = None, turn: int | None = None
    ) -> tuple[list[JudgementRecord], int]:
        """The judgements stored after judgement `after_id` (at most `limit`), in id order, and
        the id read up to (`after_id` when none). Judgements are never changed or deleted, and
        ids are handed out in commit order (writers queue, see `base`), so reading on from the
        id read up to misses none and reads none twice: a running tally
        (`leaderboard.judge_health_tally`) reads only what is new. `turn`: only the judgements on that
        turn of multi-turn questions."""
        query = _records_query(s.judgements.c.id, turn=turn).where(s.judgements.c.id > after_id)
        if limit is not None:
            query = query.limit(limit)
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [_record(r) for r in rows], (rows[-1].id if rows else after_id)

    def parse_failures(self, judge: str | None = None, turn: int | None = None) -> dict[str, int]:
        """Per judge (its tournament's spec), how many matches failed with VerdictParseError (on
        `turn` only, when given)."""
        m, t, sa = s.matches, s.tournaments, s.submissions
        query = (
            select(t.c.spec, func.count(m.c.id).label("n"))
            .join(t, t.c.id == m.c.tournament_id)
            .where(m.c.status == MatchStatus.FAILED, m.c.last_error.startswith(PARSE_ERROR))
            .group_by(t.c.id, t.c.spec)
        )
        if turn is not None:
            query = query.join(sa, sa.c.id == m.c.a_id).where(sa.c.turn == turn)
        counts: Counter[str] = Counter()
        with self._read() as conn:
            for r in conn.execute(query):
                name = RunSpec.from_json(r.spec).judge
                if judge is None or name == judge:
                    counts[name] += int(r.n)
        return dict(counts)

    def health_report(self, judge: str | None = None, humans: Collection[str] | None = None) -> HealthReport:
        """The health of every judge (only `judge` when given), by name, against the votes of
        `humans` (every human judge when None), and the agreement between those votes."""
        return health_report(self.health_records(judge), self.parse_failures(judge),
                             None if judge is None else [judge], humans)

    def judge_health(self, judge: str | None = None, humans: Collection[str] | None = None) -> list[JudgeHealth]:
        """The health of every judge (only `judge` when given), by name."""
        return list(self.health_report(judge, humans).judges)
