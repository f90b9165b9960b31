"""A recurring tournament's schedule fires once per due time, and its run judges nothing already
judged: POST /api/tournaments with a cron schedule, real RQ burst workers, real Redis, the store
on each backend, the fake Messages API; the scheduler ticks at passed-in times (`tick(now)`) and,
once, runs its loop on an injected clock (`run(stop, clock=...)`), so no test waits for the wall
clock's next minute (the end-to-end test does not either: see tests/test_e2e.py)."""
from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from redis import Redis

from service.config import Settings
from service.ops.cron import next_due
from service.ops.scheduler import Scheduler
from service.store import Store
from service.store.queue import JobQueue
from service.store.tournament_rows import Tournament
from service.web.app import create_app
from tests.fake_anthropic import FakeAnthropic
from tests.worker_fixtures import MODELS, submit, work

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
EVERY_MINUTE = "* * * * *"


@pytest.fixture
def client(env: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(env.with_(api_key=KEY))) as client:
        yield client


@pytest.fixture
def scheduler(env: Settings, db: Store) -> Iterator[Scheduler]:
    redis = Redis.from_url(env.redis_url)
    yield Scheduler(db, JobQueue(redis, env.queue_name, 60), env.with_(scheduler_interval_s=0.01))
    redis.close()


def nightly(client: TestClient, env: Settings, db: Store) -> Tournament:
    """A tournament on EVERY_MINUTE, created and judged now; its view."""
    submit(db, questions=2)
    created = client.post("/api/tournaments", headers=AUTH, json={
        "name": "nightly", "judge": "anthropic/fake-judge", "schedule": EVERY_MINUTE, "delivery": "live"})
    assert created.status_code == 202, created.text
    return work(env, db, created.json()["id"])


def test_each_due_time_starts_one_run_that_pays_for_nothing_judged(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic, scheduler: Scheduler
) -> None:
    parent = nightly(client, env, db)
    total = 2 * len(MODELS) * (len(MODELS) - 1) // 2
    assert (parent.matches_done, fake.replies) == (total, 2 * total)  # both orders
    due = parent.next_run_at
    assert due == next_due(EVERY_MINUTE, parent.created_at) and due % 60 == 0

    assert scheduler.tick(due - 1).started == []  # a second early
    (run_id,) = scheduler.tick(due).started
    assert scheduler.tick(due).started == [] and scheduler.tick(due + 59).started == []  # once per due time
    assert db.get_tournament(parent.id).next_run_at == due + 60
    paid = fake.requests
    run = work(env, db, run_id)
    assert (run.parent_id, run.status, run.matches_done) == (parent.id, "done", total)
    assert fake.requests == paid  # every pair was judged by the first run: nothing new to pay for

    (second,) = scheduler.tick(due + 60).started
    # a scheduler that was down for an hour starts one run, not sixty
    (late,) = scheduler.tick(due + 3600 + 30).started
    assert db.get_tournament(parent.id).runs == (run_id, second, late)
    assert db.get_tournament(parent.id).next_run_at == due + 3660


def test_the_scheduler_loop_reads_the_clock_it_is_given(
    client: TestClient, env: Settings, db: Store, scheduler: Scheduler
) -> None:
    parent = nightly(client, env, db)
    due = parent.next_run_at
    stop = threading.Event()
    readings = iter([due - 30, due - 1, due + 1])  # early, early, due: then stop

    def clock() -> float:
        now = next(readings)
        if now > due:
            stop.set()  # the loop finishes this tick, then ends
        return now

    loop = threading.Thread(target=scheduler.run, args=(stop,), kwargs={"clock": clock}, daemon=True)
    loop.start()
    loop.join(timeout=30)
    stop.set()  # a loop that never read the clock never stopped itself
    assert not loop.is_alive() and next(readings, None) is None, "the loop did not tick on the clock it was given"
    view = db.get_tournament(parent.id)
    assert len(view.runs) == 1 and view.next_run_at == due + 60
    assert db.get_tournament(view.runs[0]).name.startswith("nightly @ ")
