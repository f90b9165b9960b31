"""Who may write, and the app as a whole: refusing to start without a key, JSON errors for
unknown routes, health. Writes need `Authorization: Bearer <key>`: none is 401, a wrong one 403."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.config import Settings
from service.web.app import create_app
from tests.api_fixtures import app_state_of

KEY = "test-key"
SUBMISSION = {"question": "q", "model": "m", "output": "o"}


@pytest.fixture
def settings(api_settings: Settings) -> Settings:
    return api_settings


def count_stored(client: TestClient) -> int:
    return len(client.get("/api/submissions").json()["submissions"])


def test_write_without_a_key_is_401_with_a_challenge(client: TestClient) -> None:
    response = client.post("/api/submissions", json=SUBMISSION)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "Authorization: Bearer" in response.json()["error"]
    assert count_stored(client) == 0


@pytest.mark.parametrize("header", ["Basic dGVzdC1rZXk=", "Bearer", "test-key", ""])
def test_a_header_that_is_not_a_bearer_key_is_401(client: TestClient, header: str) -> None:
    response = client.post("/api/submissions", json=SUBMISSION, headers={"Authorization": header})
    assert response.status_code == 401
    assert count_stored(client) == 0


@pytest.mark.parametrize("key", ["wrong", "TEST-KEY", "test-key2", "test-ke", "tëst-key"])
def test_a_wrong_key_is_403(client: TestClient, key: str) -> None:
    response = client.post(
        "/api/submissions", json=SUBMISSION, headers={b"Authorization": f"Bearer {key}".encode()}
    )
    assert response.status_code == 403
    assert response.json() == {"error": "the API key is not valid"}
    assert count_stored(client) == 0


def test_the_right_key_writes(client: TestClient) -> None:
    response = client.post("/api/submissions", json=SUBMISSION, headers={"Authorization": f"Bearer {KEY}"})
    assert response.status_code == 201
    assert count_stored(client) == 1


@pytest.mark.parametrize(
    "path", ["/api/submissions", "/api/tournaments", "/api/tournaments/1/cancel", "/api/votes"]
)
def test_every_write_route_needs_the_key(client: TestClient, path: str) -> None:
    assert client.post(path, json={}).status_code == 401
    assert client.post(path, json={}, headers={"Authorization": "Bearer nope"}).status_code == 403


def test_the_key_is_checked_before_the_body(client: TestClient) -> None:
    response = client.post("/api/tournaments", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 401


@pytest.mark.parametrize(
    "path", ["/", "/api/submissions", "/api/tournaments", "/api/leaderboard", "/api/health", "/openapi.json"]
)
def test_reads_are_open(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 200


def test_unknown_routes_and_methods_answer_json(client: TestClient) -> None:
    missing = client.get("/api/nothing")
    assert missing.status_code == 404
    assert missing.json() == {"error": "no such endpoint: GET /api/nothing"}
    wrong = client.delete("/api/leaderboard", headers={"Authorization": f"Bearer {KEY}"})
    assert wrong.status_code == 405
    assert wrong.json() == {"error": "method DELETE is not allowed on /api/leaderboard; use GET"}
    assert wrong.headers["Allow"] == "GET"


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"api_key": None}, "API key"),
        ({"api_key": ""}, "API key"),
        ({"redis_url": None}, "Redis URL"),
        ({"judge": "gpt4"}, "JOUST_JUDGE"),
    ],
)
def test_refuses_to_start_without_what_it_needs(settings: Settings, changes: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        create_app(settings.with_(**changes))


def test_lifespan_creates_the_data_dir_and_the_database(settings: Settings) -> None:
    assert not settings.data_dir.exists()
    with TestClient(create_app(settings)) as client:
        assert client.get("/api/health").json() == {"status": "ok", "database": "ok", "redis": "ok"}
    assert settings.data_dir.is_dir()
    assert (settings.data_dir / "joust.db").exists() == (settings.database_url is None)  # else in PostgreSQL


def test_health_is_503_while_redis_is_down_and_writes_are_still_stored(settings: Settings) -> None:
    with socket.socket() as sock:  # a loopback port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with TestClient(create_app(settings.with_(redis_url=f"redis://127.0.0.1:{port}/0"))) as client:
        response = client.get("/api/health")
        assert response.status_code == 503
        assert response.json() == {"status": "down", "database": "ok", "redis": "down"}
        # A tournament started meanwhile is stored; the scheduler hands it out later.
        headers = {"Authorization": f"Bearer {KEY}"}
        client.post("/api/submissions", json=[SUBMISSION, {**SUBMISSION, "model": "m2"}], headers=headers)
        created = client.post("/api/tournaments", json={}, headers=headers)
        assert created.status_code == 202
        assert (created.json()["matches_total"], created.json()["queued"]) == (1, False)


def test_health_is_503_when_the_database_fails(settings: Settings, tmp_path: Path) -> None:
    bad = settings.with_(database_url=f"sqlite:///{tmp_path / 'db'}")
    with TestClient(create_app(bad)) as client:
        (tmp_path / "db").unlink()
        (tmp_path / "db").mkdir()  # the file is gone and cannot come back
        app_state_of(client).store.close()  # drop the open connections
        response = client.get("/api/health")
        assert response.status_code == 503
        assert response.json()["database"] == "down"
