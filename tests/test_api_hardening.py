"""Inputs that once answered 500 (each found probing the API as an attacker would) now answer a
4xx JSON error and store nothing, on SQLite and PostgreSQL: ids and offsets past what the
database holds, metadata nested too deeply or too large, lone surrogates and NUL characters in
texts, non-JSON numbers, a cron schedule that never fires, empty or free-text values of the
query parameters with a fixed vocabulary, OPTIONS, and a judge without credentials."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from fastapi.testclient import TestClient
from rq import Queue

from service.cli import main
from service.config import JudgeEndpoint, Settings
from service.ops.cron import next_due_within
from service.web.api_models import METADATA_MAX_BYTES, METADATA_MAX_DEPTH
from tests.api_fixtures import API_KEY, MakeClient, store_of
from tests.serving import serving

AUTH = {"Authorization": f"Bearer {API_KEY}"}
JSON = {**AUTH, "Content-Type": "application/json"}
BIG = 2**63  # OverflowError in SQLite's driver
INT4 = 2**31  # past PostgreSQL's `integer`, which the ids are


def submission(**fields: object) -> dict:
    return {"question": "What is 2+2?", "model": "m", "output": "4", **fields}


def nothing_stored(client: TestClient) -> bool:
    store = store_of(client)
    return store.list_submissions() == [] and store.list_tournaments() == []


def refused(response, status: int, *words: str) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    body = response.json()
    assert isinstance(body["error"], str)
    for word in words:
        assert word in body["error"], body["error"]
    return body


# ---- ids and offsets ------------------------------------------------------------------------

ID_ROUTES = [
    ("GET", "/api/tournaments/{n}"),
    ("GET", "/api/tournaments/{n}/judgements"),
    ("POST", "/api/tournaments/{n}/cancel"),
    ("POST", "/api/tournaments/{n}/retry"),
    ("GET", "/api/judgements/{n}"),
    ("POST", "/api/judgements/{n}/analysis"),
    ("GET", "/api/leaderboard?tournament={n}"),
    ("GET", "/api/leaderboard/effects?tournament={n}"),
    ("GET", "/api/leaderboard/history?tournament={n}"),
]


@pytest.mark.parametrize(("method", "route"), ID_ROUTES)
def test_ids_out_of_range_are_refused(client: TestClient, method: str, route: str) -> None:
    for n in (BIG, INT4, 0, -1):
        body = refused(client.request(method, route.format(n=n), headers=AUTH), 422)
        assert body["details"][0]["path"].endswith(("tournament_id", "judgement_id", "tournament"))


@pytest.mark.parametrize(("method", "route"), ID_ROUTES)
def test_the_largest_id_is_just_unknown(client: TestClient, method: str, route: str) -> None:
    refused(client.request(method, route.format(n=INT4 - 1), headers=AUTH), 404)


@pytest.mark.parametrize("route", ["/api/submissions", "/api/tournaments"])
def test_offsets_out_of_range_are_refused(client: TestClient, route: str) -> None:
    refused(client.get(route, params={"offset": BIG}), 422, "offset")
    refused(client.get(route, params={"offset": -1}), 422, "offset")
    assert client.get(route, params={"offset": BIG - 1}).status_code == 200


def test_the_schema_states_the_bounds(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    [path_id] = paths["/api/tournaments/{tournament_id}"]["get"]["parameters"]
    assert (path_id["schema"]["minimum"], path_id["schema"]["maximum"]) == (1, INT4 - 1)
    offset = {p["name"]: p for p in paths["/api/submissions"]["get"]["parameters"]}["offset"]
    assert (offset["schema"]["minimum"], offset["schema"]["maximum"]) == (0, BIG - 1)


# ---- metadata -------------------------------------------------------------------------------


def nested(levels: int) -> str:
    """Metadata `levels` objects deep (the metadata object itself is level 1), as JSON text."""
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


def post_raw(client: TestClient, metadata: str) -> object:
    body = '{"question": "q", "model": "m", "output": "o", "metadata": ' + metadata + "}"
    return client.post("/api/submissions", content=body.encode(), headers=JSON)


def test_metadata_as_deep_as_allowed_is_stored(client: TestClient) -> None:
    assert post_raw(client, nested(METADATA_MAX_DEPTH)).status_code == 201
    [row] = client.get("/api/submissions").json()["submissions"]
    assert json.dumps(row["metadata"]).count("{") == METADATA_MAX_DEPTH


@pytest.mark.parametrize("levels", [METADATA_MAX_DEPTH + 1, 300, 600])
def test_deeper_metadata_is_refused_and_the_list_still_reads(client: TestClient, levels: int) -> None:
    body = refused(post_raw(client, nested(levels)), 422, "metadata", f"more than {METADATA_MAX_DEPTH} levels")
    assert body["details"][0]["path"] == "metadata"
    assert nothing_stored(client)
    assert client.get("/api/submissions").status_code == 200


def test_a_body_too_deep_to_parse_is_a_400(client: TestClient) -> None:
    refused(post_raw(client, nested(5000)), 400, "nested too deeply")
    assert nothing_stored(client)


def test_metadata_larger_than_allowed_is_refused(client: TestClient) -> None:
    fits = {"blob": "x" * (METADATA_MAX_BYTES - len('{"blob":""}'))}
    assert client.post("/api/submissions", json=submission(metadata=fits), headers=AUTH).status_code == 201
    too_big = {"blob": "x" * (METADATA_MAX_BYTES + 1)}
    refused(client.post("/api/submissions", json=submission(model="m2", metadata=too_big), headers=AUTH), 422,
            "metadata", f"at most {METADATA_MAX_BYTES}")
    assert [row["model"] for row in client.get("/api/submissions").json()["submissions"]] == ["m"]


# ---- texts and numbers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field_json", "path"),
    [
        ('"output": "\\ud800"', "output"),
        ('"question": "why \\udfff"', "question"),
        ('"model": "m\\ud83d"', "model"),
        ('"scenario": "\\ud800x"', "scenario"),
        ('"question_id": "\\udc00"', "question_id"),
        ('"metadata": {"tags": ["ok", "\\ud800"]}', "metadata"),
        ('"metadata": {"\\ud800": 1}', "metadata"),
    ],
)
def test_lone_surrogates_are_refused_naming_the_field(client: TestClient, field_json: str, path: str) -> None:
    fields = {"question": '"q"', "model": '"m"', "output": '"o"'}
    name = field_json.split(":", 1)[0].strip('"')
    fields[name] = field_json.split(":", 1)[1].strip()
    body = "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"
    answer = refused(client.post("/api/submissions", content=body.encode(), headers=JSON), 422, "lone surrogate")
    assert answer["details"][0]["path"] == path
    assert answer["error"].startswith(f"{path}: ")
    assert nothing_stored(client)


def test_a_lone_surrogate_in_a_field_name_is_refused(client: TestClient) -> None:
    body = b'{"question": "q", "model": "m", "output": "o", "\\ud800": 1}'
    refused(client.post("/api/submissions", content=body, headers=JSON), 422, "lone surrogate")
    assert nothing_stored(client)


def test_nul_characters_are_refused_on_every_backend(client: TestClient) -> None:
    for field in ("output", "question", "model", "scenario", "question_id"):
        response = client.post("/api/submissions", json=submission(**{field: "a\x00b"}), headers=AUTH)
        assert refused(response, 422, "NUL")["details"][0]["path"] == field
    for param in ("model", "scenario", "question_id"):
        refused(client.get("/api/submissions", params={param: "a\x00"}), 422, param, "NUL")
    assert nothing_stored(client)


def test_numbers_json_does_not_have_are_a_400(client: TestClient) -> None:
    for number in ("NaN", "Infinity", "-Infinity", "1e400", "1" * 5000):
        body = '{"question": "q", "model": "m", "output": "o", "metadata": {"x": ' + number + "}}"
        refused(client.post("/api/submissions", content=body.encode(), headers=JSON), 400, "malformed JSON")
    assert nothing_stored(client)


# ---- schedules ------------------------------------------------------------------------------


def test_a_schedule_that_never_fires_is_refused(client: TestClient) -> None:
    for cron in ("0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"):
        body = {"judge": "offline/rubric", "schedule": cron}
        answer = refused(client.post("/api/tournaments", json=body, headers=AUTH), 422, "schedule", "does not fire")
        assert answer["details"][0]["path"] == "schedule"
    assert nothing_stored(client)
    assert client.post("/api/tournaments", json={"judge": "offline/rubric", "schedule": "0 3 * * *"},
                       headers=AUTH).status_code == 202


def test_a_schedule_must_fire_within_a_year() -> None:
    def at(*ymd: int) -> float:
        return datetime(*ymd, tzinfo=timezone.utc).timestamp()

    assert next_due_within("0 0 29 2 *", at(2026, 3, 1)) is None  # next: 2028-02-29, 730 days on
    assert next_due_within("0 0 29 2 *", at(2027, 3, 1)) == at(2028, 2, 29)  # 365 days on
    assert next_due_within("0 3 * * *", at(2027, 3, 1)) == at(2027, 3, 1) + 3 * 3600
    assert next_due_within("0 0 31 2 *", at(2027, 3, 1)) is None


# ---- query parameters with a fixed vocabulary, and OPTIONS ------------------------------------


@pytest.mark.parametrize(
    ("route", "param", "values"),
    [
        ("/api/leaderboard", "by", ["model", "scenario", "model+scenario", "system", "model scenario"]),
        ("/api/leaderboard/history", "by", ["model", "scenario", "model+scenario", "system", "model scenario"]),
        ("/api/scores", "by", ["model", "scenario", "model+scenario", "system", "model scenario"]),
        ("/api/leaderboard", "dimension", ["accuracy", "completeness", "clarity", "conciseness", "overall"]),
        ("/api/scores", "criteria", ["overall", "dimensions", "compqa", "factsim"]),
    ],
)
def test_fixed_vocabularies_are_enums_and_empty_is_refused(
    client: TestClient, route: str, param: str, values: list[str]
) -> None:
    parameters = client.get("/openapi.json").json()["paths"][route]["get"]["parameters"]
    [schema] = [p["schema"] for p in parameters if p["name"] == param]
    ref = next(s["$ref"] for s in [schema, *schema.get("anyOf", [])] if "$ref" in s)
    components = client.get("/openapi.json").json()["components"]["schemas"]
    assert components[ref.rsplit("/", 1)[1]]["enum"] == values
    extra = {"tournament": 1} if route.endswith("history") else {}
    refused(client.get(route, params={param: "", **extra}), 422, param)
    refused(client.get(route, params={param: "free text", **extra}), 422, param)


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/api/submissions", "GET, POST"),
        ("/api/tournaments", "GET, POST"),
        ("/api/tournaments/1", "GET"),
        ("/api/tournaments/1/cancel", "POST"),
        ("/api/leaderboard", "GET"),
    ],
)
def test_other_methods_answer_405_with_every_method_of_the_path(client: TestClient, path: str, allow: str) -> None:
    for method in ("OPTIONS", "PUT", "DELETE", "PATCH"):
        response = client.request(method, path, headers=AUTH)
        refused(response, 405, method, path)
        assert response.headers["Allow"] == allow


# ---- judges without credentials ---------------------------------------------------------------


@pytest.fixture
def keyless(make_client: MakeClient) -> TestClient:
    client = make_client(anthropic_api_key=None, openai_api_key=None, openai_base_url=None)
    assert client.post("/api/submissions", json=[submission(model=m) for m in "abc"], headers=AUTH).status_code == 201
    return client


def tournaments_and_jobs(client: TestClient, queue: Queue) -> tuple[list[dict], int]:
    return store_of(client).list_tournaments(), queue.count


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({}, ["anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"]),  # the default judge
        ({"judge": "anthropic/claude-haiku-4-5"}, ["ANTHROPIC_API_KEY"]),
        ({"judge": "openai/llama3"}, ["OPENAI_BASE_URL", "JOUST_JUDGE_ENDPOINTS", "OPENAI_API_KEY"]),
    ],
)
def test_a_judge_without_credentials_is_refused_naming_the_variable(
    keyless: TestClient, queue: Queue, body: dict, words: list[str], dry_run: bool
) -> None:
    response = keyless.post("/api/tournaments", params={"dry_run": dry_run}, json=body, headers=AUTH)
    answer = refused(response, 422, "judge: ", *words)
    assert answer["details"] == [{"path": "judge", "message": answer["error"].removeprefix("judge: ")}]
    assert tournaments_and_jobs(keyless, queue) == ([], 0)


def test_a_custom_anthropic_server_still_needs_a_key(make_client: MakeClient) -> None:
    client = make_client(anthropic_api_key=None, anthropic_base_url="http://127.0.0.1:9")
    refused(client.post("/api/tournaments", json={}, headers=AUTH), 422, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")


@pytest.mark.parametrize(
    ("changes", "judge"),
    [
        ({"anthropic_api_key": "k"}, "anthropic/claude-haiku-4-5"),
        ({"openai_base_url": "http://127.0.0.1:9/v1"}, "openai/llama3"),  # a local server: no key needed
        ({"judge_endpoints": {"openai/llama3": JudgeEndpoint(base_url="http://127.0.0.1:9/v1")}}, "openai/llama3"),
        ({"openai_api_key": "k"}, "openai/gpt-4o-mini"),  # OpenAI itself
        ({}, "offline/rubric"),
    ],
)
def test_a_judge_with_its_credentials_is_accepted(make_client: MakeClient, changes: dict, judge: str) -> None:
    base = {"anthropic_api_key": None, "openai_api_key": None, "openai_base_url": None}
    client = make_client(**{**base, **changes})
    assert client.post("/api/tournaments", json={"judge": judge}, headers=AUTH).status_code == 202


def test_the_cli_refuses_a_judge_without_credentials(
    api_settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI asks the server (over a socket), whose judge has no credentials: exit 2, its words."""
    monkeypatch.setenv("JOUST_API_KEY", api_settings.api_key or "")
    with serving(api_settings.with_(anthropic_api_key=None, openai_api_key=None, openai_base_url=None,
                                    judge_endpoints={})) as url:
        assert main(["tournament", "create", "--dry-run", "--judge", "anthropic/claude-haiku-4-5", "--url", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("joust tournament create: judge: ") and "ANTHROPIC_API_KEY" in err
