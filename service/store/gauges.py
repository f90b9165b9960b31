"""Aggregates the API's /metrics reads at scrape time (`service.ops.metrics`): cheap on a big store.

Matches and tournaments by status are one GROUP BY each (matches' over `ix_matches_status`).
Judgements are written once and never change their tokens or cost, so their totals are summed
incrementally: `judgement_totals_since(after_id)` reads only the rows added since the last scrape
(over the primary key) and the caller adds them up.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select

from . import schema as s
from .base import Database


@dataclass(frozen=True)
class JudgeTotals:
    """What one judge's judgements hold: how many, their tokens in and out, and what they cost
    (USD; judgements without a price count nothing)."""

    judgements: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: JudgeTotals) -> JudgeTotals:
        return JudgeTotals(self.judgements + other.judgements, self.input_tokens + other.input_tokens,
                           self.output_tokens + other.output_tokens, self.cost_usd + other.cost_usd)


class Gauges(Database):
    """Counts by status and judgement totals, for /metrics."""

    def status_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Matches by status and tournaments by status."""
        m, t = s.matches, s.tournaments
        with self._read() as conn:
            matches = dict(conn.execute(select(m.c.status, func.count()).group_by(m.c.status)).all())
            tournaments = dict(conn.execute(select(t.c.status, func.count()).group_by(t.c.status)).all())
        return {k: int(v) for k, v in matches.items()}, {k: int(v) for k, v in tournaments.items()}

    def judgement_totals_since(self, after_id: int) -> tuple[int, dict[str, JudgeTotals]]:
        """Per judge, the totals of the judgements with id > `after_id`; and the largest id read
        (`after_id` when there is none)."""
        j = s.judgements
        with self._read() as conn:
            last = conn.execute(select(func.max(j.c.id))).scalar()
            if last is None or last <= after_id:
                return after_id, {}
            rows = conn.execute(
                select(j.c.judge, func.count(), func.coalesce(func.sum(j.c.input_tokens), 0),
                       func.coalesce(func.sum(j.c.output_tokens), 0), func.coalesce(func.sum(j.c.cost_usd), 0.0))
                .where(j.c.id > after_id, j.c.id <= last)
                .group_by(j.c.judge)
            ).all()
        return int(last), {r[0]: JudgeTotals(int(r[1]), int(r[2]), int(r[3]), float(r[4])) for r in rows}

    def unrecorded_spend(self) -> float:
        """USD paid by match attempts that no stored judgement records (`matches.failed_cost_usd`)."""
        m = s.matches
        with self._read() as conn:
            return float(conn.execute(select(func.coalesce(func.sum(m.c.failed_cost_usd), 0.0))).scalar_one())
