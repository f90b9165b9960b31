"""Where a judge's credentials are checked when the API and the workers are different machines
(docker compose: only the workers hold the provider's key). The API accepts a judge that it or a
live worker can reach, as each worker says in its RQ registration; a worker without the key fails
its matches at once naming the variable, sends nothing, and the run stops itself saying why."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from redis import Redis

from leaderboard.reach import Reach
from service.config import Settings
from service.ops.liveness import worker_reaches
from service.ops.redis_server import RedisServer
from service.store import Store
from service.store.queue import job_queue
from service.web.app import create_app
from tests.api_fixtures import API_KEY, MakeClient, app_state_of
from tests.fake_anthropic import FakeAnthropic
from tests.worker_fixtures import start, submit, work
from workers.rq_worker import JoustWorker

AUTH = {"Authorization": f"Bearer {API_KEY}"}
KEYLESS = {"anthropic_api_key": None, "openai_api_key": None, "openai_base_url": None, "judge_endpoints": {}}


@contextmanager
def live_worker(redis_url: str, reach: Reach | None, queue_name: str = "joust") -> Iterator[JoustWorker]:
    """A worker registered in RQ as `joust worker` registers itself (its birth), saying `reach`."""
    redis = Redis.from_url(redis_url)
    worker = JoustWorker([job_queue(redis, queue_name)], connection=redis, reach=reach)
    worker.register_birth()
    try:
        yield worker
    finally:
        worker.register_death()
        redis.close()


def submissions(client: TestClient) -> None:
    body = [{"question": "What is 2+2?", "model": m, "output": f"{m} says 4"} for m in "abc"]
    assert client.post("/api/submissions", json=body, headers=AUTH).status_code == 201


def test_an_api_without_keys_accepts_a_judge_that_a_live_worker_can_reach(
    make_client: MakeClient, redis_url: str
) -> None:
    client = make_client(**KEYLESS)
    submissions(client)
    with live_worker(redis_url, Reach(anthropic=True)):
        response = client.post("/api/tournaments", json={"judge": "anthropic/claude-haiku-4-5"}, headers=AUTH)
        assert response.status_code == 202, response.json()
        refused = client.post("/api/tournaments", json={"judge": "openai/llama3"}, headers=AUTH)
        assert refused.status_code == 422
        assert "OPENAI_BASE_URL" in refused.json()["error"] and "1 live worker" in refused.json()["error"]
    with live_worker(redis_url, Reach(openai_judges=("openai/llama3",))):  # its own endpoint
        assert client.post("/api/tournaments", json={"judge": "openai/llama3"}, headers=AUTH).status_code == 202


def test_an_api_without_keys_refuses_a_judge_no_live_worker_can_reach_saying_where(
    make_client: MakeClient, redis_url: str
) -> None:
    client = make_client(**KEYLESS)
    submissions(client)
    with live_worker(redis_url, Reach(openai=True)), live_worker(redis_url, None):  # one says nothing
        response = client.post("/api/tournaments", json={"judge": "anthropic/claude-haiku-4-5"}, headers=AUTH)
    error = response.json()["error"]
    assert response.status_code == 422 and "ANTHROPIC_API_KEY" in error and "where the workers run" in error
    assert "1 live worker" in error, error
    response = client.post("/api/tournaments", json={"judge": "anthropic/claude-haiku-4-5"}, headers=AUTH)
    assert response.status_code == 422 and "no worker is running" in response.json()["error"]
    assert store_of_client(client).list_tournaments() == []


def store_of_client(client: TestClient) -> Store:
    return app_state_of(client).store


def test_only_the_live_workers_of_the_queue_are_asked(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    try:
        with live_worker(redis_url, Reach(anthropic=True), queue_name="other"):
            assert worker_reaches(redis, "joust") == []
            with live_worker(redis_url, Reach(openai=True)):
                assert worker_reaches(redis, "joust") == [Reach(openai=True)]
        assert worker_reaches(redis, "joust") == []  # dead workers say nothing
    finally:
        redis.close()


def test_a_workers_word_round_trips_and_garbage_is_ignored() -> None:
    reach = Reach(anthropic=True, anthropic_base_url=True, openai=False, openai_judges=("openai/a",))
    assert Reach.from_json(reach.as_json()) == reach
    said = Settings(anthropic_api_key="sk-secret", openai_api_key="sk-other").reach().as_json()
    assert "sk-" not in said and Reach.from_json(said) == Reach(anthropic=True, openai=True)  # never a key
    for garbage in (b"not json", b"[]", b'{"anthropic": true}', b'{"anthropic": true, "anthropic_base_url": 1, '
                                                                 b'"openai": false, "openai_judges": 3}'):
        assert Reach.from_json(garbage) is None


@pytest.mark.slow
def test_with_redis_down_the_api_accepts_a_judge_it_cannot_check(redis_server: RedisServer, tmp_path: Path) -> None:
    """The workers cannot be asked: the run is stored (handed out once Redis is back), as any
    write while Redis is down; a worker without the key would say so on its matches."""
    settings = Settings(data_dir=tmp_path / "data", redis_url=redis_server.url, api_key=API_KEY)
    with TestClient(create_app(settings)) as client:
        submissions(client)
        redis_server.stop()
        response = client.post("/api/tournaments", json={"judge": "anthropic/claude-haiku-4-5"}, headers=AUTH)
        assert response.status_code == 202, response.json()


# -- the worker's own check -------------------------------------------------------------------------


@pytest.fixture
def env_vars() -> dict[str, str | None]:
    return {"ANTHROPIC_API_KEY": None, "JOUST_STOP_AFTER_FAILURES": "2"}


def test_a_worker_without_the_key_fails_the_run_naming_the_variable_and_calls_nothing(
    env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    submit(db, questions=2)  # 3 models: 6 matches
    tid = start(db, env, judge="anthropic/claude-haiku-4-5")
    view = work(env, db, tid)
    assert (view.status, view.stopped_reason, view.matches_done) == ("failed", "failing", 0)
    failures = db.tournament_failures(tid)
    assert failures.failed == 2 and len(failures.groups) == 1
    error = failures.groups[0].error
    assert "ANTHROPIC_API_KEY" in error and "workers" in error, error
    assert fake.received == []  # nothing was sent without a key
    with TestClient(create_app(env.with_(api_key=API_KEY))) as client:  # the run's page says why
        page = client.get(f"/tournaments/{tid}")
    assert page.status_code == 200 and "ANTHROPIC_API_KEY" in page.text
