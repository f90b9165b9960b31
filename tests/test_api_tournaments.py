"""POST/GET /api/tournaments on a real SQLite file and a real Redis (no worker runs here, so the
jobs stay on the queue where the tests can count them and follow them to their matches)."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue
from sqlalchemy import text

from leaderboard.keys import content_hash
from leaderboard.types import Winner
from service.config import DEFAULT_JUDGE, Settings
from service.store import NewJudgement, Store
from service.store.queue import SERIALIZER
from service.web.app import create_app
from tests.api_fixtures import app_state_of

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
QUEUE = "joust-test"

# q1: 4 models, q2: 3 models, q3: 1 model  ->  round robin: 6 + 3 + 0 pairs.
SUBMISSIONS = [
    {"question": f"question {q}", "question_id": q, "model": m, "output": f"{m} on {q}"}
    for q, models in (("q1", "abcd"), ("q2", "abc"), ("q3", "a"))
    for m in models
]


@pytest.fixture
def client(tmp_path: Path, redis_url: str, api_database_url: str | None) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", redis_url=redis_url, api_key=KEY, queue_name=QUEUE,
                        database_url=api_database_url,  # SQLite in the data dir, then PostgreSQL
                        # the judges' credentials (no judge is ever called here)
                        anthropic_api_key="test-anthropic-key", openai_base_url="http://127.0.0.1:9/v1")
    with TestClient(create_app(settings)) as client:
        assert client.post("/api/submissions", json=SUBMISSIONS, headers=AUTH).status_code == 201
        yield client


@pytest.fixture
def queue(redis_url: str) -> Iterator[Queue]:
    redis = Redis.from_url(redis_url)
    yield Queue(QUEUE, connection=redis, serializer=SERIALIZER)
    redis.close()


def store_of(client: TestClient) -> Store:
    return app_state_of(client).store


def start(client: TestClient, **body: object) -> dict:
    response = client.post("/api/tournaments", json=body, headers=AUTH)
    assert response.status_code == 202, response.text
    return response.json()


def queued_pairs(client: TestClient, queue: Queue, tournament_id: int) -> list[tuple[int, int]]:
    """The (a, b) submission ids of the jobs on the queue for one tournament, as a worker sees them."""
    pairs = []
    for job in queue.get_jobs():
        assert job.func_name == "workers.jobs.judge_match"
        ctx = store_of(client).match_context(job.args[0])
        if ctx.tournament_id == tournament_id:
            pairs.append((ctx.a.id, ctx.b.id))
    return sorted(pairs)


def ids_by_question(client: TestClient) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for row in client.get("/api/submissions").json()["submissions"]:
        groups.setdefault(row["question_id"], []).append(row["id"])
    return groups


def test_round_robin_pairs_every_two_answers_of_a_question(client: TestClient, queue: Queue) -> None:
    response = client.post("/api/tournaments", json={"name": "nightly"}, headers=AUTH)
    assert response.status_code == 202
    created = response.json()
    assert created["matches_total"] == 6 + 3 + 0
    assert created["status"] == "queued" and created["queued"] is True
    assert response.headers["location"] == f"/api/tournaments/{created['id']}"
    assert queue.count == 9
    expected = sorted(p for ids in ids_by_question(client).values() for p in combinations(sorted(ids), 2))
    assert queued_pairs(client, queue, created["id"]) == expected

    view = client.get(f"/api/tournaments/{created['id']}").json()
    assert (view["name"], view["status"], view["matches_total"], view["matches_done"], view["matches_failed"]) == (
        "nightly", "queued", 9, 0, 0,
    )
    assert view["spec"]["judge"] == DEFAULT_JUDGE and view["spec"]["order"] == "both"
    assert [t["id"] for t in client.get("/api/tournaments").json()["tournaments"]] == [created["id"]]


def test_filters_narrow_the_pairs(client: TestClient, queue: Queue) -> None:
    assert start(client, models=["a", "b", "c"])["matches_total"] == 3 + 3
    assert start(client, questions=["q2"], judge="openai/gpt-4o-mini")["matches_total"] == 3
    assert queue.count == 9


def test_filters_matching_nothing_finish_at_once(client: TestClient, queue: Queue) -> None:
    created = start(client, scenarios=["no-such-scenario"])
    assert (created["matches_total"], created["status"]) == (0, "done")
    assert queue.count == 0


def test_sampled_is_reproducible_with_its_seed(client: TestClient, queue: Queue) -> None:
    first = start(client, mode="sampled", opponents=1, seed=12345)
    second = start(client, mode="sampled", opponents=1, seed=12345)
    pairs = queued_pairs(client, queue, first["id"])
    assert pairs == queued_pairs(client, queue, second["id"])
    assert first["matches_total"] == len(pairs) < 9  # a sample, not the whole round robin
    assert queue.count == first["matches_total"] + second["matches_total"]


def test_sampled_without_seed_stores_the_one_it_drew(client: TestClient, queue: Queue) -> None:
    first = start(client, mode="sampled", opponents=1)
    seed = client.get(f"/api/tournaments/{first['id']}").json()["spec"]["seed"]
    assert isinstance(seed, int)
    again = start(client, mode="sampled", opponents=1, seed=seed)
    assert queued_pairs(client, queue, first["id"]) == queued_pairs(client, queue, again["id"])


def test_schedule_is_stored_with_its_next_due_time(client: TestClient) -> None:
    before = time.time()
    created = start(client, schedule="0 3 * * *")
    view = client.get(f"/api/tournaments/{created['id']}").json()
    assert view["schedule"] == "0 3 * * *"
    assert before < view["next_run_at"] <= before + 24 * 3600
    assert time.gmtime(view["next_run_at"]).tm_hour == 3


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"mode": "swiss"}, "mode: Input should be 'round_robin', 'sampled', 'adaptive', 'anchored' or 'baseline'"),
        ({"mode": "sampled"}, "opponents: required when mode is 'sampled'"),
        ({"mode": "sampled", "opponents": "2"}, "opponents: Input should be a valid integer"),
        ({"mode": "sampled", "opponents": 0}, "opponents: Input should be greater than or equal to 1"),
        ({"opponents": 2}, "opponents: only applies to mode 'sampled'"),
        ({"judge": "claude"}, "judge: 'claude' must look like 'provider/model'"),
        ({"judge": "bard/x"}, "unknown provider 'bard'"),
        ({"judge": "anthropic/"}, "must look like 'provider/model'"),
        ({"order": "twice"}, "order: Input should be 'both' or 'single'"),
        ({"criteria": "style"}, "criteria: Input should be 'overall'"),
        ({"schedule": "every night"}, "schedule: 'every night' is not a valid five-field cron"),
        ({"schedule": "61 * * * *"}, "schedule:"),
        ({"models": "a"}, "models: Input should be a valid list"),
        ({"models": []}, "models:"),
        ({"name": ""}, "name: must not be empty"),
        ({"rounds": 3}, "rounds: unknown field"),
    ],
)
def test_invalid_requests_are_refused(client: TestClient, queue: Queue, body: dict, words: str) -> None:
    response = client.post("/api/tournaments", json=body, headers=AUTH)
    assert response.status_code == 422, response.text
    assert words in response.json()["error"]
    assert client.get("/api/tournaments").json()["tournaments"] == []
    assert queue.count == 0


def test_unknown_or_malformed_ids(client: TestClient) -> None:
    for path in ("/api/tournaments/999", "/api/tournaments/999/judgements"):
        response = client.get(path)
        assert response.status_code == 404
        assert response.json()["error"] == "no tournament 999"
    assert client.post("/api/tournaments/999/cancel", headers=AUTH).status_code == 404
    response = client.get("/api/tournaments/abc")
    assert response.status_code == 422
    assert response.json()["error"].startswith("path parameter tournament_id: ")


def test_cancel_stops_what_is_not_judged(client: TestClient) -> None:
    created = start(client, schedule="0 3 * * *")
    response = client.post(f"/api/tournaments/{created['id']}/cancel", headers=AUTH)
    assert response.status_code == 200
    view = response.json()
    assert (view["status"], view["matches_cancelled"], view["next_run_at"]) == ("cancelled", 9, None)
    assert client.get(f"/api/tournaments/{created['id']}").json()["status"] == "cancelled"


def test_judgements_listing_shows_what_a_worker_stored(client: TestClient, queue: Queue) -> None:
    created = start(client, questions=["q2"], order="single")
    store = store_of(client)
    job = queue.get_jobs()[0]
    ctx = store.match_context(job.args[0])
    assert store.start_match(ctx.match_id)
    call = {"first": ctx.b.id, "winner": "A", "reason": "b is clearer"}  # b shown first and won
    new = NewJudgement(
        key="k-1", judge=ctx.spec.judge, criteria="overall", template_version="t1", a_id=ctx.a.id,
        b_id=ctx.b.id, a_hash=content_hash(ctx.a.output), outcome=Winner.B, consistent=True, calls=[call],
    )
    judgement_id, _ = store.save_judgement(new)
    assert store.resolve_match(ctx.match_id, judgement_id, Winner.B, True)

    response = client.get(f"/api/tournaments/{created['id']}/judgements")
    assert response.status_code == 200
    body = response.json()
    assert body["tournament"] == created["id"]
    [judgement] = body["judgements"]
    assert (judgement["a"], judgement["b"], judgement["outcome"], judgement["consistent"]) == (
        ctx.a.id, ctx.b.id, "B", True,
    )
    assert [(c["first"], c["winner"], c["reason"]) for c in judgement["calls"]] == [(ctx.b.id, "A", "b is clearer")]
    view = client.get(f"/api/tournaments/{created['id']}").json()
    assert (view["status"], view["matches_done"]) == ("running", 1)


@pytest.mark.parametrize("criteria", ["dimensions", "factsim"])
def test_an_offline_judge_is_refused_criteria_it_cannot_answer(client: TestClient, criteria: str) -> None:
    client.post("/api/submissions", headers=AUTH, json=[
        {"question": "Q?", "model": "m1", "output": "a"}, {"question": "Q?", "model": "m2", "output": "b"}])
    response = client.post("/api/tournaments", headers=AUTH, json={"judge": "offline/rubric", "criteria": criteria})
    assert response.status_code == 422, response.text
    assert "criteria" in response.json()["error"] and "chat judge" in response.json()["error"]
    assert client.get("/api/tournaments").json()["tournaments"] == []
    ok = client.post("/api/tournaments", headers=AUTH, json={"judge": "offline/rubric", "criteria": "compqa"})
    assert ok.status_code == 202, ok.text


@pytest.mark.parametrize("judge", ["offline/x", "offline/rubric2"])
def test_an_unknown_offline_judge_is_refused(client: TestClient, queue: Queue, tmp_path: Path, redis_url: str,
                                            judge: str) -> None:
    """Its provider is known but the model is not: every match would fail (and an adaptive run
    would plan round after round), so the run is refused, asked for or by default."""
    for query in ("", "?dry_run=true"):
        response = client.post(f"/api/tournaments{query}", json={"judge": judge}, headers=AUTH)
        assert response.status_code == 422, response.text
        assert response.json()["error"] == f"judge: unknown offline judge {judge!r} (known: offline/rubric)"
    assert client.get("/api/tournaments").json()["tournaments"] == [] and queue.count == 0
    settings = Settings(data_dir=tmp_path / "other", redis_url=redis_url, api_key=KEY, queue_name=QUEUE, judge=judge)
    with TestClient(create_app(settings)) as other:
        response = other.post("/api/tournaments", json={}, headers=AUTH)  # JOUST_JUDGE's default
        assert response.status_code == 422 and judge in response.json()["error"]
        assert other.post("/api/tournaments", json={"judge": "offline/rubric"}, headers=AUTH).status_code == 202


def test_the_stored_spec_keeps_the_layout_it_always_had(client: TestClient) -> None:
    """Typed in the code, the spec is stored and shown as before: every request field (null
    when unset), an adaptive run's options, nothing else."""
    created = start(client, mode="adaptive", max_calls=40, models=["a", "b"])
    expected = {"mode": "adaptive", "judge": DEFAULT_JUDGE, "order": "both", "criteria": "overall", "models": ["a", "b"],
                "scenarios": None, "questions": None, "opponents": None, "seed": None, "budget": None, "rpm": None,
                "tpm": None, "delivery": "live", "level": "model", "round_size": 20, "max_calls": 40,
                "target_ci_width": None}
    view = client.get(f"/api/tournaments/{created['id']}").json()
    assert view["spec"] == expected
    assert (view["judge"], view["mode"], view["order"], view["budget"]) == (DEFAULT_JUDGE, "adaptive", "both", None)
    with store_of(client).engine.connect() as conn:
        stored = conn.execute(text("select spec from tournaments where id = :id"), {"id": created["id"]}).scalar()
    assert stored == json.dumps(expected, sort_keys=True)
    plain = start(client, order="single")
    assert set(client.get(f"/api/tournaments/{plain['id']}").json()["spec"]) == set(expected) - {
        "level", "round_size", "max_calls", "target_ci_width"}
