"""The FastAPI app and the workers on PostgreSQL, as docker compose runs them: the API, a real RQ
burst worker (the real anthropic SDK against the fake Messages API) and the store share one
PostgreSQL database of the session's real server, through DATABASE_URL."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from service.config import Settings
from service.store import Store
from service.web.app import create_app
from tests.worker_fixtures import MODELS, work

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def worker_database_url(postgres_url: str) -> str:
    """`env` (the worker runtime's DATABASE_URL) and the app on PostgreSQL only."""
    return postgres_url


@pytest.fixture
def client(env: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(dataclasses.replace(env, api_key=KEY))) as client:
        yield client


def test_submit_judge_and_rank_on_postgres(client: TestClient, env: Settings, db: Store, postgres_url: str) -> None:
    assert env.resolved_database_url == db.url == postgres_url
    assert client.get("/api/health").json() == {"status": "ok", "database": "ok", "redis": "ok"}
    batch = [{"question": f"Question {q}?", "question_id": f"q{q}", "model": m, "output": f"[{m}] answer to {q}",
              "metadata": {"n": q}} for q in range(2) for m in MODELS]
    created = client.post("/api/submissions", json=batch, headers=AUTH)
    assert created.status_code == 201, created.text
    ids = [s["id"] for s in created.json()["submissions"]]
    again = client.post("/api/submissions", json=batch, headers=AUTH).json()["submissions"]
    assert again == [{"id": i, "created": False} for i in ids]
    clash = client.post("/api/submissions", json=[{**batch[0], "output": "changed"}], headers=AUTH)
    assert clash.status_code == 409 and "different output" in clash.json()["error"]

    started = client.post("/api/tournaments", json={"name": "pg", "mode": "round_robin",
                                                    "judge": "anthropic/fake-judge"}, headers=AUTH)
    assert started.status_code == 202, started.text
    tid = started.json()["id"]
    view = work(env, db, tid)
    assert (view.status, view.matches_total, view.matches_done) == ("done", 6, 6)
    assert client.get(f"/api/tournaments/{tid}").json()["matches_done"] == 6

    judged = client.get(f"/api/tournaments/{tid}/judgements").json()["judgements"]
    assert len(judged) == 6 and all(j["consistent"] is True and len(j["calls"]) == 2 for j in judged)
    board = client.get("/api/leaderboard", params={"by": "model"}).json()
    assert board["revision"] == 6
    assert [(r["player"], r["wins"], r["losses"]) for r in board["rows"]] == [("good", 4, 0), ("mid", 2, 2),
                                                                              ("bad", 0, 4)]
    assert client.get("/api/leaderboard", params={"tournament": tid}).json()["rows"] == board["rows"]
    cell = client.get("/api/judgements", params={"player": "good", "opponent": "bad"}).json()
    assert [(j["result"], j["consistent"]) for j in cell["judgements"]] == [("win", True)] * 2  # the board's 2
    one = client.get(f"/api/judgements/{cell['judgements'][0]['id']}", params={"outputs": "true"}).json()
    asked = one["question_id"][1:]
    assert {one["a"]["output"], one["b"]["output"]} == {f"[good] answer to {asked}", f"[bad] answer to {asked}"}
    (health,) = client.get("/api/judges").json()["judges"]
    assert (health["judge"], health["consistency"], health["calls"]) == ("anthropic/fake-judge", 1.0, 12)
    page = client.get("/")
    assert page.status_code == 200 and "good" in page.text

    rerun = client.post("/api/tournaments", json={"name": "again", "judge": "anthropic/fake-judge"}, headers=AUTH)
    view = work(env, db, rerun.json()["id"])
    assert view.matches_done == 6 and client.get("/api/leaderboard").json()["revision"] == 12
    assert len(db.side_rows()) == 6  # every judgement was reused and counts once
