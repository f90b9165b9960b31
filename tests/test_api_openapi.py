"""The OpenAPI document states what the API takes and gives: the bodies the write routes read
themselves (one object or a non-empty array, required fields, examples that the document's own
schema and the route both accept) and a typed answer for every route; and the typed answers
carry every field the store gives (a model that dropped one would fail here)."""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import jsonschema
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute

from service.web.api_views import JudgementOut, TournamentOut
from tests.api_fixtures import API_KEY, store_of
from tests.test_api_leaderboard import by_strength, start, submit, work

# Its module-scoped fixture is built once: every test of the module runs in one of the suite's processes.
pytestmark = pytest.mark.xdist_group("test_api_openapi")

AUTH = {"Authorization": f"Bearer {API_KEY}"}
# The write routes whose body is one object or a non-empty array of them, and each object's
# required fields; then the route whose body is one object.
BATCH_BODIES = {
    "/api/submissions": {"model", "output"},  # question: not for a conversation (its first user turn)
    "/api/votes": {"a", "b", "winner", "voter"},
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """The app's OpenAPI document (built without serving: no database or Redis is opened)."""
    from service.config import Settings
    from service.web.app import create_app

    return create_app(Settings(api_key="k", redis_url="redis://127.0.0.1:9")).openapi()


def body_schema(document: dict[str, Any], path: str) -> dict[str, Any]:
    body = document["paths"][path]["post"]["requestBody"]
    assert body["required"] is True
    return body["content"]["application/json"]["schema"]


def resolved(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` checkable on its own: the document's components beside it."""
    return {**schema, "components": document["components"]}


@pytest.mark.parametrize(("path", "required"), BATCH_BODIES.items())
def test_a_batch_body_is_one_object_or_a_non_empty_array(document: dict, path: str, required: set[str]) -> None:
    schema = body_schema(document, path)
    one, many = schema["anyOf"]
    assert one["type"] == "object" and set(one["required"]) == required
    assert one["additionalProperties"] is False
    assert many == {"type": "array", "minItems": 1, "items": one}
    assert one["examples"], "no example"
    check = jsonschema.Draft202012Validator(resolved(document, schema))
    for example in one["examples"]:
        check.validate(example)
        check.validate([example, example])
    assert not check.is_valid([]) and not check.is_valid({"scenerio": "typo", **one["examples"][0]})


def test_the_tournament_body_is_declared_with_its_example(document: dict) -> None:
    schema = body_schema(document, "/api/tournaments")
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert {"name", "mode", "judge", "schedule", "budget", "models"} <= set(schema["properties"])
    assert schema["properties"]["mode"]["enum"] == ["round_robin", "sampled", "adaptive", "anchored", "baseline"]
    check = jsonschema.Draft202012Validator(resolved(document, schema))
    assert schema["examples"]
    for example in schema["examples"]:
        check.validate(example)
    assert not check.is_valid({"mode": "knockout"})


def test_the_examples_are_accepted_by_the_routes(document: dict, client: TestClient) -> None:
    [submission] = body_schema(document, "/api/submissions")["anyOf"][0]["examples"]
    assert client.post("/api/submissions", json=submission, headers=AUTH).status_code == 201
    [tournament] = body_schema(document, "/api/tournaments")["examples"]
    response = client.post("/api/tournaments", params={"dry_run": "true"}, json=tournament, headers=AUTH)
    assert response.status_code == 200, response.text


def api_routes(routes: Iterable[BaseRoute]) -> Iterator[APIRoute]:
    """Every API route of the app, routers included (FastAPI keeps an included router whole,
    as a route holding `original_router`)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from api_routes(inner.routes)
        elif isinstance(route, APIRoute):
            yield route


def test_every_route_answers_a_declared_model(client: TestClient) -> None:
    routes = [r for r in api_routes(client.app.routes) if r.include_in_schema]  # type: ignore[attr-defined]
    assert len(routes) >= 17
    # /metrics answers Prometheus's text format, not JSON: its response class says so instead
    untyped = [f"{sorted(r.methods)} {r.path}" for r in routes if r.response_model is None and r.path != "/metrics"]
    assert untyped == []


def test_every_success_in_the_document_has_a_named_schema(document: dict) -> None:
    """No operation answers "some object": each success is a component of the document."""
    vague = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            successes = {code: r for code, r in operation["responses"].items() if code.startswith("2")}
            assert successes, f"{method} {path} documents no success"
            for code, response in successes.items():
                if path == "/metrics":  # Prometheus's text format, documented by its content type
                    assert "application/json" not in response.get("content", {}), response
                    continue
                schema = response.get("content", {}).get("application/json", {}).get("schema", {})
                refs = [schema] if "$ref" in schema else schema.get("anyOf", [])
                if not refs or not all("$ref" in ref for ref in refs):
                    vague.append(f"{method.upper()} {path} {code}: {json.dumps(schema)[:80]}")
    assert vague == []


@pytest.mark.parametrize(("path", "key"), [("/api/submissions", "submissions"), ("/api/tournaments", "tournaments"),
                                           ("/api/tournaments/{tournament_id}/judgements", "judgements"),
                                           ("/api/judgements", "judgements")])
def test_lists_document_their_page(document: dict, path: str, key: str) -> None:
    operation = document["paths"][path]["get"]
    limit = {p["name"]: p for p in operation["parameters"]}["limit"]["schema"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 10_000, 1000)
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    page = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert {key, "next"} <= set(page["required"])


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def test_typed_answers_carry_every_field_the_store_gives(client: TestClient, queue: Any) -> None:
    submit(client, ["q1", "q2"], [("a", "plain"), ("b", "plain")])
    tid = start(client)
    assert work(client, queue, by_strength("a", "b")) == 2
    store = store_of(client)
    tournament = client.get(f"/api/tournaments/{tid}").json()
    assert tournament == as_json(store.get_tournament(tid).as_json())
    assert set(tournament) == set(TournamentOut.model_fields)
    [listed] = client.get("/api/tournaments").json()["tournaments"]
    assert listed == as_json(store.list_tournaments()[0].as_json())
    judged = client.get(f"/api/tournaments/{tid}/judgements").json()["judgements"]
    assert judged == as_json(store.tournament_judgements(tid))
    assert [set(call) for call in judged[0]["calls"]] == [{"first", "winner", "reason"}]  # as stored, no nulls added
    judgement = client.get(f"/api/judgements/{judged[0]['judgement_id']}").json()
    assert judgement == as_json(store.get_judgement(judged[0]["judgement_id"]).as_json())
    assert set(judgement) == set(JudgementOut.model_fields)
    full = client.get(f"/api/judgements/{judged[0]['judgement_id']}", params={"outputs": "true"}).json()
    assert full == as_json(store.get_judgement(judged[0]["judgement_id"], outputs=True).as_json())
    assert set(full["a"]) == set(judgement["a"]) | {"output"}  # the one field added, only when asked
    submission = client.get(f"/api/submissions/{judged[0]['a']}").json()
    assert submission == as_json(store.get_submission(judged[0]["a"]).as_json())
    cancelled = client.post(f"/api/tournaments/{tid}/cancel", headers=AUTH).json()
    assert cancelled == {**as_json(store.get_tournament(tid).as_json()), "stopped": {"schedule": False, "runs": [], "matches": 0}}
