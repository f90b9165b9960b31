"""Adaptive rounds and board history: what the scheduler's planner reads and claims.

Every claim is a compare-and-set, so two schedulers never plan one round twice nor snapshot one
run twice: a round moves `tournaments.rounds` from the value the planner read; a snapshot is one
row per (run, level) under a unique constraint.
"""
from __future__ import annotations

import json
from collections.abc import Collection, Sequence

from sqlalchemy import and_, case, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from leaderboard.spec import RunSpec
from leaderboard.types import MatchStatus, Mode, OrderPolicy, Pair, TournamentStatus

from . import schema as s
from .base import ACTIVE, Database
from .tournament_rows import DueRound, SnapshotDue

SubmissionPair = tuple[int, int]


class Rounds(Database):
    """Adaptive rounds (plan, claim, finish) and board snapshots of scheduled runs."""

    def rounds_due(self) -> list[DueRound]:
        """Adaptive tournaments still queued or running with no active match: a round is over."""
        t, m = s.tournaments, s.matches
        active = select(m.c.id).where(m.c.tournament_id == t.c.id, m.c.status.in_(ACTIVE)).exists()
        with self._read() as conn:
            rows = conn.execute(
                select(t.c.id, t.c.spec, t.c.rounds)
                .where(t.c.mode == Mode.ADAPTIVE.value, t.c.status.in_((TournamentStatus.QUEUED, TournamentStatus.RUNNING)), ~active)
                .order_by(t.c.id)
            ).all()
        return [DueRound(id=r.id, spec=RunSpec.from_json(r.spec), rounds=r.rounds) for r in rows]

    def add_round(self, tournament_id: int, expected_rounds: int, pairs: Sequence[Pair]) -> bool:
        """Claim the next round (rounds: expected → expected + 1) and add its pending matches,
        in one transaction; False when another planner claimed it or the run has finished."""
        t, m = s.tournaments, s.matches
        now = self._clock()
        with self._write() as conn:
            claimed = conn.execute(
                update(t)
                .where(t.c.id == tournament_id, t.c.rounds == expected_rounds, t.c.status.in_((TournamentStatus.QUEUED, TournamentStatus.RUNNING)))
                .values(rounds=expected_rounds + 1)
            ).rowcount
            if claimed and pairs:
                conn.execute(
                    m.insert(),
                    [{"tournament_id": tournament_id, "a_id": p.a, "b_id": p.b, "status": MatchStatus.PENDING, "attempts": 0,
                      "enqueued_at": now} for p in pairs],
                )
        return bool(claimed)

    def finish_rounds(self, tournament_id: int, expected_rounds: int, reason: str) -> bool:
        """Mark an adaptive run done with `stopped_reason`, unless another planner moved it."""
        t = s.tournaments
        now = self._clock()
        with self._write() as conn:
            return bool(
                conn.execute(
                    update(t)
                    .where(t.c.id == tournament_id, t.c.rounds == expected_rounds, t.c.status.in_((TournamentStatus.QUEUED, TournamentStatus.RUNNING)))
                    .values(status=TournamentStatus.DONE, finished_at=now, stopped_reason=reason, rounds=expected_rounds + 1)
                ).rowcount
            )

    def tournament_pairs(self, tournament_id: int) -> set[SubmissionPair]:
        """Every submission pair (low id first) the tournament has a match for, in any status."""
        m = s.matches
        with self._read() as conn:
            rows = conn.execute(select(m.c.a_id, m.c.b_id).where(m.c.tournament_id == tournament_id)).all()
        return {(min(a, b), max(a, b)) for a, b in rows}

    def judged_pairs(self, judge: str, criteria: str, template_version: str | Collection[str],
                     orders: Collection[OrderPolicy] = (OrderPolicy.BOTH,)) -> set[SubmissionPair]:
        """Submission pairs (low id first) this judge has a judgement for with this criteria set
        and prompt version (or any of several) that answers a request of `orders`
        (`leaderboard.keys.answering_orders`; a judgement whose order does not matter answers
        any): the judgement's own pair and every resolved match it answered."""
        j, m = s.judgements, s.matches
        versions = [template_version] if isinstance(template_version, str) else list(template_version)
        same = and_(j.c.judge == judge, j.c.criteria == criteria, j.c.template_version.in_(versions),
                    or_(j.c.order_policy.is_(None), j.c.order_policy.in_([o.value for o in orders])))
        with self._read() as conn:
            own = conn.execute(select(j.c.a_id, j.c.b_id).where(same)).all()
            reused = conn.execute(
                select(m.c.a_id, m.c.b_id).join(j, j.c.id == m.c.judgement_id).where(same, m.c.status == MatchStatus.DONE)
            ).all()
        return {(min(a, b), max(a, b)) for a, b in [*own, *reused]}

    def calls_made(self, tournament_id: int, per_judgement: int) -> int:
        """The judge calls this run has used, as its `max_calls` counts them: `per_judgement`
        for each judgement its matches made, every call its attempts paid that no judgement
        records (`failed_calls`), and for a failed match at least `per_judgement` (a match that
        fails before its judge answers still took its place in the run)."""
        m = s.matches
        failed = m.c.status == MatchStatus.FAILED
        spent = case((and_(failed, m.c.failed_calls < per_judgement), per_judgement), else_=m.c.failed_calls)
        with self._read() as conn:
            attempts = conn.execute(
                select(func.coalesce(func.sum(spent), 0)).where(m.c.tournament_id == tournament_id)
            ).scalar_one()
        return per_judgement * self.judgements_made(tournament_id) + int(attempts)

    def judgements_made(self, tournament_id: int) -> int:
        """How many judgements this run's own matches made (each one paid its calls)."""
        j, m = s.judgements, s.matches
        with self._read() as conn:
            return int(
                conn.execute(
                    select(func.count()).select_from(j).join(m, m.c.id == j.c.match_id)
                    .where(m.c.tournament_id == tournament_id)
                ).scalar_one()
            )

    # ---- board history ----------------------------------------------------------------

    def runs_to_snapshot(self) -> list[SnapshotDue]:
        """Finished runs (done or cancelled) of scheduled tournaments, and finished adaptive
        runs, with no snapshot yet."""
        t, b = s.tournaments, s.board_snapshots
        parent = t.alias("parent")
        taken = select(b.c.id).where(b.c.run_id == t.c.id).exists()
        with self._read() as conn:
            rows = conn.execute(
                select(t.c.id, t.c.parent_id, t.c.spec, t.c.finished_at, parent.c.schedule)
                .outerjoin(parent, parent.c.id == t.c.parent_id)
                .where(t.c.status.in_((TournamentStatus.DONE, TournamentStatus.CANCELLED)), ~taken,
                       or_(t.c.schedule.is_not(None), parent.c.schedule.is_not(None), t.c.mode == Mode.ADAPTIVE.value))
                .order_by(t.c.id)
            ).all()
        return [SnapshotDue(run=r.id, tournament=r.parent_id or r.id, judge=RunSpec.from_json(r.spec).judge,
                            finished_at=r.finished_at) for r in rows]

    def save_snapshots(self, tournament_id: int, run_id: int, boards: dict[str, list[dict]]) -> bool:
        """Store a run's boards (level → rows) once; False when another scheduler already did."""
        b = s.board_snapshots
        now = self._clock()
        try:
            with self._write() as conn:
                conn.execute(
                    b.insert(),
                    [{"tournament_id": tournament_id, "run_id": run_id, "level": level, "taken_at": now,
                      "rows": json.dumps(rows)} for level, rows in boards.items()],
                )
        except IntegrityError:
            return False
        return True

    def snapshots(self, tournament_id: int, level: str) -> list[dict]:
        """{"run", "time", "rows"} of a tournament's runs at one level, oldest first."""
        b = s.board_snapshots
        with self._read() as conn:
            rows = conn.execute(
                select(b.c.run_id, b.c.taken_at, b.c.rows)
                .where(b.c.tournament_id == tournament_id, b.c.level == level)
                .order_by(b.c.taken_at, b.c.run_id)
            ).all()
        return [{"run": r.run_id, "time": r.taken_at, "rows": json.loads(r.rows)} for r in rows]
