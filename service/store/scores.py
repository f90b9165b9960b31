"""The score book: absolute scores one judge gave one submission under one criteria set.

Workers scoring with the `compqa` criteria set keep each submission's score here, once per
(submission, judge, criteria) (the table's unique key), and every later match of the submission
reuses it. Two workers scoring the same submission at once both pay, but only the first score
is kept and both matches use it. A score made with another prompt version
(`detail["template_version"]`) is replaced: the new prompt supersedes it, while the judgements
made with the old one keep its values in their calls. Imports keep theirs through
`Imports.add_scores` (same table).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, select, update
from sqlalchemy.exc import IntegrityError

from . import schema as s
from .base import Database
from .rows import KeptScore

CHUNK = 500  # ids per IN (...) clause: well under every backend's bound-parameter limit


class Scores(Database):
    """Find and keep single scores; list which judges scored under a criteria set."""

    def find_score(self, submission_id: int, judge: str, criteria: str) -> KeptScore | None:
        """The stored score (not `created`), or None."""
        with self._read() as conn:
            row = conn.execute(_score_query(submission_id, judge, criteria)).first()
        return None if row is None else KeptScore.of(row)

    def keep_score(self, submission_id: int, judge: str, criteria: str, total: float, detail: dict) -> KeptScore:
        """Store this score unless one of the same template version is stored (kept: that one),
        and return the score kept with `created` (whether it is this one)."""
        version = detail.get("template_version")
        row = {"submission_id": submission_id, "judge": judge, "criteria": criteria, "total": float(total),
               "detail": json.dumps(detail, sort_keys=True)}
        for _attempt in range(2):  # a racing insert between our read and our write: read again
            try:
                with self._write() as conn:
                    stored = conn.execute(_score_query(submission_id, judge, criteria)).first()
                    if stored is None:
                        conn.execute(s.scores.insert().values(**row, created_at=self._clock()))
                        return KeptScore(total=row["total"], detail=detail, created=True)
                    if json.loads(stored.detail or "{}").get("template_version") == version:
                        return KeptScore.of(stored)
                    conn.execute(update(s.scores).where(s.scores.c.id == stored.id)
                                 .values(total=row["total"], detail=row["detail"], created_at=self._clock()))
                    return KeptScore(total=row["total"], detail=detail, created=True)
            except IntegrityError:
                continue
        found = self.find_score(submission_id, judge, criteria)
        if found is None:  # pragma: no cover - the unique key held a row a moment ago
            raise RuntimeError(f"score of submission {submission_id} by {judge} vanished")
        return found

    def find_scores(self, submission_ids: Sequence[int], judge: str, criteria: str) -> dict[int, KeptScore]:
        """Submission id -> its stored score, for the ids that have one
        (500 ids a statement)."""
        sc = s.scores
        wanted = sorted(set(submission_ids))
        found: dict[int, KeptScore] = {}
        with self._read() as conn:
            for start in range(0, len(wanted), CHUNK):
                rows = conn.execute(
                    select(sc.c.submission_id, sc.c.total, sc.c.detail).where(
                        sc.c.judge == judge, sc.c.criteria == criteria,
                        sc.c.submission_id.in_(wanted[start:start + CHUNK]),
                    )
                )
                found.update((r.submission_id, KeptScore.of(r)) for r in rows)
        return found

    def score_judges(self, criteria: str) -> list[str]:
        """The judges with stored scores under `criteria`, by name."""
        sc = s.scores
        with self._read() as conn:
            return list(conn.execute(
                select(sc.c.judge).where(sc.c.criteria == criteria).distinct().order_by(sc.c.judge)
            ).scalars())


def _score_query(submission_id: int, judge: str, criteria: str) -> Any:
    sc = s.scores
    return select(sc.c.id, sc.c.total, sc.c.detail).where(
        and_(sc.c.submission_id == submission_id, sc.c.judge == judge, sc.c.criteria == criteria)
    )
