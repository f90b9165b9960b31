"""Answers for the gaming flags (`leaderboard.flags`): which submissions each (model, scenario)
has, then the question and output of a sample of them. Two queries, so a board's flags read a
few outputs per player rather than every output stored."""
from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from leaderboard.flags import Answer

from . import schema as s
from .base import Database
from .submissions import CHUNK, PLACEHOLDER_HASH


class Answers(Database):
    """Submission ids by (model, scenario) and the answers of chosen ids, placeholders left out."""

    def submission_keys(self, *, after_id: int = 0, upto: int | None = None) -> list[tuple[int, str, str]]:
        """(id, model, scenario) of every submission with an output (not an import's placeholder),
        in id order; only those after `after_id` (and up to `upto`): the flags add new ones."""
        t = s.submissions
        query = (select(t.c.id, t.c.model, t.c.scenario)
                 .where(t.c.output_hash != PLACEHOLDER_HASH, t.c.id > after_id).order_by(t.c.id))
        if upto is not None:
            query = query.where(t.c.id <= upto)
        with self._read() as conn:
            return [(int(r.id), r.model, r.scenario) for r in conn.execute(query)]

    def answers(self, ids: Sequence[int]) -> dict[int, Answer]:
        """Submission id -> its question and output, for the ids that exist (500 ids a statement)."""
        t = s.submissions
        wanted = sorted(set(ids))
        found: dict[int, Answer] = {}
        with self._read() as conn:
            for start in range(0, len(wanted), CHUNK):
                rows = conn.execute(select(t.c.id, t.c.question, t.c.output).where(t.c.id.in_(wanted[start:start + CHUNK])))
                found.update((int(r.id), Answer(r.question, r.output)) for r in rows)
        return found
