"""A worker process keeps many matches in flight (workers.engine): bounded by the judge's
concurrency, not one match at a time; its store calls never stall the loop; a run whose judge
keeps failing stops itself; a finished run's failed matches can be handed out again. Real RQ,
Redis and databases, the real anthropic SDK against the fake Messages API."""
from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from sqlalchemy import create_engine, func, select, text

from leaderboard.spec import RunSpec
from leaderboard.types import MatchOutcome
from service.config import Settings
from service.store import Store
from service.store.base import WRITE_LOCK
from service.web.app import create_app
from tests import worker_fixtures
from tests.fake_anthropic import FakeAnthropic, prefer
from tests.worker_fixtures import start, work, work_until
from workers import jobs
from workers.leases import LEASES

MODELS = ["m1", "m2", "m3", "m4", "m5"]
KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prefer(MODELS), latency_s=0.3) as server:
        yield server


def submit_field(store: Store, questions: int) -> int:
    return worker_fixtures.submit_field(store, MODELS, questions)


@pytest.mark.parametrize("env_vars", [{"JOUST_JUDGE_CONCURRENCY": "12"}])
def test_one_process_keeps_as_many_calls_in_flight_as_the_judge_allows(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    matches = submit_field(db, questions=3)  # 30 matches, 60 calls
    view = work(env, db, start(db, env))
    assert (view.matches_done, view.matches_failed) == (matches, 0)
    assert fake.replies == 2 * matches
    assert fake.max_in_flight == 12  # JOUST_JUDGE_CONCURRENCY, in one worker process
    assert jobs.engine().outcomes[MatchOutcome.JUDGED] == matches


@pytest.mark.parametrize("env_vars", [{"JOUST_WORKER_MATCHES": "1"}])
def test_one_match_at_a_time_is_the_naive_design(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    fake.latency_s = 0.1  # the matches go one after another: still long enough for both orders to overlap
    matches = submit_field(db, questions=1)
    view = work(env, db, start(db, env))
    assert view.matches_done == matches
    assert fake.max_in_flight == 2  # both orders of one match: what a worker did before


@contextmanager
def write_lock(url: str) -> Iterator[None]:
    """Hold the store's write lock from outside, as a long transaction of another process
    would: SQLite's file lock, or the advisory lock every PostgreSQL writer takes first."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("COMMIT")
            conn.close()
        return
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(select(func.pg_advisory_xact_lock(WRITE_LOCK)))
            yield
    finally:
        engine.dispose()


@pytest.mark.parametrize("env_vars", [{"JOUST_LEASE_TTL": "1.5", "JOUST_JUDGE_CONCURRENCY": "8"}])
def test_a_blocked_database_never_stalls_the_loop(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    """While another process holds the store's write lock, the engine's heartbeat (Redis, on the
    loop) keeps renewing: store calls wait on their threads, not on the loop. The lock is held
    until every match holding a lease waits on a store call and a heartbeat has renewed every
    lease since, or for twice the lease ttl: had the store calls blocked the loop, no heartbeat
    would come, the leases would lapse and the matches be handed out again."""
    matches = submit_field(db, questions=2)
    tid = start(db, env)
    redis = Redis.from_url(env.redis_url)
    seen: dict[str, dict] = {}

    def leases() -> dict:
        return dict(redis.zrange(LEASES, 0, -1, withscores=True))

    def hold_the_write_lock() -> None:  # RQ's worker needs the main thread, so this runs beside it
        deadline = time.monotonic() + 60
        while redis.zcard(LEASES) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        with write_lock(env.resolved_database_url):
            until = time.monotonic() + 2 * env.lease_ttl_s
            seen["before"] = leases()
            # The calls in flight are answered; their matches then wait on the lock to record
            # them, as a match not yet started waits on it to start (a write, before any call).
            while fake.stats()["in_flight"] and time.monotonic() < until:
                time.sleep(0.01)
            seen["blocked"] = blocked = leases()
            # A heartbeat comes every third of the ttl, unless something blocks the loop.
            while time.monotonic() < until and not all(leases().get(m, 0) > at for m, at in blocked.items()):
                time.sleep(0.02)
            seen["after"] = leases()

    blocker = threading.Thread(target=hold_the_write_lock)
    blocker.start()
    work(env, db, tid)
    blocker.join(timeout=60)
    before, blocked, after = seen["before"], seen["blocked"], seen["after"]
    renewed = [m for m in before if m in blocked and m in after and after[m] > blocked[m]]
    assert before and len(renewed) == len(before)  # every lease held through the lock was renewed
    view = db.get_tournament(tid)
    assert (view.matches_done, view.matches_failed) == (matches, 0)
    assert fake.replies == 2 * matches  # nothing lapsed, nothing was paid twice
    assert jobs.engine().outcomes[MatchOutcome.ABANDONED] == 0


@pytest.mark.parametrize("env_vars", [{"JOUST_STOP_AFTER_FAILURES": "4", "JOUST_JUDGE_CONCURRENCY": "2",
                                       "JOUST_WORKER_MATCHES": "2"}])
def test_a_judge_that_keeps_failing_stops_its_run(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    fake.api_key = "the-real-key"  # the workers' key is wrong: every call is a 401
    matches = submit_field(db, questions=3)
    tid = start(db, env)
    work_until(env, lambda: db.get_tournament(tid).status not in ("queued", "running"))
    view = db.get_tournament(tid)
    assert (view.status, view.stopped_reason) == ("failed", "failing")
    assert 4 <= view.matches_failed <= 4 + 2  # the streak, and what was in flight when it ended
    assert view.matches_cancelled == matches - view.matches_failed
    # the judge was asked for the failed matches and those in flight when the run stopped, no more
    assert fake.requests <= 2 * (view.matches_failed + 2)
    with db.engine.connect() as conn:
        errors = conn.execute(text("select last_error from matches where status = 'failed'")).scalars().all()
    assert errors and all("PermanentJudgeError" in e and "401" in e for e in errors)


def test_a_streak_is_only_broken_by_a_judgement(db: Store) -> None:
    """Failures with a judgement made between them never stop a run: only failures in a row."""
    from leaderboard.keys import content_hash
    from leaderboard.types import Pair, Winner
    from service.store import NewJudgement

    submit_field(db, questions=1)
    subs = {s.model: s for s in db.select_submissions()}
    pairs = [Pair(subs[a].id, subs[b].id) for a, b in
             [("m1", "m2"), ("m1", "m3"), ("m1", "m4"), ("m1", "m5"), ("m2", "m3"), ("m2", "m4")]]
    tid = db.create_tournament("t", RunSpec(judge="anthropic/j", mode="round_robin"), pairs)
    m = list(range(1, 7))
    assert not db.fail_match(m[0], "x", final=True, stop_after=3)
    assert not db.fail_match(m[1], "x", final=True, stop_after=3)
    jid, _ = db.save_judgement(NewJudgement(key="k", judge="anthropic/j", criteria="overall", template_version="v",
                                            a_id=pairs[2].a, b_id=pairs[2].b, a_hash=content_hash(subs["m1"].output),
                                            outcome=Winner.A, consistent=True, calls=[], match_id=m[2]))
    assert db.resolve_match(m[2], jid, Winner.A, True, made=True)  # the judge answered: the streak ends
    assert not db.fail_match(m[3], "x", final=True, stop_after=3)
    assert not db.fail_match(m[4], "x", final=False, stop_after=3)  # a retry is no failure yet
    assert not db.fail_match(m[4], "x", final=True, stop_after=3)
    assert db.get_tournament(tid).stopped_reason is None  # two in a row since the judgement
    assert db.fail_match(m[5], "x", final=True, stop_after=3)  # three in a row
    view = db.get_tournament(tid)
    assert (view.status, view.stopped_reason, view.matches_failed, view.matches_done) == (
        "failed", "failing", 5, 1)


@pytest.fixture
def client(env: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(env.with_(api_key=KEY))) as client:
        yield client


@pytest.mark.parametrize("env_vars", [{"JOUST_STOP_AFTER_FAILURES": "3", "JOUST_JUDGE_CONCURRENCY": "2",
                                       "JOUST_WORKER_MATCHES": "1"}])
def test_a_failed_run_is_retried_once_the_judge_is_fixed(
    db: Store, env: Settings, fake: FakeAnthropic, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.latency_s = 0.0
    fake.api_key = "the-real-key"
    matches = submit_field(db, questions=1)
    tid = client.post("/api/tournaments", json={"judge": "anthropic/fake-judge"}, headers=AUTH).json()["id"]
    assert client.post(f"/api/tournaments/{tid}/retry", headers=AUTH).status_code == 409  # still running
    work_until(env, lambda: db.get_tournament(tid).status == "failed")
    assert client.post(f"/api/tournaments/{tid}/retry").status_code == 401
    monkeypatch.setenv("ANTHROPIC_API_KEY", "the-real-key")  # the operator fixes the key
    response = client.post(f"/api/tournaments/{tid}/retry", headers=AUTH)
    assert response.status_code == 202
    assert response.json() == {"id": tid, "status": "running", "retried": matches}  # failed + cancelled by the stop
    work_until(env, lambda: client.get(f"/api/tournaments/{tid}").json()["matches_pending"] == 0)
    view = client.get(f"/api/tournaments/{tid}").json()
    assert (view["status"], view["matches_done"], view["retried"], view["stopped_reason"]) == ("done", matches, matches, None)
    conflict = client.post(f"/api/tournaments/{tid}/retry", headers=AUTH)
    assert conflict.status_code == 409 and "no failed match" in conflict.json()["error"]
    assert client.post("/api/tournaments/999/retry", headers=AUTH).status_code == 404
