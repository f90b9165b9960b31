"""The pages' mark: whether anything a page shows may have changed, in one indexed read.

Why: the pages poll for changes every few seconds, and a page can answer a conditional request
(an ETag) without rendering; neither may cost a scan at a million judgements. Two rows of the
`counters` table say it: `resolved` (the boards' revision, moved by every resolved match) and
`changes` (moved by every write transaction that may change what a page shows, see
`base.Database._write`). Reading them writes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from . import schema as s
from .base import Database


@dataclass(frozen=True)
class PageMark:
    """`revision`: matches ever resolved (`Store.revision`); `mark`: a token that differs whenever
    anything the pages show may have changed (a judgement resolved, a match failed, cancelled or
    handed out again, a tournament created or its status moved, a vote, a submission, a score...)."""

    revision: int
    mark: str


class Marks(Database):
    """The pages' mark."""

    def page_mark(self) -> PageMark:
        """The revision and the mark, read together (one statement on two primary-key rows)."""
        c = s.counters
        with self._read() as conn:
            rows = conn.execute(select(c.c.name, c.c.value).where(c.c.name.in_(s.COUNTERS))).all()
        values = {row.name: int(row.value) for row in rows}
        revision, changes = values[s.RESOLVED], values[s.CHANGES]
        return PageMark(revision, f"{revision}.{changes}")
