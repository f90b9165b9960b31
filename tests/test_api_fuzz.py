"""Schema fuzzing: schemathesis sends every operation of the app's own OpenAPI document requests
generated from it (valid and invalid, boundary values, methods the path does not have), with
the API key and without, on SQLite and PostgreSQL, over a store that holds submissions, a
tournament and judgements (ties among them). Every answer must be no server error, carry a
status code the operation documents, a JSON body conforming to the schema documented for that
status, and (for a method the path lacks) 405 with an `Allow` header naming the path's methods.
A read given schema-valid parameters must be accepted, and a request whose parameters or body
break the schema must be refused. The write routes' bodies are in the document (one object, or
an array of them), so the cases carry bodies too, valid and broken ones.

The run is bounded and reproducible: at most MAX_EXAMPLES generated cases per operation (plus
schemathesis' coverage cases), derandomized (the seed comes from the test itself). Each operation
is a test of its own (`[GET /api/leaderboard]`), so a failure names it and the operations spread
over the suite's processes. The document is read from the app when the module is collected (it
depends on no setting; the fixture checks that the fuzzed app serves the same one). Requests go
through one `TestClient` per backend for the whole module (its lifespan entered once, as a
long-lived server's would be), on a redis-server of its own, so the other tests' flushes of the
shared one cannot reach the app between two operations.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from rq import Queue
from schemathesis import Case
from schemathesis.checks import not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from service.config import Settings
from service.ops.redis_server import RedisServer
from service.store.queue import SERIALIZER
from service.web.app import create_app
from tests.api_fixtures import ANTHROPIC_KEY, API_KEY, app_state_of
from tests.test_api_leaderboard import by_strength, start, submit, work

# Its module-scoped fixture is built once: every test of the module runs in one of the suite's processes.
pytestmark = pytest.mark.xdist_group("test_api_fuzz")

MAX_EXAMPLES = 12
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
    unsupported_method,
    allow_header_conformance,
]
# Reads take their parameters from the query and the path only: a valid one must be accepted.
# (Writes are not held to it: whether a valid body is accepted depends on the stored data and on
# rules between fields, e.g. `opponents` only for mode "sampled", that the schema cannot state.)
READ_CHECKS = [*CHECKS, positive_data_acceptance]

# The app's own document; it depends on no setting (the `fuzzed` fixture checks this).
DOCUMENT = create_app(Settings(api_key=API_KEY, redis_url="redis://127.0.0.1:9")).openapi()
schema = schemathesis.openapi.from_dict(DOCUMENT)
# The routes that read a JSON body, and what the fuzzer must send them: one object, or arrays too.
BODY_ROUTES = {"/api/submissions": {dict, list}, "/api/tournaments": {dict}, "/api/votes": {dict, list}}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def fuzzed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The app on SQLite, then on a PostgreSQL database of its own, with both judges' endpoints
    configured (so created tournaments get as far as the queue), holding submissions, one judged
    tournament with ties, and its jobs done. Server errors are answered (500), not raised, so the
    checks see them."""
    base: Path = tmp_path_factory.mktemp("fuzz")
    database_url = None
    if request.param == "postgresql":
        postgres = request.getfixturevalue("postgres_server")
        database_url = postgres.url(postgres.create_database())
    with RedisServer(base / "redis", persistence=False) as redis_server:
        settings = Settings(data_dir=base / "data", redis_url=redis_server.url, api_key=API_KEY,
                            database_url=database_url, anthropic_api_key=ANTHROPIC_KEY,
                            openai_base_url="http://127.0.0.1:9/v1")
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            assert client.app.openapi() == DOCUMENT  # type: ignore[attr-defined]
            submit(client, ["q1", "q2"], [("a", "plain"), ("b", "plain"), ("b", "fancy")])
            start(client)
            queue = Queue(settings.queue_name, connection=app_state_of(client).redis,
                          serializer=SERIALIZER)
            tie_between_scenarios = by_strength("a", "b")  # b/plain and b/fancy tie
            assert work(client, queue, tie_between_scenarios) == 6
            yield client


def send(client: TestClient, case: Case, key: str | None) -> Any:
    """The case as a request through `client`, with `Authorization: Bearer <key>` (none when
    `key` is None) unless the case is about a broken Authorization header; JSON bodies encoded
    as `requests` would (ASCII escapes, so a lone surrogate travels as `\\ud800`)."""
    kwargs = case.as_transport_kwargs(base_url=str(client.base_url))
    headers = dict(kwargs.get("headers") or {})
    if not (case.meta is not None and case.meta.is_negative_at(ParameterLocation.HEADER)):
        headers = {name: value for name, value in headers.items() if name.lower() != "authorization"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
    content = kwargs.get("data")
    if "json" in kwargs:
        content = json.dumps(kwargs["json"]).encode("utf-8")
    return client.request(kwargs["method"], kwargs["url"], params=kwargs.get("params"), headers=headers,
                          content=content)


FUZZ = settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def answers_as_documented(client: TestClient, case: Case, key: str | None) -> None:
    response = send(client, case, key)
    case.validate_response(response, checks=READ_CHECKS if case.method == "GET" else CHECKS)
    if key is None and case.method == "POST" and response.status_code < 400:
        pytest.fail(f"{case.method} {case.path} answered {response.status_code} without the API key")


@schema.parametrize()
@FUZZ
def test_every_operation_with_the_key(case: Case, fuzzed: TestClient) -> None:
    answers_as_documented(fuzzed, case, API_KEY)


@schema.parametrize()
@FUZZ
def test_every_operation_without_the_key(case: Case, fuzzed: TestClient) -> None:
    answers_as_documented(fuzzed, case, None)


@pytest.mark.parametrize(("path", "kinds"), BODY_ROUTES.items())
def test_the_fuzzer_generates_the_bodies(path: str, kinds: set[type]) -> None:
    """The bodies are in the document, so the cases above send them (not only parameters)."""
    document = create_app(Settings(api_key=API_KEY, redis_url="redis://127.0.0.1:9")).openapi()
    operation = schemathesis.openapi.from_dict(document)[path]["POST"]
    assert [body.media_type for body in operation.body] == ["application/json"]
    bodies: list[Any] = []

    @given(operation.as_strategy())
    @settings(max_examples=MAX_EXAMPLES, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    def collect(case: Case) -> None:
        bodies.append(case.body)

    collect()
    assert {type(body) for body in bodies} == kinds
