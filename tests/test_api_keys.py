"""Named API keys with scopes: issued by an admin over the API and the CLI, stored as hashes,
listed without secrets, revoked; each scope opens its routes and no other; writes record the key
that made them; JOUST_PRIVATE=1 closes reads to anyone without a key."""
from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from service.cli import main
from service.store import Store
from service.store import schema as s
from service.store.schema import SCHEMA_VERSION
from tests.api_fixtures import API_KEY, MakeClient, store_of

ADMIN = {"Authorization": f"Bearer {API_KEY}"}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def issue(client: TestClient, name: str, *scopes: str) -> tuple[int, str]:
    response = client.post("/api/keys", json={"name": name, "scopes": list(scopes)}, headers=ADMIN)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["secret"].startswith(body["prefix"]) and body["scopes"] == list(scopes)
    return body["id"], body["secret"]


def submission(model: str, question: str = "Which is better?") -> dict:
    return {"question_id": "q1", "question": question, "model": model, "output": f"answer of {model}"}


def test_each_scope_opens_its_routes_and_no_other(client: TestClient) -> None:
    _, submitter = issue(client, "ci-submitter", "submit")
    _, voter = issue(client, "panel", "vote")
    _, runner = issue(client, "nightly", "run")
    _, reader = issue(client, "prometheus")  # no scope: reads only

    made = client.post("/api/submissions", json=[submission("a"), submission("b")], headers=bearer(submitter))
    assert made.status_code == 201
    a, b = (x["id"] for x in made.json()["submissions"])
    vote = {"a": a, "b": b, "winner": "A", "voter": "alice"}
    run = {"name": "t", "judge": "anthropic/fake-judge"}
    refusals = {
        submitter: [("/api/votes", vote, "vote"), ("/api/tournaments", run, "run"), ("/api/keys", {"name": "x"}, "admin")],
        voter: [("/api/submissions", submission("c"), "submit"), ("/api/tournaments", run, "run")],
        runner: [("/api/submissions", submission("c"), "submit"), ("/api/votes", vote, "vote"),
                 ("/api/keys", {"name": "x"}, "admin")],
        reader: [("/api/submissions", submission("c"), "submit"), ("/api/votes", vote, "vote"),
                 ("/api/tournaments", run, "run")],
    }
    for secret, routes in refusals.items():
        for path, body, scope in routes:
            response = client.post(path, json=body, headers=bearer(secret))
            assert response.status_code == 403, (path, response.text)
            assert f"'{scope}' scope" in response.json()["error"]
    for secret in (submitter, voter, runner, reader):
        assert client.get("/api/keys", headers=bearer(secret)).status_code == 403
    assert client.get("/api/submissions").status_code == 200  # reads stay open without JOUST_PRIVATE

    voted = client.post("/api/votes", json=vote, headers=bearer(voter))
    assert voted.status_code == 201, voted.text
    started = client.post("/api/tournaments", json=run, headers=bearer(runner))
    assert started.status_code == 202, started.text
    tid = started.json()["id"]
    assert client.post(f"/api/tournaments/{tid}/cancel", headers=bearer(runner)).status_code == 200

    # Writes record the key that made them, shown in their GET responses.
    listed = client.get("/api/submissions").json()["submissions"]
    assert {x["created_by"] for x in listed} == {"ci-submitter"}
    assert client.get(f"/api/tournaments/{tid}").json()["created_by"] == "nightly"
    assert client.get(f"/api/judgements/{voted.json()['votes'][0]['id']}").json()["created_by"] == "panel"
    by_admin = client.post("/api/submissions", json=submission("d"), headers=ADMIN)
    assert by_admin.status_code == 201
    rows = {x["model"]: x["created_by"] for x in client.get("/api/submissions").json()["submissions"]}
    assert rows == {"a": "ci-submitter", "b": "ci-submitter", "d": "admin"}


def test_secrets_are_shown_once_stored_hashed_and_revoked_keys_are_refused(client: TestClient) -> None:
    key_id, secret = issue(client, "temp", "submit", "vote")
    listed = client.get("/api/keys", headers=ADMIN)
    assert listed.status_code == 200
    assert secret not in listed.text and "secret" not in listed.json()["keys"][0]
    [row] = listed.json()["keys"]
    assert row["name"] == "temp" and row["scopes"] == ["submit", "vote"] and row["created_by"] == "admin"
    with store_of(client)._read() as conn:
        stored = conn.execute(select(s.api_keys)).one()
    assert stored.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in {str(v) for v in stored}

    assert client.post("/api/submissions", json=submission("a"), headers=bearer(secret)).status_code == 201
    assert client.delete(f"/api/keys/{key_id}", headers=bearer(secret)).status_code == 403  # not an admin
    revoked = client.delete(f"/api/keys/{key_id}", headers=ADMIN)
    assert revoked.status_code == 200 and revoked.json()["revoked"]
    refused = client.post("/api/submissions", json=submission("b"), headers=bearer(secret))
    assert refused.status_code == 403 and "revoked" in refused.json()["error"]
    assert client.post("/api/submissions", json=submission("b")).status_code == 401
    assert client.post("/api/submissions", json=submission("b"), headers=bearer(secret + "x")).status_code == 403
    assert client.delete("/api/keys/999", headers=ADMIN).status_code == 404
    # Names are never reused (writes keep them), and the admin's is reserved.
    assert client.post("/api/keys", json={"name": "temp"}, headers=ADMIN).status_code == 409
    assert client.post("/api/keys", json={"name": "admin"}, headers=ADMIN).status_code == 422
    assert client.post("/api/keys", json={"name": "x", "scopes": ["root"]}, headers=ADMIN).status_code == 422
    assert client.post("/api/keys", json={"name": "x"}).status_code == 401


def test_a_private_joust_needs_a_key_to_read(make_client: MakeClient) -> None:
    client = make_client(private=True)
    _, reader = issue(client, "reader")
    for path in ("/api/submissions", "/api/leaderboard", "/api/tournaments", "/metrics", "/"):
        refused = client.get(path)
        assert refused.status_code == 401, path
        assert "Basic" in refused.headers["www-authenticate"] and "Bearer" in refused.headers["www-authenticate"]
        assert client.get(path, headers=bearer(reader)).status_code == 200, path
        assert client.get(path, headers=bearer("nope")).status_code == 403, path
    assert client.get("/api/health").status_code == 200  # probes stay open
    # A browser sends the key as the password of Basic credentials (the user name is ignored).
    basic = base64.b64encode(f"me:{reader}".encode()).decode()
    assert client.get("/", headers={"Authorization": f"Basic {basic}"}).status_code == 200
    # A read-only key still cannot write.
    assert client.post("/api/submissions", json=submission("a"), headers=bearer(reader)).status_code == 403


def test_the_cli_issues_lists_and_revokes_keys(client: TestClient, api_settings, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    if api_settings.database_url:
        monkeypatch.setenv("DATABASE_URL", api_settings.database_url)
    else:
        monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("JOUST_DATA_DIR", str(api_settings.data_dir))
    assert main(["keys", "create", "from-cli", "--scope", "submit"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["name"] == "from-cli" and made["scopes"] == ["submit"]
    assert client.post("/api/submissions", json=submission("a"), headers=bearer(made["secret"])).status_code == 201
    assert main(["keys", "list"]) == 0
    listing = capsys.readouterr().out
    assert "from-cli" in listing and made["secret"] not in listing and made["prefix"] in listing
    assert main(["keys", "revoke", str(made["id"])]) == 0
    capsys.readouterr()
    assert client.post("/api/submissions", json=submission("b"), headers=bearer(made["secret"])).status_code == 403
    assert main(["keys", "create", "bad name!"]) == 2
    assert main(["keys", "revoke", "999"]) == 2


def test_a_version_7_store_gains_keys_and_created_by(tmp_path: Path) -> None:
    path = tmp_path / "v7.db"
    store = Store(f"sqlite:///{path}")
    with store._write() as conn:
        conn.execute(s.submissions.insert().values(
            question_id="q", question="q?", model="m", scenario="default", output="o", output_hash="h",
            question_hash="qh", metadata="{}", created_at=0))
    store.close()
    raw = sqlite3.connect(path)  # back to version 7: no created_by, no api_keys
    for table in ("submissions", "tournaments", "judgements"):
        raw.execute(f"ALTER TABLE {table} DROP COLUMN created_by")
    raw.execute("DROP TABLE api_keys")
    raw.execute("UPDATE schema_version SET version = 7")
    raw.commit()
    raw.close()
    upgraded = Store(f"sqlite:///{path}")
    assert [x.created_by for x in upgraded.list_submissions()] == [None]
    key, secret = upgraded.create_api_key("k", [])
    assert upgraded.find_api_key(secret) == key
    upgraded.close()
    raw = sqlite3.connect(path)
    assert raw.execute("select max(version) from schema_version").fetchone() == (SCHEMA_VERSION,)  # and on
    raw.close()
