"""POST/GET /api/submissions on a real SQLite file and a real Redis: idempotence, conflicts,
validation messages, size limits; a rejected request stores nothing."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from leaderboard.keys import default_question_id
from tests.api_fixtures import MakeClient

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


def sub(model: str = "m1", question: str = "What is 2+2?", output: str = "4", **extra: object) -> dict:
    return {"question": question, "model": model, "output": output, **extra}


def stored(client: TestClient) -> list[dict]:
    response = client.get("/api/submissions", params={"limit": 1000})
    assert response.status_code == 200
    return response.json()["submissions"]


def test_one_submission_is_stored_with_defaults(client: TestClient) -> None:
    response = client.post("/api/submissions", json=sub(metadata={"temperature": 0.2}), headers=AUTH)
    assert response.status_code == 201, response.text
    [ref] = response.json()["submissions"]
    assert ref["created"] is True
    [row] = stored(client)
    assert row["id"] == ref["id"]
    assert row["question_id"] == default_question_id("What is 2+2?")
    assert row["scenario"] == "default"
    assert row["metadata"] == {"temperature": 0.2}


def test_same_content_again_is_not_duplicated(client: TestClient) -> None:
    first = client.post("/api/submissions", json=sub(), headers=AUTH).json()["submissions"][0]
    again = client.post("/api/submissions", json=[sub()], headers=AUTH)
    assert again.status_code == 201
    assert again.json()["submissions"] == [{"id": first["id"], "created": False}]
    assert len(stored(client)) == 1


def test_batch_answers_in_order(client: TestClient) -> None:
    client.post("/api/submissions", json=sub("m2"), headers=AUTH)
    batch = [sub("m1"), sub("m2"), sub("m3", scenario="terse", question_id="q7")]
    response = client.post("/api/submissions", json=batch, headers=AUTH)
    assert response.status_code == 201
    refs = response.json()["submissions"]
    assert [r["created"] for r in refs] == [True, False, True]
    by_id = {row["id"]: row for row in stored(client)}
    assert [by_id[r["id"]]["model"] for r in refs] == ["m1", "m2", "m3"]
    assert by_id[refs[2]["id"]]["question_id"] == "q7"
    assert by_id[refs[2]["id"]]["scenario"] == "terse"


def test_conflict_names_the_key_and_rejects_the_whole_batch(client: TestClient) -> None:
    client.post("/api/submissions", json=sub("m1", question_id="q1", output="old"), headers=AUTH)
    batch = [sub("m2", question_id="q1"), sub("m1", question_id="q1", output="new")]
    response = client.post("/api/submissions", json=batch, headers=AUTH)
    assert response.status_code == 409
    error = response.json()["error"]
    assert "'q1'" in error and "'m1'" in error and "'default'" in error and "output" in error
    assert [row["model"] for row in stored(client)] == ["m1"]  # m2 was not stored either


def test_missing_field_is_named_with_its_position(client: TestClient) -> None:
    batch = [sub("m1"), sub("m2"), {"question": "q", "output": "x"}]
    response = client.post("/api/submissions", json=batch, headers=AUTH)
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "submissions[2].model: field required"
    assert body["details"] == [{"path": "submissions[2].model", "message": "field required"}]
    assert stored(client) == []


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"model": 3}, "model", "valid string"),
        ({"output": 42}, "output", "valid string"),
        ({"output": ""}, "output", "empty"),
        ({"question": "   "}, "question", "blank"),
        ({"scenario": None}, "scenario", "valid string"),
        ({"metadata": "x"}, "metadata", "dictionary"),
        ({"question_id": 7}, "question_id", "valid string"),
        ({"model": "m" * 256}, "model", "255"),
    ],
)
def test_wrong_types_are_refused_without_coercion(client: TestClient, change: dict, path: str, words: str) -> None:
    response = client.post("/api/submissions", json={**sub(), **change}, headers=AUTH)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error.startswith(f"{path}: ") and words in error
    assert stored(client) == []


def test_unknown_field_is_rejected(client: TestClient) -> None:
    response = client.post("/api/submissions", json=sub(scenerio="typo"), headers=AUTH)
    assert response.status_code == 422
    assert response.json()["error"] == "scenerio: unknown field"
    assert stored(client) == []


@pytest.mark.parametrize(
    ("content", "status", "words"),
    [
        (b'{"question": "q", "model": ', 400, "malformed JSON"),
        (b"", 400, "empty"),
        (b"\xff\xfe", 400, "malformed JSON"),
        (b'"just a string"', 422, "object or an array"),
        (b"[]", 422, "empty"),
        (b"[1]", 422, "submissions[0]"),
    ],
)
def test_bodies_that_are_not_submissions(client: TestClient, content: bytes, status: int, words: str) -> None:
    response = client.post(
        "/api/submissions", content=content, headers={**AUTH, "Content-Type": "application/json"}
    )
    assert response.status_code == status, response.text
    assert words in response.json()["error"]
    assert stored(client) == []


def test_body_over_the_limit_is_413_and_stores_nothing(make_client: MakeClient) -> None:
    client = make_client(max_body_bytes=2000)
    big = json.dumps(sub(output="x" * 3000)).encode()
    response = client.post("/api/submissions", content=big, headers={**AUTH, "Content-Type": "application/json"})
    assert response.status_code == 413
    assert "2000 bytes" in response.json()["error"]
    assert stored(client) == []


def test_chunked_body_over_the_limit_is_413(make_client: MakeClient) -> None:
    client = make_client(max_body_bytes=2000)
    big = json.dumps(sub(output="x" * 3000)).encode()
    chunks = iter([big[:1000], big[1000:2500], big[2500:]])  # no Content-Length: streamed
    response = client.post("/api/submissions", content=chunks, headers={**AUTH, "Content-Type": "application/json"})
    assert response.status_code == 413
    assert "too large" in response.json()["error"]
    assert stored(client) == []


def test_chunked_body_under_the_limit_goes_through(make_client: MakeClient) -> None:
    client = make_client(max_body_bytes=2000)
    body = json.dumps(sub()).encode()
    response = client.post(
        "/api/submissions", content=iter([body[:10], body[10:]]), headers={**AUTH, "Content-Type": "application/json"}
    )
    assert response.status_code == 201
    assert len(stored(client)) == 1


def test_batch_over_max_batch_is_refused(make_client: MakeClient) -> None:
    client = make_client(max_batch=3)
    response = client.post("/api/submissions", json=[sub(f"m{i}") for i in range(4)], headers=AUTH)
    assert response.status_code == 413
    assert "at most 3" in response.json()["error"]
    assert stored(client) == []


def test_listing_filters(client: TestClient) -> None:
    batch = [
        sub("m1", question_id="q1"),
        sub("m2", question_id="q1"),
        sub("m1", question_id="q2", scenario="terse"),
        sub("m2", question_id="q2", scenario="terse"),
    ]
    assert client.post("/api/submissions", json=batch, headers=AUTH).status_code == 201

    def listed(**params: Any) -> list[tuple[str, str, str]]:
        rows = client.get("/api/submissions", params=params).json()["submissions"]
        return [(r["model"], r["question_id"], r["scenario"]) for r in rows]

    assert listed(model="m1") == [("m1", "q1", "default"), ("m1", "q2", "terse")]
    assert listed(scenario="terse") == [("m1", "q2", "terse"), ("m2", "q2", "terse")]
    assert listed(question_id="q1", model="m2") == [("m2", "q1", "default")]
    assert listed(model="nobody") == []
    assert listed(limit=2, offset=1) == [("m2", "q1", "default"), ("m1", "q2", "terse")]


def test_listing_rejects_a_bad_limit(client: TestClient) -> None:
    response = client.get("/api/submissions", params={"limit": 0})
    assert response.status_code == 422
    assert response.json()["error"].startswith("query parameter limit: ")


def _drive(limit: int, chunks: list[bytes]) -> tuple[list[bytes], list[dict]]:
    """Run BodyLimit over an ASGI app that records the body it receives, feeding `chunks` as
    separate http.request messages (a chunked upload), with no Content-Length."""
    import anyio

    from service.web.app import BodyLimit

    seen: list[bytes] = []
    sent: list[dict] = []

    async def inner(scope: dict, receive: Callable, send: Callable) -> None:
        message = await receive()
        seen.append(message["body"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    anyio.run(BodyLimit(inner, max_bytes=limit), scope, receive, send)  # type: ignore[arg-type]
    return seen, sent


def test_streamed_chunks_are_counted_across_messages() -> None:
    seen, sent = _drive(10, [b"12345", b"67890", b"x"])
    assert seen == []  # the app never saw any of it
    assert sent[0]["status"] == 413
    assert b"limit is 10 bytes" in sent[1]["body"]

    seen, sent = _drive(10, [b"12345", b"67890"])
    assert seen == [b"1234567890"]
    assert sent[0]["status"] == 204
