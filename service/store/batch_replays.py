"""The replay's side of Message Batches: what a match's replay in a batch run asks of the store
(`workers.batch_judge`): a request by its `custom_id`, with its reply once it ended, and the
requests it needs stored, with the match waiting on them.

Apart from `batches`, which holds the requests' and the batches' life that the batch driver
(`workers.batches`) moves along; this is only what a replay reads and asks for.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update

from leaderboard.types import MatchStatus, RequestStatus, TournamentStatus

from . import schema as s
from .base import ACTIVE, Database
from .batches import GIVEN_UP


@dataclass(frozen=True)
class StoredRequest:
    """A request as a replay sees it: its status and, once it ended, its reply or error."""

    custom_id: str
    status: RequestStatus
    text: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    permanent: bool = False
    attempts: int = 0

    @property
    def reopenable(self) -> bool:
        """Given up after transient failures: asking for it again submits it again."""
        return self.status.value in GIVEN_UP and not self.permanent


@dataclass(frozen=True)
class NeededRequest:
    """A request a suspended replay asks for; `reserved_usd` is what its run's budget reserved."""

    custom_id: str
    judge: str
    model: str
    params: str  # JSON
    size: int
    tournament_id: int | None = None
    reserved_usd: float | None = None


class BatchReplays(Database):
    """A batch replay's requests and the match waits it asks for (see the module docstring)."""

    def batch_request(self, custom_id: str) -> StoredRequest | None:
        """The request named `custom_id`, if any was asked for."""
        r = s.batch_requests
        with self._read() as conn:
            row = conn.execute(select(r).where(r.c.custom_id == custom_id)).first()
        return None if row is None else _stored(row)

    def wait_on_requests(self, match_id: int, needs: Sequence[NeededRequest]) -> frozenset[str] | None:
        """Store the requests a match's replay asked for (once per custom_id; one given up
        after transient failures is opened again) and make the match wait on them; its run is
        running from now. The custom_ids stored or opened here (their reservations are held),
        or None when the match is no longer active (nothing stored)."""
        r, w, m, t = s.batch_requests, s.match_waits, s.matches, s.tournaments
        now = self._clock()
        created: set[str] = set()
        with self._write() as conn:
            row = conn.execute(select(m.c.status, m.c.tournament_id).where(m.c.id == match_id)).first()
            if row is None or row.status not in ACTIVE:
                return None
            for need in needs:
                found = conn.execute(select(r.c.status, r.c.permanent).where(r.c.custom_id == need.custom_id)).first()
                fresh = {"status": RequestStatus.PENDING.value, "attempts": 0, "error": None, "batch_id": None,
                         "tournament_id": need.tournament_id, "reserved_usd": need.reserved_usd, "updated_at": now}
                if found is None:
                    conn.execute(r.insert().values(custom_id=need.custom_id, judge=need.judge, model=need.model,
                                                   params=need.params, size=need.size, permanent=False,
                                                   created_at=now, **fresh))
                    created.add(need.custom_id)
                elif found.status in GIVEN_UP and not found.permanent:
                    conn.execute(update(r).where(r.c.custom_id == need.custom_id, r.c.status == found.status)
                                 .values(**fresh))
                    created.add(need.custom_id)
                if conn.execute(select(w.c.match_id).where(w.c.match_id == match_id,
                                                           w.c.custom_id == need.custom_id)).first() is None:
                    conn.execute(w.insert().values(match_id=match_id, custom_id=need.custom_id))
            conn.execute(update(m).where(m.c.id == match_id, m.c.status == MatchStatus.PENDING)
                         .values(status=MatchStatus.QUEUED, job_id=None, enqueued_at=now))
            conn.execute(update(t).where(t.c.id == row.tournament_id, t.c.status == TournamentStatus.QUEUED)
                         .values(status=TournamentStatus.RUNNING, started_at=now))
        return frozenset(created)


def _stored(row: Any) -> StoredRequest:
    return StoredRequest(row.custom_id, RequestStatus(row.status), row.text or "", int(row.input_tokens or 0),
                         int(row.output_tokens or 0), row.error, bool(row.permanent), int(row.attempts))
