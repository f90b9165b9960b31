"""What a private joust keeps from those who may not read: a voter's key votes blind (its votes
name answers by id, and no refusal says which model wrote which), the OpenAPI document needs a
key like every read, and no name can carry characters that make it print as another."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.usecases.importers.battles import parse_battles
from service.usecases.importers.common import ImportFormatError
from tests.api_fixtures import API_KEY, MakeClient, store_of

ADMIN = {"Authorization": f"Bearer {API_KEY}"}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def private(make_client: MakeClient) -> TestClient:
    return make_client(private=True)


def voter_key(client: TestClient) -> dict[str, str]:
    response = client.post("/api/keys", json={"name": "panel", "scopes": ["vote"]}, headers=ADMIN)
    assert response.status_code == 201, response.text
    return bearer(response.json()["secret"])


def submit(client: TestClient) -> dict[str, int]:
    """m1 and m2 answer q1; m1 answers it again under scenario "terse"; their ids by name."""
    batch = [{"question": "text of q1", "question_id": "q1", "model": m, "scenario": s, "output": f"{m} {s}"}
             for m, s in (("m1", "default"), ("m2", "default"), ("m1", "terse"))]
    response = client.post("/api/submissions", json=batch, headers=ADMIN)
    assert response.status_code == 201, response.text
    return dict(zip(("m1", "m2", "m1t"), (s["id"] for s in response.json()["submissions"])))


def stored(client: TestClient) -> int:
    return len(store_of(client).health_records())


def test_a_voters_key_names_answers_by_id_only(private: TestClient) -> None:
    """Naming sides by model with an absurd `first` used to answer "neither a (1) nor b (2)":
    the ids behind each model. Now the key form is refused before anything is looked up."""
    ids = submit(private)
    key = voter_key(private)
    by_key = {"voter": "ann", "winner": "A", "a": {"question_id": "q1", "model": "m1"},
              "b": {"question_id": "q1", "model": "m2"}, "first": {"question_id": "q1", "model": "nobody"}}
    for body in (by_key, {**by_key, "first": None}, {"voter": "ann", "winner": "A", "a": ids["m1"],
                                                     "b": {"question_id": "q1", "model": "m1"}}):
        body = {k: v for k, v in body.items() if v is not None}
        refused = private.post("/api/votes", json=body, headers=key)
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert "by submission id only" in error and "nothing was stored" in error
        assert not re.search(r"\b\d+\b", error.replace("U+", ""))  # no id is named: none was looked up
    assert stored(private) == 0
    # By ids the vote is filed.
    filed = private.post("/api/votes", json={"voter": "ann", "winner": "A", "a": ids["m1"], "b": ids["m2"]},
                         headers=key)
    assert filed.status_code == 201, filed.text
    assert stored(private) == 1


def test_a_blind_refusal_never_names_a_model_or_question(private: TestClient) -> None:
    ids = submit(private)
    key = voter_key(private)
    # m1 against m1 under another scenario is a real comparison; these two are one player.
    other = private.post("/api/submissions", json={"question": "text of q2", "question_id": "q2", "model": "m1",
                                                   "output": "m1 on q2"}, headers=ADMIN).json()["submissions"][0]["id"]
    for b, says in ((ids["m1"], "the same submission"), (other, "answer different questions")):
        refused = private.post("/api/votes", json={"voter": "ann", "winner": "A", "a": ids["m1"], "b": b}, headers=key)
        assert refused.status_code == 422 and says in refused.json()["error"], refused.text
        assert "m1" not in refused.json()["error"] and "q1" not in refused.json()["error"]
    # The admin (who reads everything anyway) is told the whole story.
    told = private.post("/api/votes", json={"voter": "ann", "winner": "A", "a": ids["m1"], "b": other}, headers=ADMIN)
    assert told.status_code == 422 and "'q1' and 'q2'" in told.json()["error"]
    assert stored(private) == 0


def test_the_openapi_document_is_a_read_like_any_other(private: TestClient, client: TestClient) -> None:
    assert private.get("/openapi.json").status_code == 401
    assert private.get("/openapi.json", headers=voter_key(private)).status_code == 403
    document = private.get("/openapi.json", headers=ADMIN)
    assert document.status_code == 200 and "/api/votes" in document.json()["paths"]
    assert client.get("/openapi.json").json() == document.json()  # open where the joust is


@pytest.mark.parametrize("name", ["gpt\u202e4-tpg", "a\u2066b", "tab\there", "line\u2028break", "esc\x1b[31m"])
def test_names_that_would_print_as_another_are_refused(client: TestClient, name: str) -> None:
    for field in ("model", "scenario", "question_id"):
        body = {"question": "q", "question_id": "q1", "model": "m", "output": "o", field: name}
        refused = client.post("/api/submissions", json=body, headers=ADMIN)
        assert refused.status_code == 422, refused.text
        assert f"U+{ord(next(c for c in name if not c.isprintable())):04X}" in refused.text
    assert client.get("/api/submissions").json()["submissions"] == []


def test_an_import_refuses_a_name_that_would_print_as_another(tmp_path: Path) -> None:
    path = tmp_path / "battles.jsonl"
    rows = [{"model_a": "gpt-4", "model_b": "claude", "winner": "model_a", "question_id": "q1"},
            {"model_a": "gpt\u202e4", "model_b": "claude", "winner": "model_b", "question_id": "q2"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ImportFormatError) as refused:
        parse_battles(path)
    assert ":2" in str(refused.value) and "U+202E" in str(refused.value)
