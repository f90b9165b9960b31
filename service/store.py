"""The store: the only module that talks to the database.

Every write is one transaction, so a request either stores all it asked for or nothing. On
SQLite, write transactions begin IMMEDIATE so that the API, the workers and the scheduler (three
processes on one file) queue for the write lock instead of failing half-way.

Exceptions: `Conflict` (same key, different content: the API answers 409) and `NotFound`.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from sqlalchemy import and_, case, create_engine, event, func, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from leaderboard.keys import content_hash
from leaderboard.players import SideRow
from leaderboard.types import Pair, Submission, Winner

from . import schema as s

ACTIVE = ("pending", "queued", "running")


class Conflict(Exception):
    """The same key already holds different content."""


class NotFound(Exception):
    """An id names nothing."""


@dataclass(frozen=True)
class NewSubmission:
    """A validated submission as the API received it."""

    question_id: str
    question: str
    model: str
    scenario: str
    output: str
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class NewJudgement:
    """A finished judgement, ready to be stored once under its key."""

    key: str
    judge: str
    criteria: str
    template_version: str
    a_id: int
    b_id: int
    a_hash: str
    outcome: Winner
    consistent: bool
    calls: list[dict]
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class MatchContext:
    """Everything a worker needs to judge one match."""

    match_id: int
    tournament_id: int
    status: str
    attempts: int
    spec: dict
    a: Submission
    b: Submission


def _sqlite_engine(url: str) -> Engine:
    engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=60000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get("immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _submission(row: Any) -> Submission:
    return Submission(
        id=row.id,
        question_id=row.question_id,
        question=row.question,
        model=row.model,
        scenario=row.scenario,
        output=row.output,
    )


class Store:
    """Submissions, tournaments, matches and judgements, in SQLite or PostgreSQL."""

    def __init__(self, url: str, clock: Callable[[], float] = time.time) -> None:
        self.url = url
        self._clock = clock
        if url.startswith("sqlite"):
            self.engine = _sqlite_engine(url)
        else:
            self.engine = create_engine(url, pool_pre_ping=True)
        with self._write() as conn:
            s.migrate(conn)

    def close(self) -> None:
        """Release the connection pool."""
        self.engine.dispose()

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self.engine.connect().execution_options(immediate=True) as conn:
            with conn.begin():
                yield conn

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            with conn.begin():
                yield conn

    # ---- submissions -------------------------------------------------------------------

    def add_submissions(self, items: Sequence[NewSubmission]) -> list[tuple[int, bool]]:
        """Store new submissions; the same content again is a no-op returning the same id.

        Returns (id, created) per item, in order. Raises Conflict, storing nothing, when any
        item's (question_id, model, scenario) already holds a different question or output.
        """
        now = self._clock()
        results: list[tuple[int, bool]] = []
        t = s.submissions
        try:
            with self._write() as conn:
                for item in items:
                    found = conn.execute(
                        select(t.c.id, t.c.question_hash, t.c.output_hash).where(
                            t.c.question_id == item.question_id,
                            t.c.model == item.model,
                            t.c.scenario == item.scenario,
                        )
                    ).first()
                    q_hash, o_hash = content_hash(item.question), content_hash(item.output)
                    if found is not None:
                        if (found.question_hash, found.output_hash) != (q_hash, o_hash):
                            what = "question" if found.question_hash != q_hash else "output"
                            raise Conflict(
                                f"submission {found.id} (question_id={item.question_id!r}, "
                                f"model={item.model!r}, scenario={item.scenario!r}) already "
                                f"holds a different {what}"
                            )
                        results.append((found.id, False))
                        continue
                    new_id = conn.execute(
                        t.insert().values(
                            question_id=item.question_id,
                            question=item.question,
                            model=item.model,
                            scenario=item.scenario,
                            output=item.output,
                            output_hash=o_hash,
                            question_hash=q_hash,
                            metadata=json.dumps(item.metadata, sort_keys=True),
                            created_at=now,
                        )
                    ).inserted_primary_key[0]
                    results.append((int(new_id), True))
        except IntegrityError as exc:  # a concurrent writer took the key first
            raise Conflict(f"a submission with the same key was written concurrently: {exc.orig}") from None
        return results

    def list_submissions(
        self,
        *,
        model: str | None = None,
        scenario: str | None = None,
        question_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[dict]:
        """Submissions in id order, optionally filtered."""
        t = s.submissions
        query = select(t).order_by(t.c.id).limit(limit).offset(offset)
        for column, value in ((t.c.model, model), (t.c.scenario, scenario), (t.c.question_id, question_id)):
            if value is not None:
                query = query.where(column == value)
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [
            {
                "id": r.id,
                "question_id": r.question_id,
                "question": r.question,
                "model": r.model,
                "scenario": r.scenario,
                "output": r.output,
                "metadata": json.loads(r.metadata),
                "created_at": r.created_at,
            }
            for r in rows
        ]

    def select_submissions(
        self,
        *,
        models: Sequence[str] | None = None,
        scenarios: Sequence[str] | None = None,
        questions: Sequence[str] | None = None,
    ) -> list[Submission]:
        """The submissions a tournament's filters admit (None = no filter), in id order."""
        t = s.submissions
        query = select(t).order_by(t.c.id)
        for column, values in ((t.c.model, models), (t.c.scenario, scenarios), (t.c.question_id, questions)):
            if values is not None:
                query = query.where(column.in_(list(values)))
        with self._read() as conn:
            return [_submission(r) for r in conn.execute(query)]

    # ---- tournaments ------------------------------------------------------------------

    def create_tournament(
        self,
        name: str,
        spec: dict,
        pairs: Sequence[Pair],
        *,
        schedule: str | None = None,
        next_run_at: float | None = None,
        parent_id: int | None = None,
    ) -> int:
        """Create a tournament and its pending matches in one transaction."""
        now = self._clock()
        with self._write() as conn:
            tid = int(
                conn.execute(
                    s.tournaments.insert().values(
                        name=name,
                        spec=json.dumps(spec, sort_keys=True),
                        status="queued" if pairs else "done",
                        created_at=now,
                        finished_at=None if pairs else now,
                        schedule=schedule,
                        next_run_at=next_run_at,
                        parent_id=parent_id,
                    )
                ).inserted_primary_key[0]
            )
            if pairs:
                conn.execute(
                    s.matches.insert(),
                    [
                        {"tournament_id": tid, "a_id": p.a, "b_id": p.b, "status": "pending", "attempts": 0,
                         "enqueued_at": now}
                        for p in pairs
                    ],
                )
        return tid

    def get_tournament(self, tournament_id: int) -> dict:
        """A tournament with its match counts; raises NotFound."""
        t, m = s.tournaments, s.matches
        with self._read() as conn:
            row = conn.execute(select(t).where(t.c.id == tournament_id)).first()
            if row is None:
                raise NotFound(f"no tournament {tournament_id}")
            counts = dict(
                conn.execute(
                    select(m.c.status, func.count()).where(m.c.tournament_id == tournament_id).group_by(m.c.status)
                ).all()
            )
            runs = conn.execute(
                select(t.c.id).where(t.c.parent_id == tournament_id).order_by(t.c.id)
            ).scalars().all()
        return _tournament_view(row, counts, list(runs))

    def list_tournaments(self, *, limit: int = 100, offset: int = 0) -> list[dict]:
        """Tournaments, newest first, with their counts."""
        t, m = s.tournaments, s.matches
        with self._read() as conn:
            rows = conn.execute(select(t).order_by(t.c.id.desc()).limit(limit).offset(offset)).all()
            ids = [r.id for r in rows]
            counts: dict[int, dict[str, int]] = {i: {} for i in ids}
            for tid, status, n in conn.execute(
                select(m.c.tournament_id, m.c.status, func.count())
                .where(m.c.tournament_id.in_(ids))
                .group_by(m.c.tournament_id, m.c.status)
            ):
                counts[tid][status] = n
        return [_tournament_view(r, counts[r.id], None) for r in rows]

    def cancel_tournament(self, tournament_id: int) -> dict:
        """Cancel the matches not yet judged and stop a schedule from recurring."""
        t, m = s.tournaments, s.matches
        now = self._clock()
        with self._write() as conn:
            row = conn.execute(select(t.c.status).where(t.c.id == tournament_id)).first()
            if row is None:
                raise NotFound(f"no tournament {tournament_id}")
            conn.execute(
                update(m)
                .where(m.c.tournament_id == tournament_id, m.c.status.in_(ACTIVE))
                .values(status="cancelled", finished_at=now)
            )
            values: dict[str, Any] = {"next_run_at": None}
            if row.status in ("queued", "running"):
                values.update(status="cancelled", finished_at=now)
            conn.execute(update(t).where(t.c.id == tournament_id).values(**values))
        return self.get_tournament(tournament_id)

    def pending_matches(self, tournament_id: int) -> list[int]:
        """Matches created but not yet handed to the queue."""
        m = s.matches
        with self._read() as conn:
            return list(
                conn.execute(
                    select(m.c.id).where(m.c.tournament_id == tournament_id, m.c.status == "pending").order_by(m.c.id)
                ).scalars()
            )

    def mark_queued(self, jobs: dict[int, str]) -> None:
        """Record that these matches (id -> RQ job id) now have a job on the queue."""
        m = s.matches
        now = self._clock()
        with self._write() as conn:
            for match_id, job_id in jobs.items():
                conn.execute(
                    update(m)
                    .where(m.c.id == match_id, m.c.status.in_(ACTIVE))
                    .values(status="queued", job_id=job_id, enqueued_at=now)
                )

    # ---- the worker's side ------------------------------------------------------------

    def match_context(self, match_id: int) -> MatchContext:
        """A match with its tournament's spec and both submissions; raises NotFound."""
        m, t, sub = s.matches, s.tournaments, s.submissions
        with self._read() as conn:
            row = conn.execute(
                select(m, t.c.spec).join(t, t.c.id == m.c.tournament_id).where(m.c.id == match_id)
            ).first()
            if row is None:
                raise NotFound(f"no match {match_id}")
            subs = {r.id: _submission(r) for r in conn.execute(select(sub).where(sub.c.id.in_([row.a_id, row.b_id])))}
        return MatchContext(
            match_id=row.id,
            tournament_id=row.tournament_id,
            status=row.status,
            attempts=row.attempts,
            spec=json.loads(row.spec),
            a=subs[row.a_id],
            b=subs[row.b_id],
        )

    def start_match(self, match_id: int) -> bool:
        """Mark a match running; False when it is already finished or cancelled."""
        m, t = s.matches, s.tournaments
        now = self._clock()
        with self._write() as conn:
            done = conn.execute(
                update(m)
                .where(m.c.id == match_id, m.c.status.in_(ACTIVE))
                .values(status="running", started_at=now, attempts=m.c.attempts + 1)
            ).rowcount
            if not done:
                return False
            tid = conn.execute(select(m.c.tournament_id).where(m.c.id == match_id)).scalar_one()
            conn.execute(
                update(t).where(t.c.id == tid, t.c.status == "queued").values(status="running", started_at=now)
            )
        return True

    def find_judgement(self, key: str) -> dict | None:
        """The judgement stored under a key, if any."""
        j = s.judgements
        with self._read() as conn:
            row = conn.execute(select(j).where(j.c.key == key)).first()
        return None if row is None else _judgement_view(row)

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
            return int(found["id"]), False

    def resolve_match(self, match_id: int, judgement_id: int, outcome: Winner, consistent: bool) -> bool:
        """Mark a match done with its judgement; False when it was already finished."""
        m = s.matches
        now = self._clock()
        with self._write() as conn:
            changed = conn.execute(
                update(m)
                .where(m.c.id == match_id, m.c.status.in_(ACTIVE))
                .values(
                    status="done",
                    judgement_id=judgement_id,
                    outcome=outcome.value,
                    consistent=consistent,
                    finished_at=now,
                    last_error=None,
                )
            ).rowcount
            self._settle_tournament(conn, match_id, now)
        return bool(changed)

    def fail_match(self, match_id: int, error: str, *, final: bool) -> None:
        """Record an error: `final` marks the match failed, otherwise it waits to be retried
        (the caller hands it to the queue again and records the new job with mark_queued)."""
        m = s.matches
        now = self._clock()
        with self._write() as conn:
            values: dict[str, Any] = {"last_error": error[:2000]}
            if final:
                values.update(status="failed", finished_at=now)
            else:
                values.update(status="queued", enqueued_at=now)
            conn.execute(update(m).where(m.c.id == match_id, m.c.status.in_(ACTIVE)).values(**values))
            self._settle_tournament(conn, match_id, now)

    def _settle_tournament(self, conn: Connection, match_id: int, now: float) -> None:
        """Finish a tournament once none of its matches is still active."""
        m, t = s.matches, s.tournaments
        tid = conn.execute(select(m.c.tournament_id).where(m.c.id == match_id)).scalar()
        if tid is None:
            return
        counts = dict(
            conn.execute(select(m.c.status, func.count()).where(m.c.tournament_id == tid).group_by(m.c.status)).all()
        )
        if any(counts.get(st, 0) for st in ACTIVE):
            return
        status = "failed" if counts.get("failed", 0) and not counts.get("done", 0) else "done"
        conn.execute(
            update(t)
            .where(t.c.id == tid, t.c.status.in_(("queued", "running")))
            .values(status=status, finished_at=now)
        )

    # ---- views ------------------------------------------------------------------------

    def tournament_judgements(self, tournament_id: int) -> list[dict]:
        """The judgements of a tournament's matches, oriented to each match's (a, b)."""
        m, j, sa = s.matches, s.judgements, s.submissions
        with self._read() as conn:
            if conn.execute(select(s.tournaments.c.id).where(s.tournaments.c.id == tournament_id)).first() is None:
                raise NotFound(f"no tournament {tournament_id}")
            rows = conn.execute(
                select(
                    m.c.id.label("match_id"),
                    m.c.a_id.label("match_a"),
                    m.c.b_id.label("match_b"),
                    m.c.outcome.label("match_outcome"),
                    m.c.consistent.label("match_consistent"),
                    sa.c.output_hash.label("match_a_hash"),
                    j.c.id, j.c.judge, j.c.criteria, j.c.a_id, j.c.b_id, j.c.a_hash, j.c.calls,
                    j.c.input_tokens, j.c.output_tokens, j.c.cost_usd, j.c.created_at,
                )
                .join(j, j.c.id == m.c.judgement_id)
                .join(sa, sa.c.id == m.c.a_id)
                .where(m.c.tournament_id == tournament_id, m.c.status == "done")
                .order_by(m.c.id)
            ).all()
        return [
            {
                "match_id": r.match_id,
                "judgement_id": r.id,
                "a": r.match_a,
                "b": r.match_b,
                "outcome": r.match_outcome,
                "consistent": bool(r.match_consistent),
                "judge": r.judge,
                "criteria": r.criteria,
                "calls": _calls_for(
                    json.loads(r.calls), (r.a_id, r.b_id), (r.match_a, r.match_b), r.a_hash == r.match_a_hash
                ),
                "input_tokens": r.input_tokens,
                "output_tokens": r.output_tokens,
                "cost_usd": r.cost_usd,
                "created_at": r.created_at,
            }
            for r in rows
        ]

    def side_rows(self, *, tournament_id: int | None = None, judge: str | None = None) -> list[SideRow]:
        """One row per (judgement, pair of submissions), in judgement order, for the ratings.

        A judgement reached by several matches (several tournaments, nightly re-runs) counts once
        for the same two submissions.
        """
        m, j, t = s.matches, s.judgements, s.tournaments
        sa, sb = s.submissions.alias("sa"), s.submissions.alias("sb")
        query = (
            select(
                m.c.judgement_id,
                func.min(m.c.id).label("first_match"),
                m.c.a_id,
                m.c.b_id,
                m.c.outcome,
                sa.c.model.label("a_model"),
                sa.c.scenario.label("a_scenario"),
                sb.c.model.label("b_model"),
                sb.c.scenario.label("b_scenario"),
                sa.c.question_id,
            )
            .join(j, j.c.id == m.c.judgement_id)
            .join(sa, sa.c.id == m.c.a_id)
            .join(sb, sb.c.id == m.c.b_id)
            .where(m.c.status == "done")
            .group_by(m.c.judgement_id, m.c.a_id, m.c.b_id, m.c.outcome, sa.c.model, sa.c.scenario,
                      sb.c.model, sb.c.scenario, sa.c.question_id)
            .order_by(m.c.judgement_id, "first_match")
        )
        if tournament_id is not None:
            runs = select(t.c.id).where(or_(t.c.id == tournament_id, t.c.parent_id == tournament_id))
            query = query.where(m.c.tournament_id.in_(runs))
        if judge is not None:
            query = query.where(j.c.judge == judge)
        seen: set[tuple[int, int, int]] = set()
        rows: list[SideRow] = []
        with self._read() as conn:
            for r in conn.execute(query):
                pair = (r.judgement_id, min(r.a_id, r.b_id), max(r.a_id, r.b_id))
                if pair in seen:
                    continue
                seen.add(pair)
                rows.append(
                    SideRow(r.a_model, r.a_scenario, r.b_model, r.b_scenario, Winner(r.outcome), r.question_id)
                )
        return rows

    # ---- the scheduler's side ---------------------------------------------------------

    def due_schedules(self, now: float) -> list[dict]:
        """Recurring tournaments whose next run is due."""
        t = s.tournaments
        with self._read() as conn:
            rows = conn.execute(
                select(t.c.id, t.c.name, t.c.spec, t.c.schedule, t.c.next_run_at)
                .where(t.c.schedule.is_not(None), t.c.next_run_at.is_not(None), t.c.next_run_at <= now)
                .order_by(t.c.next_run_at)
            ).all()
        return [
            {"id": r.id, "name": r.name, "spec": json.loads(r.spec), "schedule": r.schedule, "next_run_at": r.next_run_at}
            for r in rows
        ]

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

    def stale_matches(self, now: float, timeout_s: float, pending_grace_s: float = 30.0) -> list[dict]:
        """Matches that may have lost their job: never handed out after `pending_grace_s`, or
        handed out longer ago than `timeout_s` and not finished.

        They belong to a Redis that was down, a killed worker, or a queue that lost its jobs (a
        Redis restarted without its files); the scheduler checks each one's job and hands it out
        again. Judgements are keyed, so a match judged twice is still stored once.
        """
        m = s.matches
        stamp = case((m.c.status == "running", m.c.started_at), else_=m.c.enqueued_at)
        with self._read() as conn:
            rows = conn.execute(
                select(m.c.id, m.c.status, m.c.job_id)
                .where(
                    or_(
                        and_(m.c.status.in_(("queued", "running")), stamp < now - timeout_s),
                        and_(m.c.status == "pending", m.c.enqueued_at < now - pending_grace_s),
                    )
                )
                .order_by(m.c.id)
            ).all()
        return [{"id": r.id, "status": r.status, "job_id": r.job_id} for r in rows]


def _tournament_view(row: Any, counts: dict[str, int], runs: list[int] | None) -> dict:
    spec = json.loads(row.spec)
    view = {
        "id": row.id,
        "name": row.name,
        "status": row.status,
        "spec": spec,
        "judge": spec.get("judge"),
        "mode": spec.get("mode"),
        "order": spec.get("order"),
        "matches_total": sum(counts.values()),
        "matches_done": counts.get("done", 0),
        "matches_failed": counts.get("failed", 0),
        "matches_cancelled": counts.get("cancelled", 0),
        "matches_pending": sum(counts.get(st, 0) for st in ACTIVE),
        "created_at": row.created_at,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
        "schedule": row.schedule,
        "next_run_at": row.next_run_at,
        "parent_id": row.parent_id,
    }
    if runs is not None:
        view["runs"] = runs
    return view


def _judgement_view(row: Any) -> dict:
    return {
        "id": row.id,
        "key": row.key,
        "judge": row.judge,
        "criteria": row.criteria,
        "template_version": row.template_version,
        "a_id": row.a_id,
        "b_id": row.b_id,
        "a_hash": row.a_hash,
        "outcome": row.outcome,
        "consistent": bool(row.consistent),
        "calls": json.loads(row.calls),
        "cost_usd": row.cost_usd,
    }


def _calls_for(calls: list[dict], judged: tuple[int, int], match: tuple[int, int], same_side: bool) -> list[dict]:
    """Calls re-labelled with the match's submission ids.

    A match may reuse a judgement made for other submissions with the same contents, possibly
    the other way round; `same_side` says whether the match's a holds the judgement's a content.
    """
    relabel = {judged[0]: match[0], judged[1]: match[1]} if same_side else {judged[0]: match[1], judged[1]: match[0]}
    return [{**call, "first": relabel.get(call["first"], call["first"])} for call in calls]
