"""Matches as workers see them: start, resolve with a keyed judgement, fail, hand out again."""
from __future__ import annotations

import json
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from leaderboard.spec import RunSpec
from leaderboard.types import MatchStatus, Mode, TournamentStatus, Winner

from . import schema as s
from .base import ACTIVE, Database, MatchContext, NewJudgement, NotFound, stop_run, submission_of
from .rows import StoredJudgement


class Matches(Database):
    """Matches as workers see them: start, resolve with a keyed judgement, fail, hand out again."""

    def match_context(self, match_id: int) -> MatchContext:
        """A match with its tournament's spec and both submissions (and their metadata); raises NotFound."""
        m, t, sub = s.matches, s.tournaments, s.submissions
        with self._read() as conn:
            row = conn.execute(
                select(m, t.c.spec).join(t, t.c.id == m.c.tournament_id).where(m.c.id == match_id)
            ).first()
            if row is None:
                raise NotFound(f"no match {match_id}")
            rows = conn.execute(select(sub).where(sub.c.id.in_([row.a_id, row.b_id]))).all()
        subs = {r.id: submission_of(r) for r in rows}
        spec = RunSpec.from_json(row.spec)
        question = subs[row.a_id].question_id
        reference = self.references([question], spec.reference_model, spec.reference_scenario).get(question)
        return MatchContext(
            match_id=row.id,
            tournament_id=row.tournament_id,
            status=row.status,
            attempts=row.attempts,
            spec=spec,
            a=subs[row.a_id],
            b=subs[row.b_id],
            metadata={r.id: json.loads(r.metadata or "{}") for r in rows},
            reference=reference,
        )

    def start_match(self, match_id: int) -> bool:
        """Mark a match running; False when it is already finished or cancelled."""
        m, t = s.matches, s.tournaments
        now = self._clock()
        with self._write() as conn:
            done = conn.execute(
                update(m)
                .where(m.c.id == match_id, m.c.status.in_(ACTIVE))
                .values(status=MatchStatus.RUNNING, started_at=now, attempts=m.c.attempts + 1)
            ).rowcount
            if not done:
                return False
            tid = conn.execute(select(m.c.tournament_id).where(m.c.id == match_id)).scalar_one()
            conn.execute(
                update(t).where(t.c.id == tid, t.c.status == TournamentStatus.QUEUED).values(status=TournamentStatus.RUNNING, started_at=now)
            )
        return True

    def find_judgement(self, key: str, *more: str) -> StoredJudgement | None:
        """The judgement stored under `key`, else under the first of `more` that has one
        (a request's answering keys, best first: `leaderboard.keys.answering_keys`); None."""
        j = s.judgements
        keys = [key, *more]
        with self._read() as conn:
            rows = {r.key: r for r in conn.execute(select(j).where(j.c.key.in_(keys)))}
        return next((StoredJudgement.of(rows[k]) for k in keys if k in rows), None)

    def save_judgement(self, new: NewJudgement) -> tuple[int, bool]:
        """Store a judgement once under its key; a second writer gets the first one's id."""
        j = s.judgements
        values = {
            "key": new.key,
            "judge": new.judge,
            "criteria": new.criteria,
            "template_version": new.template_version,
            "a_id": new.a_id,
            "b_id": new.b_id,
            "a_hash": new.a_hash,
            "outcome": new.outcome.value,
            "consistent": new.consistent,
            "calls": json.dumps(new.calls),
            "input_tokens": new.input_tokens,
            "output_tokens": new.output_tokens,
            "cost_usd": new.cost_usd,
            "created_at": self._clock(),
            "match_id": new.match_id,
            "order_policy": None if new.order is None else new.order.value,
        }
        try:
            with self._write() as conn:
                existing = conn.execute(select(j.c.id).where(j.c.key == new.key)).scalar()
                if existing is not None:
                    return int(existing), False
                return int(conn.execute(j.insert().values(**values)).inserted_primary_key[0]), True
        except IntegrityError:
            found = self.find_judgement(new.key)
            if found is None:
                raise
            return int(found.id), False

    def resolve_match(
        self, match_id: int, judgement_id: int, outcome: Winner, consistent: bool, *, made: bool = False
    ) -> bool:
        """Mark a match done with its judgement; False when it was already finished.

        The match gets the next `seq` (the order ratings replay) and is `counted` unless an
        earlier match already counted this judgement for the same two submissions. `made`: this
        match's own calls made the judgement (the judge answers), which ends its run's streak of
        failed matches.
        """
        m = s.matches
        now = self._clock()
        with self._write() as conn:
            row = conn.execute(select(m.c.a_id, m.c.b_id, m.c.status).where(m.c.id == match_id)).first()
            if row is None or row.status not in ACTIVE:
                return False
            seq = _next_seq(conn)
            earlier = conn.execute(
                select(m.c.id).where(
                    m.c.judgement_id == judgement_id,
                    m.c.counted.is_(True),
                    or_(and_(m.c.a_id == row.a_id, m.c.b_id == row.b_id), and_(m.c.a_id == row.b_id, m.c.b_id == row.a_id)),
                ).limit(1)
            ).first()
            conn.execute(
                update(m)
                .where(m.c.id == match_id)
                .values(
                    status=MatchStatus.DONE,
                    judgement_id=judgement_id,
                    outcome=outcome.value,
                    consistent=consistent,
                    finished_at=now,
                    last_error=None,
                    seq=seq,
                    counted=earlier is None,
                )
            )
            if made:
                t = s.tournaments
                tid = select(m.c.tournament_id).where(m.c.id == match_id).scalar_subquery()
                conn.execute(update(t).where(t.c.id == tid, t.c.failure_streak != 0).values(failure_streak=0))
            self._settle_tournament(conn, match_id, now)
        return True

    def revision(self) -> int:
        """How many matches were ever resolved: any board built at this revision is current."""
        with self._read() as conn:
            return int(conn.execute(select(s.counters.c.value).where(s.counters.c.name == "resolved")).scalar_one())

    def fail_match(self, match_id: int, error: str, *, final: bool, stop_after: int = 0) -> bool:
        """Record an error: `final` marks the match failed, otherwise it waits to be retried
        (the caller hands it to the queue again and records the new job with mark_queued).

        A final failure lengthens its run's streak of failed matches; when the streak reaches
        `stop_after` (0: never) the run stops itself: status "failed", `stopped_reason`
        "failing", its other active matches cancelled, so a judge that keeps failing (a revoked
        key, a model that no longer exists) is not asked for every match, round after round.
        True when this failure stopped the run.
        """
        m, t = s.matches, s.tournaments
        now = self._clock()
        with self._write() as conn:
            values: dict[str, Any] = {"last_error": error[:2000]}
            if final:
                values.update(status=MatchStatus.FAILED, finished_at=now)
            else:
                values.update(status=MatchStatus.QUEUED, enqueued_at=now)
            changed = conn.execute(
                update(m).where(m.c.id == match_id, m.c.status.in_(ACTIVE)).values(**values)
            ).rowcount
            stopped = False
            if final and changed:
                tid = conn.execute(select(m.c.tournament_id).where(m.c.id == match_id)).scalar_one()
                conn.execute(update(t).where(t.c.id == tid).values(failure_streak=t.c.failure_streak + 1))
                streak = conn.execute(select(t.c.failure_streak).where(t.c.id == tid)).scalar_one()
                if stop_after and streak >= stop_after:
                    stopped = stop_run(conn, tid, now, TournamentStatus.FAILED, STOPPED_FAILING)
            self._settle_tournament(conn, match_id, now)
        return stopped

    def charge_match(self, match_id: int, cost_usd: float | None, *, calls: int = 0) -> None:
        """Add to what the match's attempts paid for calls no stored judgement records
        (`failed_cost_usd`, part of its tournament's spend; None: the judge has no price) and to
        how many such calls there were (`failed_calls`, which an adaptive run's `max_calls`
        counts), whatever the match's status: a call paid while the run was being stopped was
        paid all the same."""
        m = s.matches
        values: dict[str, Any] = {}
        if cost_usd:
            values["failed_cost_usd"] = func.coalesce(m.c.failed_cost_usd, 0.0) + float(cost_usd)
        if calls:
            values["failed_calls"] = m.c.failed_calls + int(calls)
        if not values:
            return
        with self._write() as conn:
            conn.execute(update(m).where(m.c.id == match_id).values(**values))

    def _settle_tournament(self, conn: Connection, match_id: int, now: float) -> None:
        """Finish a tournament once none of its matches is still active; an adaptive one stays
        running between rounds (its planner, `service.usecases.rounds`, finishes it)."""
        m, t = s.matches, s.tournaments
        found = conn.execute(
            select(m.c.tournament_id, t.c.mode).join(t, t.c.id == m.c.tournament_id).where(m.c.id == match_id)
        ).first()
        if found is None or found.mode == Mode.ADAPTIVE.value:
            return
        tid = found.tournament_id
        still = conn.execute(
            select(m.c.id).where(m.c.tournament_id == tid, m.c.status.in_(ACTIVE)).limit(1)
        ).first()
        if still is not None:  # the common case, answered from the index without counting the run
            return
        counts = dict(
            conn.execute(select(m.c.status, func.count()).where(m.c.tournament_id == tid).group_by(m.c.status)).all()
        )
        if any(counts.get(st, 0) for st in ACTIVE):
            return
        failed = counts.get(MatchStatus.FAILED, 0) and not counts.get(MatchStatus.DONE, 0)
        status = TournamentStatus.FAILED if failed else TournamentStatus.DONE
        conn.execute(
            update(t)
            .where(t.c.id == tid, t.c.status.in_((TournamentStatus.QUEUED, TournamentStatus.RUNNING)))
            .values(status=status, finished_at=now)
        )


STOPPED_FAILING = "failing"


def _next_seq(conn: Connection) -> int:
    """Take the next resolve sequence number; the counter row serialises concurrent writers."""
    c = s.counters
    conn.execute(update(c).where(c.c.name == "resolved").values(value=c.c.value + 1))
    return int(conn.execute(select(c.c.value).where(c.c.name == "resolved")).scalar_one())
