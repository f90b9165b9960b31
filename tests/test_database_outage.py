"""PostgreSQL stopped mid-run and started again: nothing lost, nothing judged twice, nothing paid
and forgotten, judging resumes within the lease ttl and a few seconds, and the API answers 503
with a reason (health: the database down) for as long as it lasts, never 500.

A real PostgreSQL cluster of this module's own (stopping the session's would break the tests
after one that failed half-way), stopped with a fast shutdown (as a restart does: sessions
cut) and started again on the same port over the same data. The engine tests run this process's
worker engine with real RQ burst workers and no scheduler, so only the workers themselves can
bring a match home; the last test runs `joust up`. Recovery times are printed (run with -s) and
bounded by the promise, never asserted as a speed.
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq.registry import FailedJobRegistry
from sqlalchemy import func, select

from leaderboard.pricing import DEFAULT_PRICES, cost_usd
from service.config import Settings
from service.ops.scheduler import Scheduler
from service.store import Store, StoreUnavailable
from service.store import schema as s
from service.store.queue import JobQueue, job_queue
from service.web.app import create_app
from tests.fake_anthropic import FakeAnthropic, prefer
from tests.joust_up import start_joust, stop_joust
from tests.postgres_fixture import PostgresServer, PostgresUnavailable
from tests.required import skip_required
from tests.worker_fixtures import set_env, start, submit_field, work
from workers import jobs
from workers.leases import LEASES
from workers.outage import OWN_ERRORS, DatabaseWatch
from workers.rq_worker import JoustWorker
from workers.unrecorded import PENDING

MODELS = ["m1", "m2", "m3", "m4", "m5", "m6"]
JUDGE = "anthropic/claude-sonnet-4-5"  # priced: what was paid shows in the spend
POLL_S = 0.02
KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    base = Path(tempfile.mkdtemp(prefix="joust-pg-outage-", dir="/tmp" if os.geteuid() == 0 else None))
    server = PostgresServer(base)
    try:
        try:
            server.start()
        except PostgresUnavailable as why:
            skip_required(why.part, f"PostgreSQL tests skipped: {why}")
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def database_url(postgres: PostgresServer) -> Iterator[str]:
    """A new database on the module's cluster, which is running when the test starts and ends."""
    postgres.start_again()
    name = postgres.create_database()
    yield postgres.url(name)
    postgres.start_again()
    postgres.drop_database(name)


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prefer(MODELS)) as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, redis_url: str, fake: FakeAnthropic, database_url: str, postgres: PostgresServer,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """This process's worker engine on the module's PostgreSQL: leases of a second, and a job
    that finds the database down waits at most two seconds (a quarter of the match timeout)."""
    set_env(monkeypatch, {
        "JOUST_DATA_DIR": str(tmp_path), "DATABASE_URL": database_url, "REDIS_URL": redis_url,
        "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": KEY,
        "JOUST_LEASE_TTL": "1", "JOUST_MATCH_TIMEOUT": "8", "JOUST_JUDGE_CONCURRENCY": "8",
    })  # fmt: skip
    yield Settings.from_env()
    postgres.start_again()  # a test that failed half-way: let the engine drain against a live database
    jobs.shutdown(drain_s=5)


@pytest.fixture
def db(env: Settings) -> Iterator[Store]:
    st = Store(env.resolved_database_url)
    yield st
    st.close()


def wait_for(condition: Callable[[], object], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(POLL_S)
    raise AssertionError(f"timed out after {within:.0f} s waiting for {what}")


def hand_over(settings: Settings, **work: object) -> Redis:
    """Run a burst of RQ's worker: it hands the queued matches to this process's engine."""
    redis = Redis.from_url(settings.redis_url)
    worker = JoustWorker([job_queue(redis, settings.queue_name)], connection=redis)
    worker.work(burst=True, **work)  # type: ignore[arg-type]
    return redis


def accounts_for_every_paid_call(store: Store, tid: int, fake: FakeAnthropic) -> int:
    """Every call the fake answered is in a judgement or counted as a failed call, and priced in
    the run's spend; returns the failed calls."""
    with store.engine.connect() as conn:
        failed = int(conn.execute(select(func.coalesce(func.sum(s.matches.c.failed_calls), 0))).scalar_one())
    recorded = sum(len(j["calls"]) for j in store.tournament_judgements(tid))
    paid = [r for r in fake.received if r.delivered]
    assert len(paid) == recorded + failed, (len(paid), recorded, failed)
    paid_usd = sum(cost_usd(JUDGE, r.input_tokens, r.output_tokens, DEFAULT_PRICES) or 0.0 for r in paid)
    assert store.get_tournament(tid).spent_usd == pytest.approx(paid_usd, rel=1e-6)
    return failed


def judged_once(store: Store, tid: int, matches: int) -> None:
    view = store.get_tournament(tid)
    assert (view.status, view.matches_done, view.matches_failed) == ("done", matches, 0)
    assert len({j["judgement_id"] for j in store.tournament_judgements(tid)}) == matches


def test_jobs_that_meet_a_down_database_stay_on_the_queue_and_are_judged_once_it_is_back(
    db: Store, env: Settings, fake: FakeAnthropic, postgres: PostgresServer
) -> None:
    """Three jobs taken while the database is down: the first is held by the engine (its lease
    kept through the outage), the others wait for the database, then go back on the queue; the
    rest stay on it. Before, each job's match failed at once and the reaper dropped it."""
    matches = submit_field(db, MODELS[:5], questions=2)
    tid = start(db, env, judge=JUDGE)
    jobs.engine()  # a worker running when the database stops
    postgres.stop()
    redis = hand_over(env, max_jobs=3)
    held = [int(m) for m in redis.zrange(LEASES, 0, -1)]
    assert held, "no match was taken from the queue"
    since = redis.time()[0]
    # Kept for two more ttls (several reaper turns) while the database stays down.
    wait_for(lambda: all((redis.zscore(LEASES, m) or 0) > since + 2 * env.lease_ttl_s for m in held), 30,
             "the heartbeat to keep the leases of the matches taken")
    queue = job_queue(redis, env.queue_name)
    assert FailedJobRegistry(queue=queue).count == 0
    holding = queue.count + queue.scheduled_job_registry.count + redis.zcard(LEASES)
    assert holding == matches, "a match lost its job and its lease"
    postgres.start_again()
    back = time.monotonic()
    work(env, db, tid, timeout_s=30)
    judged_once(db, tid, matches)
    assert fake.replies == 2 * matches  # nothing paid twice
    assert accounts_for_every_paid_call(db, tid, fake) == 0
    print(f"\nrun over {time.monotonic() - back:.2f} s after the database was back")


def test_a_worker_started_while_the_database_is_down_puts_its_job_back(
    db: Store, env: Settings, fake: FakeAnthropic, postgres: PostgresServer
) -> None:
    """Its engine cannot be built (the store checks its schema first): the job waits for the
    database as long as a running engine's job would, then goes back on the queue, delayed."""
    matches = submit_field(db, MODELS[:3], questions=1)
    tid = start(db, env, judge=JUDGE)
    postgres.stop()
    redis = hand_over(env, max_jobs=1)
    queue = job_queue(redis, env.queue_name)
    assert FailedJobRegistry(queue=queue).count == 0
    assert (queue.count, queue.scheduled_job_registry.count) == (matches - 1, 1)
    postgres.start_again()
    work(env, db, tid, timeout_s=30)
    judged_once(db, tid, matches)


def test_matches_in_flight_keep_their_paid_replies_through_an_outage_longer_than_their_leases(
    db: Store, env: Settings, fake: FakeAnthropic, postgres: PostgresServer
) -> None:
    """The database stops while every call is in flight; the replies come, and the matches hold
    them (and their leases, renewed past several ttls) until it is back, then store them: no
    call paid twice. Before, each failed its write, was abandoned, and the reaper dropped it."""
    fake.latency_s = 1.0
    matches = submit_field(db, MODELS[:3], questions=1)
    tid = start(db, env, judge=JUDGE)
    redis = hand_over(env)
    wait_for(lambda: fake.stats()["in_flight"] == 2 * matches, 30, "every call in flight")
    postgres.stop()
    wait_for(lambda: fake.replies == 2 * matches and not fake.stats()["in_flight"], 30, "the replies")
    held = {int(m): at for m, at in redis.zrange(LEASES, 0, -1, withscores=True)}
    assert len(held) == matches
    # Renewed for three more ttls while the database stays down: nothing handed out again.
    wait_for(lambda: all((redis.zscore(LEASES, m) or 0) > at + 3 * env.lease_ttl_s for m, at in held.items()),
             30, "the heartbeat to keep every lease")
    assert fake.requests == 2 * matches
    postgres.start_again()
    back = time.monotonic()
    wait_for(lambda: db.get_tournament(tid).matches_pending == 0, env.lease_ttl_s + 5, "the matches to be stored")
    print(f"\nstored {time.monotonic() - back:.2f} s after the database was back")
    judged_once(db, tid, matches)
    assert fake.replies == fake.requests == 2 * matches  # nothing paid twice
    assert accounts_for_every_paid_call(db, tid, fake) == 0


def test_a_worker_stopping_during_an_outage_has_what_it_paid_charged_once_the_database_is_back(
    db: Store, env: Settings, fake: FakeAnthropic, postgres: PostgresServer
) -> None:
    """A worker told to stop while its matches wait on the database gives them back, and what
    they paid, which no judgement will record, is kept in Redis; once the database answers a
    worker charges it, so the calls the matches' next attempts pay again are all counted."""
    fake.latency_s = 0.5
    matches = submit_field(db, MODELS[:3], questions=1)
    tid = start(db, env, judge=JUDGE)
    redis = hand_over(env)
    wait_for(lambda: fake.stats()["in_flight"] == 2 * matches, 30, "every call in flight")
    postgres.stop()
    wait_for(lambda: fake.replies == 2 * matches and not fake.stats()["in_flight"], 30, "the replies")
    assert len(jobs.shutdown(drain_s=0.2)) == matches  # given back, unstored
    assert redis.llen(PENDING) == matches
    postgres.start_again()
    jobs.engine()  # a worker again: its reaper hands the matches out and charges what was kept
    work(env, db, tid, timeout_s=30)
    wait_for(lambda: not redis.llen(PENDING), 10, "the kept charges to be written")
    judged_once(db, tid, matches)
    assert fake.replies == 4 * matches  # each paid twice: the first replies died with the worker
    assert accounts_for_every_paid_call(db, tid, fake) == 2 * matches


def test_the_api_answers_503_naming_the_database_while_it_is_down(
    tmp_path: Path, redis_url: str, database_url: str, postgres: PostgresServer
) -> None:
    settings = Settings(data_dir=tmp_path / "data", redis_url=redis_url, api_key=KEY, database_url=database_url,
                        anthropic_api_key=KEY)
    with TestClient(create_app(settings)) as client:
        body = [{"question": "Q?", "model": m, "output": f"[{m}] a"} for m in MODELS[:3]]
        assert client.post("/api/submissions", json=body, headers=AUTH).status_code == 201
        created = client.post("/api/tournaments", json={"judge": JUDGE}, headers=AUTH)
        assert created.status_code == 202
        tid = created.json()["id"]
        postgres.stop()
        for method, path in [("GET", f"/api/tournaments/{tid}"), ("GET", "/api/tournaments"),
                             ("GET", f"/api/tournaments/{tid}/judgements"), ("POST", "/api/submissions")]:
            answer = client.request(method, path, json=body if method == "POST" else None, headers=AUTH)
            assert answer.status_code == 503, (path, answer.status_code, answer.text)
            assert "database is unavailable" in answer.json()["error"] and answer.headers["Retry-After"]
        health = client.get("/api/health")
        assert (health.status_code, health.json()) == (503, {"status": "down", "database": "down", "redis": "ok"})
        postgres.start_again()
        assert client.get("/api/health").status_code == 200
        assert client.get(f"/api/tournaments/{tid}", headers=AUTH).status_code == 200


def test_the_scheduler_says_once_that_the_database_is_down_and_once_that_it_is_back(
    tmp_path: Path, redis_url: str, database_url: str, postgres: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Not a traceback per tick (every five seconds, for as long as the outage lasts)."""
    settings = Settings(data_dir=tmp_path, redis_url=redis_url, database_url=database_url, scheduler_interval_s=0.02)
    store = Store(database_url)
    ticks: list[float] = []

    def clock() -> float:  # called once per tick
        ticks.append(time.time())
        return ticks[-1]

    stop = threading.Event()
    scheduler = Scheduler(store, JobQueue(Redis.from_url(redis_url), settings.queue_name, 60), settings)
    running = threading.Thread(target=scheduler.run, args=(stop, clock))
    caplog.set_level(logging.WARNING, logger="service.ops.scheduler")
    postgres.stop()
    running.start()
    try:
        wait_for(lambda: len(ticks) >= 5, 30, "five ticks while the database is down")
        postgres.start_again()
        wait_for(lambda: any("is back" in r.getMessage() for r in caplog.records), 30, "a tick after it is back")
    finally:
        stop.set()
        running.join(timeout=30)
        store.close()
    said = [r.getMessage().split(",")[0] for r in caplog.records if r.name == "service.ops.scheduler"]
    assert said == ["the database does not answer", f"the database is back after {said[-1].split('after ')[1]}"]


def test_the_watch_waits_through_an_outage_but_raises_an_error_the_database_contradicts() -> None:
    """A store call that fails while the database is down is made again once a probe answers;
    one that fails while the database answers (a bug, a missing table) is raised, not looped."""

    async def run() -> None:
        looks = {"n": 0, "up_after": 3}

        async def ping() -> None:
            looks["n"] += 1
            if looks["n"] <= looks["up_after"]:
                raise StoreUnavailable("refused")

        async def no_wait(_s: float) -> None:
            await asyncio.sleep(0)

        watch = DatabaseWatch(ping, sleep=no_wait)
        tries: list[bool] = []

        async def store_call() -> str:
            tries.append(watch.down)
            if looks["n"] <= looks["up_after"]:
                raise StoreUnavailable("refused")
            return "stored"

        assert await watch.call(store_call) == "stored"
        assert tries == [False, False] and not watch.down and looks["n"] == 4  # made again once it answered
        own: list[int] = []

        async def broken() -> None:
            own.append(1)
            raise StoreUnavailable("no such table")

        with pytest.raises(StoreUnavailable):
            await watch.call(broken)
        assert len(own) == OWN_ERRORS and not watch.down

    asyncio.run(run())


LEASE_TTL_S = 3.0
RECOVERY_SLACK_S = 5.0  # the promise: judging again within the lease ttl and this, after the database is back
OUTAGE_S = 5.0


@pytest.mark.slow
def test_a_postgres_restart_mid_run_under_joust_up_loses_nothing_and_judging_resumes_within_the_lease_ttl(
    tmp_path: Path, database_url: str, postgres: PostgresServer, fake: FakeAnthropic
) -> None:
    """Over 20 s: a `joust up` on PostgreSQL, the outage itself (OUTAGE_S) and the rest of the
    run after it. The scheduler's sweep waits ten minutes: only the workers can bring the run
    home in time. Health and a read of the run are asked all through the outage."""
    fake.latency_s = 0.3
    joust = start_joust(tmp_path / "data", fake, DATABASE_URL=database_url, JOUST_LEASE_TTL=str(LEASE_TTL_S),
                        JOUST_MATCH_TIMEOUT="600", JOUST_JUDGE_CONCURRENCY="4")
    try:
        body = [{"question": f"Question {q}?", "model": m, "output": f"[{m}] answer {q}"}
                for q in range(5) for m in MODELS]
        assert joust.call("POST", "/api/submissions", body)[0] == 201
        status, created = joust.call("POST", "/api/tournaments", {"name": "through an outage", "judge": JUDGE})
        assert status == 202
        tid, matches = created["id"], created["matches_total"]

        def done() -> int:
            return int(joust.call("GET", f"/api/tournaments/{tid}")[1]["matches_done"])

        wait_for(lambda: done() >= 6 and fake.stats()["in_flight"] >= 2, 60, "matches judged and calls in flight")
        before = done()
        assert before < matches - 20, "the run was nearly over before the outage"
        postgres.stop()
        down_at = time.monotonic()
        seen: list[tuple[str, int, object]] = []
        while time.monotonic() - down_at < OUTAGE_S:
            for path in ("/api/health", f"/api/tournaments/{tid}"):
                code, answer = joust.call("GET", path)
                seen.append((path, code, answer))
            time.sleep(5 * POLL_S)
        postgres.start_again()
        up_at = time.monotonic()
        assert all(code != 500 for _, code, _ in seen), [x for x in seen if x[1] == 500][:3]
        assert all(code == 503 and answer["database"] == "down"  # type: ignore[index]
                   for path, code, answer in seen if path == "/api/health")
        assert all(code == 503 and "database" in answer["error"]  # type: ignore[index]
                   for path, code, answer in seen if path != "/api/health")

        wait_for(lambda: joust.call("GET", "/api/health")[0] == 200, 30, "health to say ok again")
        judged = done()
        wait_for(lambda: done() > judged, LEASE_TTL_S + RECOVERY_SLACK_S, "a match judged after the outage")
        resumed_after = time.monotonic() - up_at
        view = joust.wait_done(tid, timeout_s=120)
        finished_after = time.monotonic() - up_at
        assert (view["status"], view["matches_done"], view["matches_failed"]) == ("done", matches, 0)
    finally:
        stop_joust(joust)
    store = Store(database_url)
    try:
        judged_once(store, tid, matches)
        failed = accounts_for_every_paid_call(store, tid, fake)
    finally:
        store.close()
    print(f"\n{matches} matches, {before} judged before the outage; judging again {resumed_after:.2f} s after "
          f"the database was back, the run over {finished_after:.2f} s after; {fake.replies - 2 * matches} calls "
          f"paid twice, {failed} failed calls counted")
