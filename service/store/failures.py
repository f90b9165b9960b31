"""Why a run's matches failed: their last errors grouped by message, for the tournament page.

A broken judge fails many matches with one message (a revoked key, a retired model), so the
page shows each message once with how many matches it failed and the newest few of them, rather
than a list of matches. Reading it costs a fixed four queries however many matches failed; each
starts from the index on (tournament_id, status).
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import distinct, func, literal_column, select

from leaderboard.types import MatchStatus

from . import schema as s
from .base import Database, NotFound

NO_ERROR = ""  # the message of a failed match that recorded none


@dataclass(frozen=True)
class FailedMatch:
    """One failed match: an example of its message."""

    match_id: int
    a_id: int
    b_id: int
    attempts: int
    finished_at: float | None


@dataclass(frozen=True)
class FailureGroup:
    """The failed matches that share one last error (`NO_ERROR` when none was recorded)."""

    error: str
    matches: int
    examples: tuple[FailedMatch, ...]  # the newest first


@dataclass(frozen=True)
class FailureReport:
    """A run's failed matches: how many, by how many messages, the largest groups first, and
    its current streak of matches failed in a row with no judgement between (what a "failing"
    stop counts)."""

    failed: int
    messages: int
    streak: int
    groups: tuple[FailureGroup, ...]

    @property
    def unshown(self) -> int:
        """Failed matches whose message is not among `groups`."""
        return self.failed - sum(g.matches for g in self.groups)


class Failures(Database):
    """Failed matches grouped by their last error."""

    def tournament_failures(self, tournament_id: int, *, groups: int = 5, examples: int = 3) -> FailureReport:
        """The run's failed matches by message: the `groups` messages that failed the most
        matches, each with its `examples` newest matches; raises NotFound."""
        t, m = s.tournaments, s.matches
        failed = (m.c.tournament_id == tournament_id, m.c.status == MatchStatus.FAILED)
        error = func.coalesce(m.c.last_error, literal_column("''"))  # no bound value: the same SQL wherever it recurs
        newest = func.row_number().over(partition_by=error,
                                        order_by=(m.c.finished_at.desc().nulls_last(), m.c.id.desc()))
        with self._read() as conn:
            streak = conn.execute(select(t.c.failure_streak).where(t.c.id == tournament_id)).scalar()
            if streak is None:
                raise NotFound(f"no tournament {tournament_id}")
            total, messages = conn.execute(select(func.count(), func.count(distinct(error))).where(*failed)).one()
            top = conn.execute(
                select(error.label("error"), func.count().label("n")).where(*failed)
                .group_by(error).order_by(func.count().desc(), error).limit(groups)
            ).all()
            ranked = (
                select(m.c.id, m.c.a_id, m.c.b_id, m.c.attempts, m.c.finished_at, error.label("error"),
                       newest.label("place"))
                .where(*failed, error.in_([row.error for row in top]))
                .subquery()
            )
            rows = conn.execute(select(ranked).where(ranked.c.place <= examples).order_by(ranked.c.place)).all()
        found: dict[str, list[FailedMatch]] = {}
        for row in rows:
            found.setdefault(row.error, []).append(
                FailedMatch(row.id, row.a_id, row.b_id, row.attempts, row.finished_at))
        return FailureReport(
            failed=int(total), messages=int(messages), streak=int(streak),
            groups=tuple(FailureGroup(row.error, int(row.n), tuple(found.get(row.error, ()))) for row in top),
        )
