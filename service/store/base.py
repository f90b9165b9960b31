"""The store's foundation: its exceptions, the records it takes, and the engine.

Writers queue, one at a time, on both backends, so every read-check-then-write in the store (a
compare-and-set, a key looked up before it is inserted, the `resolved` counter) sees what the
writer before it committed. On SQLite, write transactions begin IMMEDIATE so that the API, the
workers and the scheduler (several processes on one file) queue for the write lock instead of
failing half-way. On PostgreSQL, a write transaction first takes one transaction-scoped advisory
lock (`WRITE_LOCK`, per database), the same queue across machines, so two writers never both pass
a check and never deadlock on each other's row locks; and a read transaction is REPEATABLE READ,
one snapshot for all its statements, as a SQLite read transaction is.

Every write transaction also adds one to the `changes` counter before it commits (`_write`),
unless it declares that it changes nothing a page shows (`shown=False`): the pages poll that
counter with the `resolved` one (`marks.Marks.page_mark`) to learn, in one indexed read, whether
anything they show may have changed. One counter moved by the one write path, rather than a bump
in each method, so a new kind of write cannot forget it.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import case, create_engine, event, func, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from leaderboard.conversation import Turn, from_canonical
from leaderboard.spec import RunSpec
from leaderboard.types import MatchStatus, OrderPolicy, Submission, TournamentStatus, Winner

from . import schema as s
from . import space
from .migrations import migrate

ACTIVE = (MatchStatus.PENDING, MatchStatus.QUEUED, MatchStatus.RUNNING)  # a match still to be judged
# The PostgreSQL advisory lock every write transaction takes first (the bytes of "joust").
WRITE_LOCK = 0x6A6F757374
COUNTER_MAX = 2**31 - 1  # the `counters` table's integer column on PostgreSQL


class Conflict(Exception):
    """The same key already holds different content."""


class ReferenceMismatch(Exception):
    """A submission states a reference answer other than the one its question already has."""


class NotFound(Exception):
    """An id names nothing."""


class StoreUnavailable(Exception):
    """The database did not answer (stopped, restarting, unreachable, refusing connections): the
    transaction changed nothing and may be tried again once it is back. The API answers 503 with
    the reason; a worker holds its matches until the database returns (`workers.outage`).
    `reason` is the driver's first line, for the logs (it may name the server's address)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StoreFull(StoreUnavailable):
    """The database's disk is full: the write changed nothing, reads still work, and writes fail
    until space is freed. The API answers 507 with `reason` (the driver's words for it, never a
    path inside the server) and `where` (the SQLite file, or the PostgreSQL server); a worker
    holds its matches as through an outage, probing with a write (`Database.ping_write`)."""

    def __init__(self, reason: str, where: str = "") -> None:
        super().__init__(reason)
        self.where = where


# What each backend says when its disk is full: SQLite's SQLITE_FULL, PostgreSQL's SQLSTATE 53100
# (disk_full: "could not extend file ...: No space left on device") and an ENOSPC passed through.
FULL_DISK_WORDS = ("database or disk is full", "no space left on device", "disk full")
DISK_FULL_SQLSTATE = "53100"


def full_disk_words(text: str) -> str | None:
    """The words of `text` that say a disk is full (as they appear in FULL_DISK_WORDS), or None."""
    lowered = text.lower()
    return next((words for words in FULL_DISK_WORDS if words in lowered), None)


def unavailable(exc: BaseException, where: str = "") -> StoreUnavailable | None:
    """`exc` as a StoreUnavailable when it says the database cannot be reached (a driver's
    OperationalError or InterfaceError, or a connection found dead mid-statement), as a StoreFull
    when it says its disk is full; None for anything else (a constraint, a bug), which must not
    be mistaken for an outage."""
    if isinstance(exc, (OperationalError, InterfaceError)) or (
        isinstance(exc, DBAPIError) and exc.connection_invalidated
    ):
        original = getattr(exc, "orig", None) or exc
        first = (str(original).strip().splitlines() or [type(original).__name__])[0]
        words = full_disk_words(str(original))
        if words is not None or getattr(original, "sqlstate", None) == DISK_FULL_SQLSTATE:
            return StoreFull(f"{type(original).__name__}: {words or 'disk full'}", where)
        return StoreUnavailable(f"{type(original).__name__}: {first}"[:300])
    return None


class RetryRefused(Exception):
    """A run cannot be retried now: it is still active, or nothing in it failed."""


@dataclass(frozen=True)
class NewSubmission:
    """A validated submission as the API received it."""

    question_id: str
    question: str
    model: str
    scenario: str
    output: str  # a conversation's: its assistant turns (`leaderboard.conversation.assistant_text`)
    metadata: dict = field(default_factory=dict)
    reference: str | None = None
    turns: tuple[Turn, ...] | None = None


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
    cost_usd: float | None = None  # None: the judge's model has no price
    match_id: int | None = None  # the match whose worker made it (a tournament's spend)
    # The order policy it was judged with (part of its key); None where the order does not
    # matter (`leaderboard.keys.keyed_order`).
    order: OrderPolicy | None = None


@dataclass(frozen=True)
class MatchContext:
    """Everything a worker needs to judge one match (`spec`: its tournament's, parsed)."""

    match_id: int
    tournament_id: int
    status: str
    attempts: int
    spec: RunSpec
    a: Submission
    b: Submission
    # submission id -> its metadata (the `factsim` criteria set reads a summary's sources there)
    metadata: dict[int, dict] = field(default_factory=dict)
    # the question's reference answer (`Store.references`: the spec's reference model's output,
    # else the one its submissions state); None: none
    reference: str | None = None


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


def submission_of(row: Any) -> Submission:
    return Submission(
        id=row.id,
        question_id=row.question_id,
        question=row.question,
        model=row.model,
        scenario=row.scenario,
        output=row.output,
        reference=row.reference,
        turns=None if row.turns is None else from_canonical(row.turns),
    )


class Database:
    """The engine and the two kinds of transaction every part of the store uses."""

    def __init__(self, url: str, clock: Callable[[], float] = time.time) -> None:
        self.url = url
        self._clock = clock
        if url.startswith("sqlite"):
            self.engine = _sqlite_engine(url)
        else:
            self.engine = create_engine(url, pool_pre_ping=True)
        self._postgres = self.engine.dialect.name == "postgresql"
        database = self.engine.url.database
        self._sqlite_dir = Path(database).resolve().parent if not self._postgres and database and database != ":memory:" \
            else None
        with self._write(shown=False, spare=False) as conn:  # a start on a full disk still serves reads
            migrate(conn)

    def close(self) -> None:
        """Release the connection pool."""
        self.engine.dispose()

    @property
    def where(self) -> str:
        """Where the data lives, for a person told its disk is full: the SQLite file, or the
        PostgreSQL server (its address, never its password)."""
        url = self.engine.url
        if not self._postgres and url.database:
            return str(Path(url.database).resolve())
        return f"{url.get_backend_name()} at {url.host or 'localhost'}:{url.port or 5432}/{url.database}"

    @contextmanager
    def _write(self, *, shown: bool = True, spare: bool = True) -> Iterator[Connection]:
        """One write transaction; unless `shown` is False (nothing a page shows can change), it
        moves the `changes` counter as it commits. A transaction that raises moves nothing.
        Raises StoreUnavailable when the database cannot be reached, StoreFull (before anything
        begins) when a SQLite database's disk is short of `space.MIN_FREE_BYTES`."""
        if spare and self._sqlite_dir is not None and (short := space.shortage(self._sqlite_dir)) is not None:
            raise StoreFull(short, self.where)
        with _outage_as_unavailable(self.where), self.engine.connect().execution_options(immediate=True) as conn:
            with conn.begin():
                if self._postgres:  # wait for the writer before us to commit (see the module doc)
                    conn.execute(select(func.pg_advisory_xact_lock(WRITE_LOCK)))
                yield conn
                if shown:
                    note_change(conn)

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """One read transaction (one snapshot); raises StoreUnavailable when the database cannot
        be reached."""
        with _outage_as_unavailable(self.where), self.engine.connect() as conn:
            if self._postgres:  # one snapshot for the whole read, as on SQLite
                conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    def ping(self) -> None:
        """Raise StoreUnavailable unless the database answers a trivial query."""
        with self._read() as conn:
            conn.execute(select(1))

    def ping_write(self) -> None:
        """Raise StoreUnavailable (StoreFull: its disk is full) unless the database takes a write:
        the `changes` counter moved, which nothing shows but the pages' "anything new?" look."""
        with self._write() as conn:
            conn.execute(select(1))


@contextmanager
def _outage_as_unavailable(where: str = "") -> Iterator[None]:
    """Turn a driver's word that the database cannot be reached into StoreUnavailable, the one
    error above the store that means "try again once it is back"."""
    try:
        yield
    except DBAPIError as exc:
        down = unavailable(exc, where)
        if down is None:
            raise
        raise down from exc


def note_change(conn: Connection) -> None:
    """Move the `changes` counter (inside the caller's write transaction), back to 0 after
    COUNTER_MAX: it only has to differ from the last value read, and a 32-bit PostgreSQL integer
    that every write moves would overflow within months, failing every write."""
    c = s.counters
    moved = case((c.c.value < COUNTER_MAX, c.c.value + 1), else_=0)
    conn.execute(update(c).where(c.c.name == s.CHANGES).values(value=moved))


def stop_run(conn: Connection, tournament_id: int, now: float, status: TournamentStatus, reason: str) -> bool:
    """End a queued or running run early with `status` and `stopped_reason`, cancelling its
    active matches (their `last_error` says why); judgements made stay. False if it had ended."""
    t, m = s.tournaments, s.matches
    stopped = conn.execute(
        update(t)
        .where(t.c.id == tournament_id, t.c.status.in_((TournamentStatus.QUEUED, TournamentStatus.RUNNING)))
        .values(status=status, finished_at=now, stopped_reason=reason)
    ).rowcount
    if stopped:
        conn.execute(
            update(m)
            .where(m.c.tournament_id == tournament_id, m.c.status.in_(ACTIVE))
            .values(status=MatchStatus.CANCELLED, finished_at=now, last_error=f"tournament stopped: {reason}")
        )
    return bool(stopped)
