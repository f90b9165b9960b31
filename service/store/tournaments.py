"""Tournaments, their matches as planned, recurring schedules, and what each run spent (its
own and its runs', `spend`)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, case, func, or_, select, update
from sqlalchemy.engine import Connection

from leaderboard.spec import RunSpec
from leaderboard.types import MatchStatus, Pair, TournamentStatus

from . import schema as s
from .api_keys import WRITER
from .base import ACTIVE, Database, NotFound, RetryRefused, stop_run
from .batches import batch_progress
from .spend import own_spend, runs_spend, runs_under
from .tournament_rows import CancelledTournament, DueSchedule, StaleMatch, Stopped, Tournament, TournamentRow

CHUNK = 500  # keys per IN (...) clause: well under every backend's bound-parameter limit


class Tournaments(Database):
    """Tournaments, their matches as planned, and recurring schedules."""

    def create_tournament(
        self,
        name: str,
        spec: RunSpec,
        pairs: Sequence[Pair],
        *,
        schedule: str | None = None,
        next_run_at: float | None = None,
        parent_id: int | None = None,
        rounds: int = 0,
        stopped_reason: str | None = None,
        runs: Sequence[tuple[str, RunSpec]] = (),
    ) -> int:
        """Create a tournament and its pending matches in one transaction (`rounds`: adaptive
        rounds planned; `stopped_reason`: why a run with no pairs stopped at once). `runs`: runs
        of it made in the same transaction, each (name, spec) over the same pairs (a judge
        panel's members): a crash never leaves a panel with some of its members."""
        now = self._clock()
        with self._write() as conn:
            tid = self._insert_tournament(conn, name, spec, pairs, now, schedule=schedule, next_run_at=next_run_at,
                                          parent_id=parent_id, rounds=rounds, stopped_reason=stopped_reason)
            for run_name, run_spec in runs:
                self._insert_tournament(conn, run_name, run_spec, pairs, now, schedule=None, next_run_at=None,
                                        parent_id=tid, rounds=0, stopped_reason=stopped_reason)
        return tid

    def _insert_tournament(self, conn: Any, name: str, spec: RunSpec, pairs: Sequence[Pair], now: float, *,
                           schedule: str | None, next_run_at: float | None, parent_id: int | None, rounds: int,
                           stopped_reason: str | None) -> int:
        tid = int(
            conn.execute(
                s.tournaments.insert().values(
                    name=name,
                    spec=spec.to_json(),
                    status=TournamentStatus.QUEUED if pairs else TournamentStatus.DONE,
                    created_at=now,
                    finished_at=None if pairs else now,
                    schedule=schedule,
                    next_run_at=next_run_at,
                    parent_id=parent_id,
                    rounds=rounds,
                    stopped_reason=None if pairs else stopped_reason,
                    delivery=spec.delivery.value,
                    mode=spec.mode.value,
                    created_by=WRITER.get() if parent_id is None else _created_by(conn, parent_id),
                )
            ).inserted_primary_key[0]
        )
        if pairs:
            conn.execute(
                s.matches.insert(),
                [
                    {"tournament_id": tid, "a_id": p.a, "b_id": p.b, "status": MatchStatus.PENDING, "attempts": 0,
                     "enqueued_at": now}
                    for p in pairs
                ],
            )
        return tid

    def get_tournament(self, tournament_id: int) -> Tournament:
        """A tournament with its match counts (and, for batch delivery, its batches and
        requests); raises NotFound."""
        t = s.tournaments
        with self._read() as conn:
            row = conn.execute(select(t).where(t.c.id == tournament_id)).first()
            if row is None:
                raise NotFound(f"no tournament {tournament_id}")
            counts = match_counts(conn, [tournament_id])[tournament_id]
            runs = conn.execute(
                select(t.c.id).where(t.c.parent_id == tournament_id).order_by(t.c.id)
            ).scalars().all()
            spent = own_spend(conn, [tournament_id]).get(tournament_id, 0.0)
            below = runs_spend(conn, [tournament_id])[tournament_id]
            progress = batch_progress(conn, tournament_id)
        return Tournament(**_row_fields(row, counts, spent, below), runs=tuple(runs), batches=progress.batches,
                          batches_pending=progress.batches_pending, requests=progress.requests)

    def tournament_spec(self, tournament_id: int) -> RunSpec:
        """A tournament's spec; raises NotFound."""
        t = s.tournaments
        with self._read() as conn:
            spec = conn.execute(select(t.c.spec).where(t.c.id == tournament_id)).scalar()
        if spec is None:
            raise NotFound(f"no tournament {tournament_id}")
        return RunSpec.from_json(spec)

    def list_tournaments(self, *, limit: int = 100, offset: int = 0, top_level: bool = False) -> list[TournamentRow]:
        """Tournaments, newest first, with their counts (one grouped query for the page's
        counts and two for its spend, whatever its length, plus one per level of runs for what
        their runs spent). `top_level`: only those that are no run of another (a schedule's runs
        and an import's layers are left to `Runs.runs_of`)."""
        t = s.tournaments
        query = select(t).order_by(t.c.id.desc()).limit(limit).offset(offset)
        if top_level:
            query = query.where(t.c.parent_id.is_(None))
        with self._read() as conn:
            rows = conn.execute(query).all()
            ids = [r.id for r in rows]
            counts = match_counts(conn, ids)
            spent = own_spend(conn, ids)
            below = runs_spend(conn, ids)
        return [TournamentRow(**_row_fields(r, counts[r.id], spent.get(r.id, 0.0), below[r.id])) for r in rows]

    def cancel_tournament(self, tournament_id: int) -> CancelledTournament:
        """Cancel the matches not yet judged, stop a schedule from recurring, and cancel the runs
        under it still in flight (a schedule's current run, a panel's members); judgements made
        stay. The tournament as `get_tournament` shows it, with `stopped`: what this stopped
        (`schedule`: whether a schedule was running; `runs`: the runs cancelled; `matches`: the
        matches cancelled, its runs' included), since a schedule whose first run had finished
        still reads `done`."""
        t, m = s.tournaments, s.matches
        now = self._clock()
        with self._write() as conn:
            row = conn.execute(select(t.c.next_run_at).where(t.c.id == tournament_id)).first()
            if row is None:
                raise NotFound(f"no tournament {tournament_id}")
            under = sorted(runs_under(conn, [tournament_id]))
            in_flight = [run for start in range(0, len(under), CHUNK) for run in conn.execute(
                select(t.c.id).where(t.c.id.in_(under[start:start + CHUNK]), t.c.status.in_((TournamentStatus.QUEUED, TournamentStatus.RUNNING)))
                .order_by(t.c.id)).scalars()]
            ids = [tournament_id, *in_flight]
            matches = conn.execute(
                update(m)
                .where(m.c.tournament_id.in_(ids), m.c.status.in_(ACTIVE))
                .values(status=MatchStatus.CANCELLED, finished_at=now)
            ).rowcount
            conn.execute(update(t).where(t.c.id == tournament_id).values(next_run_at=None))
            conn.execute(update(t).where(t.c.id.in_(ids), t.c.status.in_((TournamentStatus.QUEUED, TournamentStatus.RUNNING)))
                         .values(status=TournamentStatus.CANCELLED, finished_at=now))
        stopped = Stopped(schedule=row.next_run_at is not None, runs=tuple(in_flight), matches=int(matches))
        return CancelledTournament(self.get_tournament(tournament_id), stopped)

    def stop_tournament(self, tournament_id: int, reason: str) -> bool:
        """End a queued or running tournament early: its active matches are cancelled, its
        status becomes "cancelled" with `stopped_reason`; judgements made stay, and a schedule
        keeps its next run. False when it had already finished."""
        with self._write() as conn:
            return stop_run(conn, tournament_id, self._clock(), TournamentStatus.CANCELLED, reason)

    def retry_failed(self, tournament_id: int) -> list[int]:
        """Hand a finished run's failed matches (and those its own "failing" stop cancelled) out
        again: they become pending with fresh attempts, the run is running again and counts them
        in `retried`. The matches to enqueue; raises NotFound, or RetryRefused when the run is
        still active or has nothing to retry."""
        t, m = s.tournaments, s.matches
        now = self._clock()
        with self._write() as conn:
            row = conn.execute(select(t.c.status, t.c.stopped_reason).where(t.c.id == tournament_id)).first()
            if row is None:
                raise NotFound(f"no tournament {tournament_id}")
            if row.status in ("queued", "running"):
                raise RetryRefused(f"tournament {tournament_id} is still {row.status}: retry it once it has finished")
            again = m.c.status == MatchStatus.FAILED
            if row.stopped_reason == "failing":
                again = or_(again, and_(m.c.status == MatchStatus.CANCELLED, m.c.last_error == "tournament stopped: failing"))
            ids = list(conn.execute(
                select(m.c.id).where(m.c.tournament_id == tournament_id, again).order_by(m.c.id)
            ).scalars())
            if not ids:
                raise RetryRefused(f"tournament {tournament_id} has no failed match to retry")
            for start in range(0, len(ids), CHUNK):
                conn.execute(
                    update(m)
                    .where(m.c.id.in_(ids[start:start + CHUNK]))
                    .values(status=MatchStatus.PENDING, attempts=0, enqueued_at=now, started_at=None, finished_at=None,
                            job_id=None)
                )
            conn.execute(
                update(t)
                .where(t.c.id == tournament_id)
                .values(status=TournamentStatus.RUNNING, finished_at=None, stopped_reason=None, failure_streak=0,
                        retried=t.c.retried + len(ids))
            )
        return ids

    def active_matches(self, match_ids: Sequence[int]) -> list[int]:
        """Those of `match_ids` still to be judged (pending, queued or running)."""
        m = s.matches
        wanted = sorted(set(match_ids))
        found: list[int] = []
        with self._read() as conn:
            for start in range(0, len(wanted), CHUNK):
                found.extend(conn.execute(
                    select(m.c.id).where(m.c.id.in_(wanted[start:start + CHUNK]), m.c.status.in_(ACTIVE))
                ).scalars())
        return sorted(found)

    def tournament_spend(self, tournament_id: int) -> float:
        """USD spent by this run: the cost of the judgements its matches made and of its failed
        attempts' calls (0.0 for none)."""
        with self._read() as conn:
            return own_spend(conn, [tournament_id]).get(tournament_id, 0.0)

    def existing_keys(self, keys: Sequence[str]) -> set[str]:
        """The judgement keys among `keys` that are stored (one read, 500 keys a statement)."""
        j = s.judgements
        wanted = sorted(set(keys))
        found: set[str] = set()
        with self._read() as conn:
            for start in range(0, len(wanted), CHUNK):
                found.update(conn.execute(select(j.c.key).where(j.c.key.in_(wanted[start:start + CHUNK]))).scalars())
        return found

    def pending_matches(self, tournament_id: int) -> list[int]:
        """Matches created but not yet handed to the queue."""
        m = s.matches
        with self._read() as conn:
            return list(
                conn.execute(
                    select(m.c.id).where(m.c.tournament_id == tournament_id, m.c.status == MatchStatus.PENDING).order_by(m.c.id)
                ).scalars()
            )

    def mark_queued(self, jobs: dict[int, str]) -> None:
        """Record that these matches (id -> RQ job id) now have a job on the queue (still
        active: nothing a page shows changes)."""
        m = s.matches
        now = self._clock()
        with self._write(shown=False) as conn:
            for match_id, job_id in jobs.items():
                conn.execute(
                    update(m)
                    .where(m.c.id == match_id, m.c.status.in_(ACTIVE))
                    .values(status=MatchStatus.QUEUED, job_id=job_id, enqueued_at=now)
                )

    # ---- the scheduler's side ---------------------------------------------------------

    def due_schedules(self, now: float) -> list[DueSchedule]:
        """Recurring tournaments whose next run is due, the earliest first."""
        t = s.tournaments
        with self._read() as conn:
            rows = conn.execute(
                select(t.c.id, t.c.name, t.c.spec, t.c.schedule, t.c.next_run_at)
                .where(t.c.schedule.is_not(None), t.c.next_run_at.is_not(None), t.c.next_run_at <= now)
                .order_by(t.c.next_run_at)
            ).all()
        return [DueSchedule(id=r.id, name=r.name, spec=RunSpec.from_json(r.spec), schedule=r.schedule,
                            next_run_at=r.next_run_at) for r in rows]

    def claim_schedule(self, tournament_id: int, expected_next: float, new_next: float) -> bool:
        """Move a schedule to its next due time if nobody else has: the one winner runs it."""
        t = s.tournaments
        with self._write() as conn:
            return bool(
                conn.execute(
                    update(t)
                    .where(t.c.id == tournament_id, t.c.next_run_at == expected_next)
                    .values(next_run_at=new_next)
                ).rowcount
            )

    def stale_matches(self, now: float, timeout_s: float, pending_grace_s: float = 30.0) -> list[StaleMatch]:
        """Matches that may have lost their job: never handed out after `pending_grace_s`, or
        handed out longer ago than `timeout_s` and not finished.

        They belong to a Redis that was down, a killed worker, or a queue that lost its jobs (a
        Redis restarted without its files); the scheduler checks each one's job and hands it out
        again. Judgements are keyed, so a match judged twice is still stored once.
        """
        m, t = s.matches, s.tournaments
        stamp = case((m.c.status == MatchStatus.RUNNING, m.c.started_at), else_=m.c.enqueued_at)
        with self._read() as conn:
            rows = conn.execute(
                select(m.c.id, m.c.status, m.c.job_id)
                .join(t, t.c.id == m.c.tournament_id)
                .where(
                    t.c.delivery == "live",  # a batch run's matches wait on the provider's batches
                    or_(
                        and_(m.c.status.in_((MatchStatus.QUEUED, MatchStatus.RUNNING)), stamp < now - timeout_s),
                        and_(m.c.status == MatchStatus.PENDING, m.c.enqueued_at < now - pending_grace_s),
                    ),
                )
                .order_by(m.c.id)
            ).all()
        return [StaleMatch(id=r.id, status=r.status, job_id=r.job_id) for r in rows]


def match_counts(conn: Connection, tournament_ids: Sequence[int]) -> dict[int, dict[str, int]]:
    """Tournament id -> its matches counted by status (every id present), one grouped query
    answered from the index on (tournament_id, status)."""
    m = s.matches
    counts: dict[int, dict[str, int]] = {i: {} for i in tournament_ids}
    for tid, status, n in conn.execute(
        select(m.c.tournament_id, m.c.status, func.count())
        .where(m.c.tournament_id.in_(list(tournament_ids)))
        .group_by(m.c.tournament_id, m.c.status)
    ):
        counts[tid][status] = n
    return counts


def _created_by(conn: Connection, tournament_id: int) -> str | None:
    """Who created a tournament (its scheduled runs record the same)."""
    return conn.execute(select(s.tournaments.c.created_by).where(s.tournaments.c.id == tournament_id)).scalar()


def _row_fields(row: Any, counts: dict[str, int], spent: float, runs_spent: float) -> dict[str, Any]:
    """A `TournamentRow`'s fields from its stored row, its matches counted and its spend."""
    return {
        "id": row.id, "name": row.name, "status": row.status, "spec": RunSpec.from_json(row.spec),
        "matches_total": sum(counts.values()),
        "matches_done": counts.get("done", 0),
        "matches_failed": counts.get("failed", 0),
        "matches_cancelled": counts.get("cancelled", 0),
        "matches_pending": sum(counts.get(st, 0) for st in ACTIVE),
        "spent_usd": spent,  # its own matches': what its budget caps
        "runs_spent_usd": runs_spent,  # the runs under it (a schedule's, a panel's members')
        "stopped_reason": row.stopped_reason, "retried": row.retried, "delivery": row.delivery,
        "rounds": row.rounds, "created_at": row.created_at, "started_at": row.started_at,
        "finished_at": row.finished_at, "schedule": row.schedule, "next_run_at": row.next_run_at,
        "parent_id": row.parent_id, "created_by": row.created_by,
    }
