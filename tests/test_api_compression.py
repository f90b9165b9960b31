"""Answers are gzipped for a client that accepts it (GZipMiddleware in service.web.app): the bytes on
the wire decode to exactly the answer an identity request gets, the other middlewares' headers
are still there, small answers and clients that do not ask are left alone, a file streamed in
chunks is compressed whole, and the Python client reads lists through it unchanged."""
from __future__ import annotations

import gzip
import json
import re

import pytest
from fastapi.testclient import TestClient

from joust import Client
from service.web.app import GZIP_MINIMUM_BYTES, SECURITY_HEADERS
from service.web.routes.docs import DOCS_ASSETS
from tests.api_fixtures import API_KEY

AUTH = {"Authorization": f"Bearer {API_KEY}"}
GZIP = {"Accept-Encoding": "gzip"}
IDENTITY = {"Accept-Encoding": "identity"}


@pytest.fixture
def stored(client: TestClient) -> TestClient:
    """Forty submissions: the list answers tens of kilobytes."""
    rows = [{"question_id": f"q{i % 4}", "question": f"Question {i % 4}?", "model": f"m{i}",
             "output": f"answer {i}: " + "lorem ipsum " * 40} for i in range(40)]
    assert client.post("/api/submissions", headers=AUTH, json=rows).status_code == 201
    return client


UPDATED = re.compile(rb"updated \d\d:\d\d:\d\d UTC")


def raw(client: TestClient, path: str, headers: dict[str, str]) -> tuple[dict[str, str], bytes]:
    """The headers and the bytes as sent, not decoded by the HTTP client."""
    with client.stream("GET", path, headers=headers) as response:
        assert response.status_code == 200, path
        return dict(response.headers), b"".join(response.iter_raw())


@pytest.mark.parametrize("path", ["/api/submissions", "/openapi.json", "/"])
def test_a_large_answer_is_gzipped_and_decodes_to_the_same_body(stored: TestClient, path: str) -> None:
    plain_headers, plain = raw(stored, path, IDENTITY)
    assert "content-encoding" not in plain_headers and len(plain) > GZIP_MINIMUM_BYTES
    headers, sent = raw(stored, path, GZIP)
    assert headers["content-encoding"] == "gzip" and "accept-encoding" in headers["vary"].lower()
    assert int(headers["content-length"]) == len(sent) < len(plain) / 2
    body = gzip.decompress(sent)
    if path == "/":  # the page says when it was made, to the second: two requests may straddle one
        assert UPDATED.sub(b"updated -", body) == UPDATED.sub(b"updated -", plain)
    else:
        assert json.loads(body) == json.loads(plain)
    # the other middlewares still answer
    assert all(headers[name.lower()] == value for name, value in SECURITY_HEADERS.items())
    assert headers["x-request-id"]


def test_small_answers_and_clients_without_gzip_are_left_alone(stored: TestClient) -> None:
    headers, body = raw(stored, "/api/revision", GZIP)
    assert "content-encoding" not in headers and json.loads(body)["revision"] == 0
    headers, body = raw(stored, "/api/submissions", {"Accept-Encoding": "br"})
    assert "content-encoding" not in headers and len(json.loads(body)["submissions"]) == 40


def test_a_file_streamed_in_chunks_is_gzipped_whole(client: TestClient) -> None:
    path = DOCS_ASSETS["swagger-ui-bundle.js"]
    headers, sent = raw(client, "/docs/swagger-ui-bundle.js", GZIP)
    assert headers["content-encoding"] == "gzip" and headers["cache-control"] == "public, max-age=3600"
    assert gzip.decompress(sent) == path.read_bytes()


def test_a_request_over_the_body_limit_is_still_refused(make_client: object) -> None:
    client = make_client(max_body_bytes=100)  # type: ignore[operator]
    response = client.post("/api/submissions", headers={**AUTH, **GZIP}, content=b"[" + b" " * 200 + b"]")
    assert response.status_code == 413 and "too large" in response.json()["error"]


def test_the_python_client_reads_a_list_through_compression(stored: TestClient) -> None:
    encodings: list[str | None] = []
    stored.event_hooks["response"].append(lambda response: encodings.append(response.headers.get("content-encoding")))
    api = Client("http://testserver", API_KEY, http=stored)
    frame = api.submissions()
    assert encodings == ["gzip"]  # httpx asks for it by default
    listed = stored.get("/api/submissions", headers=IDENTITY).json()["submissions"]
    assert len(frame) == 40 and list(frame["id"]) == [row["id"] for row in listed]
    assert list(frame["output"]) == [row["output"] for row in listed]
