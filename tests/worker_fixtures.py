"""pytest fixtures and helpers for tests that run the worker below the API: this process's worker
runtime pointed (through the environment) at the test's Redis, its database (a SQLite file in its
tmp_path, then a fresh PostgreSQL database: `worker_database_url` runs each test on both) and a
fake Messages API; a store on that database; helpers that submit, start a tournament and work it
with real RQ burst workers.

A module changes the fake's policy by defining its own `fake`, and adds to (or, with None, removes
from) the environment by defining `env_vars`.

tests/conftest.py imports them (`from tests.worker_fixtures import *` takes exactly `__all__`).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from redis import Redis

from leaderboard.spec import RunSpec
from service.config import Settings
from service.store import NewSubmission, Store
from service.store.queue import JobQueue, job_queue
from service.store.tournament_rows import Tournament
from service.usecases.tournaments import launch
from tests.fake_anthropic import FakeAnthropic, prefer
from workers import jobs
from workers.rq_worker import JoustWorker
from workers.stalls import awaiting

__all__ = ["db", "env", "env_vars", "fake", "worker_database_url"]  # fixtures; the helpers are imported by name

MODELS = ["good", "mid", "bad"]
POLL_S = 0.05  # between bursts, while nothing is in flight here: a delayed job falls due meanwhile
SETTLE_STEP_S = 0.005  # how often a pause looks whether this process's engine has finished


def set_env(monkeypatch: pytest.MonkeyPatch, values: Mapping[str, str | None]) -> None:
    """Set each variable; a None value removes it."""
    for name, value in values.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    """The fake Messages API, preferring MODELS in order; a module may define its own."""
    with FakeAnthropic(prefer(MODELS)) as server:
        yield server


@pytest.fixture
def env_vars() -> dict[str, str | None]:
    """More environment for `env` (None removes a variable); a module may define its own."""
    return {}


@pytest.fixture(params=["sqlite", "postgresql"])
def worker_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The database of `env`: a SQLite file in tmp_path, then a fresh PostgreSQL database (each
    worker test runs on both; the PostgreSQL run is skipped where PostgreSQL is absent)."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path / 'joust.db'}"


@pytest.fixture
def env(tmp_path: Path, redis_url: str, fake: FakeAnthropic, env_vars: dict[str, str | None],
        worker_database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """Point this process's worker runtime at the test's Redis, database and fake judge."""
    set_env(monkeypatch, {
        "JOUST_DATA_DIR": str(tmp_path),
        "DATABASE_URL": worker_database_url,
        "REDIS_URL": redis_url,
        "ANTHROPIC_BASE_URL": fake.url,
        "ANTHROPIC_API_KEY": "test-key",
        **env_vars,
    })  # fmt: skip
    yield Settings.from_env()
    jobs.shutdown(drain_s=5)  # this process's worker engine, if a test started one


@pytest.fixture
def db(env: Settings) -> Iterator[Store]:
    """A store on `env`'s database."""
    st = Store(env.resolved_database_url)
    yield st
    st.close()


def submit(store: Store, questions: int = 2) -> None:
    """One submission per model in MODELS for each of `questions` questions."""
    store.add_submissions(
        [
            NewSubmission(question_id=f"q{q}", question=f"Question {q}?", model=m, scenario="default",
                          output=f"[{m}] answer to {q}")
            for q in range(questions)
            for m in MODELS
        ]
    )


def submit_field(store: Store, models: list[str], questions: int) -> int:
    """Every model answers every question (outputs carry a `[model]` marker for the fake's
    `prefer` policy); returns the number of round-robin matches."""
    store.add_submissions([
        NewSubmission(question_id=f"q{q}", question=f"Question {q}?", model=m, scenario="default",
                      output=f"[{m}] answer to {q}")
        for q in range(questions) for m in models
    ])
    return questions * len(models) * (len(models) - 1) // 2


def start(store: Store, settings: Settings, judge: str = "anthropic/fake-judge", **spec: object) -> int:
    """Launch a tournament (round robin, both orders, overall unless `spec` says otherwise); its id."""
    queue = JobQueue(Redis.from_url(settings.redis_url), settings.queue_name, 60)
    return launch(store, queue, "t", RunSpec(judge=judge, **spec)).id  # type: ignore[arg-type]


def _engine_busy() -> bool:
    """Whether this process's worker engine, if it has one, holds matches in flight."""
    found = jobs._engine
    return found is not None and found.in_flight() > 0


def engine_state() -> str:
    """What this process's engine holds, for a failure's message: the matches in flight with
    where each task is, and the jobs deferred until one ends. Read on the engine's loop, so a
    loop that does not answer within 5 s is itself the finding."""
    found = jobs._engine
    if found is None:
        return "no engine in this process"

    async def read() -> str:
        lines = [f"in flight {sorted(found._running)}, deferred {sorted(found._again)}, "
                 f"outcomes {dict(found.outcomes)}, database down: {found.database.down}"]
        if found.queue is not None:
            queue = found.queue
            lines.append(f"queued {queue.get_job_ids()}, scheduled {queue.scheduled_job_registry.get_job_ids()}")
        for match_id, task in sorted(found._running.items()):
            lines.append(f"match {match_id} awaits: " + " -> ".join(awaiting(task.get_coro())))
        return "\n".join(lines)

    try:
        return found.run(read(), timeout=5)
    except Exception as exc:  # noqa: BLE001 - a diagnosis must not hide the failure it explains
        return f"the engine's loop did not answer: {exc!r}"


def work_until(settings: Settings, done: Callable[[], bool], timeout_s: float = 90.0,
               failure: Callable[[], str] = lambda: "the work did not finish") -> None:
    """Run burst workers (with RQ's scheduler, for retries) until `done()`, for at most
    `timeout_s` (then fail). A burst hands the queued matches to this process's engine and
    returns; the engine judges them on its own thread, so bursts repeat while it works.
    Between bursts it pauses POLL_S, cut short the moment the engine, busy after the burst,
    has no match left in flight (its matches have ended, their writes and requeues made): a
    round is seen done when it is, not up to a poll step and a burst later."""
    redis = Redis.from_url(settings.redis_url)
    queue = job_queue(redis, settings.queue_name)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            JoustWorker([queue], connection=redis).work(burst=True, with_scheduler=True)
            busy = _engine_busy()
            if busy:
                until = time.monotonic() + POLL_S
                while time.monotonic() < until and _engine_busy():
                    time.sleep(SETTLE_STEP_S)
            if done():
                return
            if not busy:
                time.sleep(POLL_S)
    finally:
        redis.close()
    raise AssertionError(failure())


def work(settings: Settings, store: Store, tid: int, timeout_s: float = 90.0) -> Tournament:
    """Run burst workers until the tournament has no active match (bounded); its view."""
    work_until(settings, lambda: store.get_tournament(tid).matches_pending == 0, timeout_s,
               lambda: f"tournament {tid} did not finish: {store.get_tournament(tid)}; engine: {engine_state()}")
    return store.get_tournament(tid)


def assert_calls_fit(fake: FakeAnthropic, budget: float, per_mtok: float, max_tokens: int = 512) -> float:
    """Check the budget rule call by call, from what the fake answered, in order: each call was
    sent only when what had been paid before it, plus its own reservation (its prompt's
    estimated tokens and `max_tokens` of reply, at `per_mtok` USD per million in and out),
    fitted under `budget`. Returns what was paid. (Sequential runs only: one call at a time.)"""
    from workers.budget import Meter
    from workers.gate import Gate

    gate = Gate(spec="x/y", meter=Meter(), max_tokens=max_tokens)
    paid = 0.0
    for call in fake.received:
        if call.status != 200:
            continue
        reservation = gate.estimate(call.system, call.messages) * per_mtok / 1e6
        assert paid + reservation <= budget + 1e-9, (paid, reservation, budget)
        paid += (call.input_tokens + call.output_tokens) * per_mtok / 1e6
    assert paid <= budget
    return paid
