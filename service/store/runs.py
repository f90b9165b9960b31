"""A tournament's runs and its pace, as the tournaments pages show them.

A recurring tournament starts a child run at each due time, and an import files repeated verdicts
on one pair in child "layers"; both carry `parent_id`. The pages list them under their parent
instead of as tournaments of their own. However many parents a page shows, their runs cost two
queries: the children's rows, and one grouped count of the shown runs' matches.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from leaderboard.types import MatchStatus

from . import schema as s
from .base import Database
from .tournament_scope import is_run_of
from .tournaments import CHUNK, match_counts


@dataclass(frozen=True)
class RunRow:
    """One run as listed under its parent, with its matches counted."""

    id: int
    name: str
    status: str
    created_at: float
    finished_at: float | None
    matches_total: int
    matches_done: int
    matches_failed: int


@dataclass(frozen=True)
class RunList:
    """A parent's runs: how many there are and the newest few, newest first."""

    count: int
    newest: tuple[RunRow, ...]

    @property
    def latest(self) -> RunRow | None:
        return self.newest[0] if self.newest else None

    @property
    def older(self) -> int:
        """Runs not among `newest`."""
        return self.count - len(self.newest)


class Runs(Database):
    """A tournament's child runs and how fast it judges."""

    def runs_of(self, parent_ids: Sequence[int], *, newest: int = 10) -> dict[int, RunList]:
        """Each of `parent_ids`' runs (a parent without runs is absent), the newest `newest`
        of each with their match counts."""
        t = s.tournaments
        wanted = sorted(set(parent_ids))
        if not wanted:
            return {}
        query = (select(t.c.id, t.c.parent_id, t.c.name, t.c.status, t.c.created_at, t.c.finished_at)
                 .where(t.c.parent_id.in_(wanted)).order_by(t.c.id.desc()))
        with self._read() as conn:
            children: dict[int, list[Any]] = {}
            for row in conn.execute(query):
                children.setdefault(row.parent_id, []).append(row)
            shown = [row.id for rows in children.values() for row in rows[:newest]]
            counts: dict[int, dict[str, int]] = {}
            for start in range(0, len(shown), CHUNK):
                counts.update(match_counts(conn, shown[start:start + CHUNK]))
        return {parent: RunList(len(rows), tuple(_run_row(row, counts[row.id]) for row in rows[:newest]))
                for parent, rows in children.items()}

    def tournament_seq(self, tournament_id: int) -> int:
        """The newest resolve seq among the matches of a tournament and its runs (0 for none):
        its board and roster change only when it moves, whatever other tournaments resolve. One
        index lookup per run (`ix_matches_tournament_seq`)."""
        m, t = s.matches, s.tournaments
        newest = select(func.max(m.c.seq)).where(m.c.tournament_id == t.c.id).scalar_subquery()
        query = select(func.max(newest)).where(is_run_of(tournament_id))
        with self._read() as conn:
            return int(conn.execute(query).scalar() or 0)

    def judged_within(self, tournament_id: int, seconds: float) -> int:
        """How many of the run's matches were judged in the last `seconds` (by the store's
        clock, which stamps them): its pace."""
        m = s.matches
        since = self._clock() - seconds
        with self._read() as conn:
            return int(conn.execute(
                select(func.count()).select_from(m)
                .where(m.c.tournament_id == tournament_id, m.c.status == MatchStatus.DONE, m.c.finished_at >= since)
            ).scalar_one())


def _run_row(row: Any, counts: dict[str, int]) -> RunRow:
    return RunRow(id=row.id, name=row.name, status=row.status, created_at=row.created_at,
                  finished_at=row.finished_at, matches_total=sum(counts.values()),
                  matches_done=counts.get("done", 0), matches_failed=counts.get("failed", 0))
