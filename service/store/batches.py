"""Message Batches in the store: each distinct request once, the provider's batches, and the
requests each match of a batch run waits on (`workers.batches` drives them). What a match's
replay itself reads and asks for is in `batch_replays`.

A request is keyed by its `custom_id`, a hash of its content, so the same judgement asked by two
runs (twins) is one row, submitted and paid once. It goes pending → submitted (in one batch) →
succeeded | errored | expired | canceled; a transient failure goes back to pending until it has
been submitted `give_up_after` times. A batch goes creating (our row, written before the
provider's create call) → in_progress (the provider's id stored) → canceling → ended, or
abandoned when the create call never made it. Every transition is a compare-and-set inside one
write transaction (`base`), so no request is submitted twice: it leaves "pending" only together
with the "creating" row of the batch it goes in, and leaves "submitted" only with its result.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import delete, distinct, func, select, update
from sqlalchemy.engine import Connection

from leaderboard.types import BatchStatus, Delivery, RequestStatus, TournamentStatus

from . import schema as s
from .base import ACTIVE, Database
from .tournament_rows import BatchCounts, BatchProgress, ProviderBatch, RequestTally

CHUNK = 500  # keys per IN (...) clause: well under every backend's bound-parameter limit
RUN_ACTIVE = (TournamentStatus.QUEUED, TournamentStatus.RUNNING)
IN_FLIGHT = (RequestStatus.PENDING.value, RequestStatus.SUBMITTED.value)
GIVEN_UP = (RequestStatus.ERRORED.value, RequestStatus.EXPIRED.value, RequestStatus.CANCELED.value)
OPEN = (BatchStatus.IN_PROGRESS.value, BatchStatus.CANCELING.value)
PENDING_BATCH = (BatchStatus.CREATING.value, *OPEN)  # not ended by the provider (nor abandoned) yet


@dataclass(frozen=True)
class Outgoing:
    """A request to put in a batch (`params` only once it is in one: `open_batch`)."""

    custom_id: str
    model: str
    size: int
    params: str = ""


@dataclass(frozen=True)
class OpenedBatch:
    """A "creating" batch row and the requests it took from pending."""

    id: int
    model: str
    requests: tuple[Outgoing, ...]


@dataclass(frozen=True)
class BatchRow:
    """A batch as stored: `provider_id` None while "creating"."""

    id: int
    provider_id: str | None
    model: str
    status: BatchStatus
    request_count: int
    counts: BatchCounts
    created_at: float
    ended_at: float | None


@dataclass(frozen=True)
class BatchResult:
    """One line of an ended batch's results; `retry` for a transient failure (send it again)."""

    custom_id: str
    status: RequestStatus
    text: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    retry: bool = False


@dataclass(frozen=True)
class Settled:
    """A request that ended or left: its reservation to settle, the matches to fail if given up."""

    custom_id: str
    judge: str
    status: RequestStatus
    input_tokens: int = 0
    output_tokens: int = 0
    tournament_id: int | None = None
    reserved_usd: float | None = None
    gave_up: bool = False
    error: str | None = None
    attempts: int = 0
    waiting: tuple[int, ...] = ()


class Batches(Database):
    """Batch requests, batches and match waits (see the module docstring)."""

    def ready_batch_matches(self) -> list[int]:
        """Active matches of active batch runs that wait on no pending or submitted request."""
        m, t, w, r = s.matches, s.tournaments, s.match_waits, s.batch_requests
        blocked = (select(w.c.match_id).join(r, r.c.custom_id == w.c.custom_id)
                   .where(w.c.match_id == m.c.id, r.c.status.in_(IN_FLIGHT)).exists())
        with self._read() as conn:
            return list(conn.execute(
                select(m.c.id).join(t, t.c.id == m.c.tournament_id)
                .where(t.c.delivery == Delivery.BATCH.value, t.c.status.in_(RUN_ACTIVE), m.c.status.in_(ACTIVE),
                       ~blocked)
                .order_by(m.c.id)
            ).scalars())

    def batch_work_left(self) -> bool:
        """Whether the batch driver has anything to do: an active batch run, a batch the
        provider has not ended, or a pending request."""
        t, b, r = s.tournaments, s.batches, s.batch_requests
        with self._read() as conn:
            return any(conn.execute(query.limit(1)).first() is not None for query in (
                select(t.c.id).where(t.c.delivery == Delivery.BATCH.value, t.c.status.in_(RUN_ACTIVE)),
                select(b.c.id).where(b.c.status.in_((BatchStatus.CREATING.value, *OPEN))),
                select(r.c.id).where(r.c.status == RequestStatus.PENDING.value),
            ))

    def drop_orphan_requests(self) -> list[Settled]:
        """Delete the pending requests no active match waits on any more (their runs were
        stopped or cancelled before they were submitted); their reservations to release."""
        r = s.batch_requests
        with self._write() as conn:
            rows = conn.execute(select(r).where(r.c.status == RequestStatus.PENDING.value,
                                                ~_waited(r.c.custom_id))).all()
            for part in _chunks([row.id for row in rows]):
                conn.execute(delete(r).where(r.c.id.in_(part), r.c.status == RequestStatus.PENDING.value))
        return [Settled(row.custom_id, row.judge, RequestStatus.PENDING, tournament_id=row.tournament_id,
                        reserved_usd=row.reserved_usd) for row in rows]

    def pending_requests(self) -> list[Outgoing]:
        """Pending requests an active match waits on, oldest first (without their params)."""
        r = s.batch_requests
        with self._read() as conn:
            rows = conn.execute(select(r.c.custom_id, r.c.model, r.c.size).where(
                r.c.status == RequestStatus.PENDING.value, _waited(r.c.custom_id)).order_by(r.c.id)).all()
        return [Outgoing(row.custom_id, row.model, row.size) for row in rows]

    def open_batch(self, model: str, custom_ids: Sequence[str]) -> OpenedBatch | None:
        """Write a "creating" batch and move into it those of `custom_ids` still pending, in
        one transaction; None when none was."""
        r, b, bm = s.batch_requests, s.batches, s.batch_members
        now = self._clock()
        with self._write() as conn:
            rows = [row for part in _chunks(list(custom_ids)) for row in conn.execute(
                select(r.c.custom_id, r.c.model, r.c.size, r.c.params).order_by(r.c.id)
                .where(r.c.custom_id.in_(part), r.c.status == RequestStatus.PENDING.value, r.c.model == model,
                       _waited(r.c.custom_id))
            )]
            if not rows:
                return None
            batch_id = int(conn.execute(b.insert().values(
                model=model, status=BatchStatus.CREATING.value, request_count=len(rows), counts="{}", created_at=now,
            )).inserted_primary_key[0])
            taken = [row.custom_id for row in rows]
            for part in _chunks(taken):
                conn.execute(update(r).where(r.c.custom_id.in_(part), r.c.status == RequestStatus.PENDING.value)
                             .values(status=RequestStatus.SUBMITTED.value, batch_id=batch_id,
                                     attempts=r.c.attempts + 1, updated_at=now))
            conn.execute(bm.insert(), [{"batch_id": batch_id, "custom_id": cid} for cid in taken])
        return OpenedBatch(batch_id, model, tuple(Outgoing(*row) for row in rows))

    def batch_created(self, batch_id: int, provider_id: str, status: BatchStatus, counts: BatchCounts,
                      created_at: float) -> bool:
        """Store the provider's id of a "creating" batch (also to adopt one found by listing)."""
        b = s.batches
        with self._write() as conn:
            return bool(conn.execute(
                update(b).where(b.c.id == batch_id, b.c.status == BatchStatus.CREATING.value, b.c.provider_id.is_(None))
                .values(provider_id=provider_id, status=status.value, counts=_counts_json(counts),
                        created_at=created_at)
            ).rowcount)

    def batches_in(self, *statuses: BatchStatus) -> list[BatchRow]:
        """The batches in these statuses, oldest first."""
        b = s.batches
        with self._read() as conn:
            rows = conn.execute(select(b).where(b.c.status.in_([st.value for st in statuses])).order_by(b.c.id)).all()
        return [_batch(row) for row in rows]

    def known_provider_ids(self, provider_ids: Sequence[str]) -> set[str]:
        """Those of the provider's batch ids a row holds already (not to adopt)."""
        b = s.batches
        with self._read() as conn:
            return {pid for part in _chunks(list(provider_ids))
                    for pid in conn.execute(select(b.c.provider_id).where(b.c.provider_id.in_(part))).scalars()}

    def idle_batches(self) -> set[int]:
        """Open batches none of whose submitted requests an active match waits on: their
        results would help no one (to cancel)."""
        b, r = s.batches, s.batch_requests
        busy = (select(r.c.id).where(r.c.batch_id == b.c.id, r.c.status == RequestStatus.SUBMITTED.value,
                                     _waited(r.c.custom_id)).exists())
        with self._read() as conn:
            return set(conn.execute(select(b.c.id).where(b.c.status == BatchStatus.IN_PROGRESS.value, ~busy)).scalars())

    def update_batch(self, batch_id: int, status: BatchStatus, counts: BatchCounts) -> None:
        """What the provider said of an open batch it has not ended."""
        b = s.batches
        with self._write() as conn:
            conn.execute(update(b).where(b.c.id == batch_id, b.c.status.in_(OPEN))
                         .values(status=status.value, counts=_counts_json(counts)))

    def store_results(self, batch_id: int, results: Sequence[BatchResult], give_up_after: int) -> list[Settled]:
        """Take results of an ended batch into its requests (each only while it is submitted in
        this batch); what they settled."""
        r = s.batch_requests
        now = self._clock()
        out: list[Settled] = []
        with self._write() as conn:
            for res in results:
                row = conn.execute(select(r).where(r.c.custom_id == res.custom_id, r.c.batch_id == batch_id,
                                                   r.c.status == RequestStatus.SUBMITTED.value)).first()
                if row is None:
                    continue
                if res.retry:
                    out.extend(_retry(conn, row, res.status, res.error or res.status.value, give_up_after, now))
                    continue
                done = res.status is RequestStatus.SUCCEEDED
                conn.execute(update(r).where(r.c.id == row.id).values(
                    status=res.status.value, text=res.text if done else None, input_tokens=res.input_tokens,
                    output_tokens=res.output_tokens, error=None if done else res.error, permanent=not done,
                    reserved_usd=None, updated_at=now))
                out.append(Settled(row.custom_id, row.judge, res.status, res.input_tokens, res.output_tokens,
                                   row.tournament_id, row.reserved_usd, error=res.error, attempts=row.attempts))
        return out

    def close_batch(self, batch_id: int, status: BatchStatus, give_up_after: int, *,
                    counts: BatchCounts | None = None, ended_at: float | None = None,
                    error: str | None = None) -> list[Settled]:
        """End a batch: "ended" once its results are stored, "abandoned" when the provider
        refused or never made it. Its requests still submitted (no result line came for them)
        go back to pending, or are given up."""
        why = error or "no result for it in its ended batch"
        b, r = s.batches, s.batch_requests
        now = self._clock()
        out: list[Settled] = []
        with self._write() as conn:
            values: dict[str, Any] = {"status": status.value, "ended_at": ended_at or now, "error": error}
            if counts is not None:
                values["counts"] = _counts_json(counts)
            if not conn.execute(update(b).where(b.c.id == batch_id, b.c.status.in_((BatchStatus.CREATING.value, *OPEN)))
                                .values(**values)).rowcount:
                return []
            for row in conn.execute(select(r).where(r.c.batch_id == batch_id,
                                                    r.c.status == RequestStatus.SUBMITTED.value)).all():
                out.extend(_retry(conn, row, RequestStatus.EXPIRED, why, give_up_after, now))
        return out


def batch_progress(conn: Connection, tournament_id: int) -> BatchProgress:
    """One run's batches that held any request its matches waited on, oldest first, and how many
    of them the provider has not ended (being created, in progress or being cancelled), and its
    requests by state: what a batch run waits on, shown instead of a call rate (its verdicts land when a batch ends)."""
    w, m, r, b, bm = s.match_waits, s.matches, s.batch_requests, s.batches, s.batch_members
    asked = select(w.c.custom_id).join(m, m.c.id == w.c.match_id).where(m.c.tournament_id == tournament_id)
    counts = dict(conn.execute(
        select(r.c.status, func.count(distinct(r.c.id))).where(r.c.custom_id.in_(asked)).group_by(r.c.status)
    ).all())
    held = select(bm.c.batch_id).where(bm.c.custom_id.in_(asked))
    rows = conn.execute(select(b).where(b.c.id.in_(held)).order_by(b.c.id)).all()
    return BatchProgress(
        batches=tuple(ProviderBatch(id=row.provider_id, status=row.status, model=row.model, requests=row.request_count,
                                    request_counts=_counts(row.counts), created_at=row.created_at,
                                    ended_at=row.ended_at) for row in rows),
        batches_pending=sum(row.status in PENDING_BATCH for row in rows),
        requests=RequestTally(pending=counts.get(RequestStatus.PENDING.value, 0),
                              submitted=counts.get(RequestStatus.SUBMITTED.value, 0),
                              done=counts.get(RequestStatus.SUCCEEDED.value, 0),
                              failed=sum(counts.get(st, 0) for st in GIVEN_UP)),
    )


def _retry(conn: Connection, row: Any, status: RequestStatus, error: str, give_up_after: int,
           now: float) -> list[Settled]:
    """A transient failure: back to pending, or given up (with its waiting matches) once it
    has been submitted `give_up_after` times."""
    r = s.batch_requests
    if row.attempts < give_up_after:
        conn.execute(update(r).where(r.c.id == row.id)
                     .values(status=RequestStatus.PENDING.value, error=error, updated_at=now))
        return []
    conn.execute(update(r).where(r.c.id == row.id).values(status=status.value, error=error, permanent=False,
                                                          reserved_usd=None, updated_at=now))
    m, w = s.matches, s.match_waits
    waiting = tuple(conn.execute(select(m.c.id).join(w, w.c.match_id == m.c.id)
                                 .where(w.c.custom_id == row.custom_id, m.c.status.in_(ACTIVE))
                                 .order_by(m.c.id)).scalars())
    return [Settled(row.custom_id, row.judge, status, tournament_id=row.tournament_id, reserved_usd=row.reserved_usd,
                    gave_up=True, error=error, attempts=row.attempts, waiting=waiting)]


def _waited(custom_id: Any) -> Any:
    """Whether an active match waits on the request `custom_id` names (a correlated EXISTS)."""
    w, m = s.match_waits, s.matches
    return select(w.c.match_id).join(m, m.c.id == w.c.match_id).where(
        w.c.custom_id == custom_id, m.c.status.in_(ACTIVE)).exists()


def _batch(row: Any) -> BatchRow:
    return BatchRow(row.id, row.provider_id, row.model, BatchStatus(row.status), row.request_count,
                    _counts(row.counts), row.created_at, row.ended_at)


def _counts(raw: str | None) -> BatchCounts:
    data = json.loads(raw or "{}")
    return BatchCounts(**{k: int(data.get(k, 0)) for k in BatchCounts.__dataclass_fields__})


def _counts_json(counts: BatchCounts) -> str:
    return json.dumps(asdict(counts), sort_keys=True)


def _chunks(items: list) -> Iterator[list]:
    for start in range(0, len(items), CHUNK):
        yield items[start:start + CHUNK]
