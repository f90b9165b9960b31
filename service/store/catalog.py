"""What the pages list beside the boards: tournaments by name for the selector, and how long
each system's outputs are. Both are read in one query each and are cheap to repeat."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select

from . import schema as s
from .base import Database
from .submissions import PLACEHOLDER_HASH


@dataclass(frozen=True)
class TournamentName:
    """A tournament as a selector lists it: no counts (those cost a scan of its matches)."""

    id: int
    name: str
    schedule: str | None
    parent_id: int | None


@dataclass(frozen=True)
class OutputLength:
    """How many outputs a (model, scenario) submitted and their mean length in characters."""

    model: str
    scenario: str
    outputs: int
    mean_chars: float


class Catalog(Database):
    """Tournament names and output lengths for the pages."""

    def tournament_names(self, *, limit: int = 200) -> list[TournamentName]:
        """The newest tournaments that are not runs of another (a schedule's runs and an
        import's layers are reached through their parent), newest first."""
        t = s.tournaments
        query = (select(t.c.id, t.c.name, t.c.schedule, t.c.parent_id).where(t.c.parent_id.is_(None))
                 .order_by(t.c.id.desc()).limit(limit))
        with self._read() as conn:
            return [TournamentName(r.id, r.name, r.schedule, r.parent_id) for r in conn.execute(query)]

    def submission_mark(self) -> int:
        """The newest submission's id: output lengths change only when it moves."""
        sub = s.submissions
        with self._read() as conn:
            return int(conn.execute(select(func.coalesce(func.max(sub.c.id), 0))).scalar_one())

    def output_lengths(self, *, after_id: int = 0) -> tuple[list[OutputLength], int]:
        """Every (model, scenario)'s output count and mean length (placeholders left out), by model
        then scenario, over the submissions after `after_id`; and the newest id they include. Why
        the bound: a page keeps the sums and adds only new submissions (writers are serialised, so
        ids commit in order and none below the bound arrives later)."""
        sub = s.submissions
        with self._read() as conn:
            upto = int(conn.execute(select(func.coalesce(func.max(sub.c.id), 0))).scalar_one())
            if upto <= after_id:
                return [], after_id
            query = (select(sub.c.model, sub.c.scenario, func.count().label("n"),
                            func.avg(func.length(sub.c.output)).label("mean"))
                     .where(sub.c.output_hash != PLACEHOLDER_HASH,  # an import's stand-ins have no real output
                            sub.c.id > after_id, sub.c.id <= upto)
                     .group_by(sub.c.model, sub.c.scenario).order_by(sub.c.model, sub.c.scenario))
            return [OutputLength(r.model, r.scenario, int(r.n), float(r.mean or 0.0))
                    for r in conn.execute(query)], upto
