"""What a judge panel's matches read: whether a member's verdict on a pair is still to come,
and the panel's own run of a `separate` panel's copy run."""
from __future__ import annotations

from sqlalchemy import ColumnElement, Table, and_, or_, select

from leaderboard.spec import RunSpec

from . import schema as s
from .base import ACTIVE, Database


def _same_pair(m: Table, a_id: int, b_id: int) -> ColumnElement[bool]:
    """The two submissions, in either order."""
    c = m.c
    return or_(and_(c.a_id == a_id, c.b_id == b_id), and_(c.a_id == b_id, c.b_id == a_id))


class Panels(Database):
    """Reads for `workers.panel` over a panel's run and its members' runs (`parent_id`)."""

    def members_waiting(self, tournament_id: int, a_id: int, b_id: int) -> list[str]:
        """The judges of the panel run's member runs whose match of this pair is still active
        (pending, queued or running): their verdicts are still to come."""
        m, t = s.matches, s.tournaments
        with self._read() as conn:
            rows = conn.execute(
                select(t.c.spec).join(m, m.c.tournament_id == t.c.id)
                .where(t.c.parent_id == tournament_id, m.c.status.in_(ACTIVE), _same_pair(m, a_id, b_id))
            ).scalars().all()
        return sorted({RunSpec.from_json(spec).judge for spec in rows})

    def parent_of(self, tournament_id: int) -> int:
        """The run a run is listed under (a `separate` panel's copy run: the panel's own run)."""
        t = s.tournaments
        with self._read() as conn:
            parent = conn.execute(select(t.c.parent_id).where(t.c.id == tournament_id)).scalar()
        if parent is None:
            raise ValueError(f"tournament {tournament_id} is no run of another")
        return int(parent)
