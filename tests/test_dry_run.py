"""`POST /api/tournaments?dry_run=true` and `joust tournament create --dry-run`: the calls, the
cached matches and the estimated cost, with nothing created; checked against a real run (real
Redis and SQLite, a burst RQ worker, the fake Messages API)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue
from sqlalchemy import text

from joust import Client, DryRun
from service.cli import main
from service.config import DEFAULT_JUDGE, Settings
from service.store import Store
from service.web.app import create_app
from tests.api_fixtures import app_state_of
from tests.fake_anthropic import FakeAnthropic, prefer
from tests.serving import serving
from tests.test_jobs import work

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
FAKE_JUDGE = "anthropic/fake-judge"  # no price
# q1: 4 models, q2: 3 models, q3: 1 model  ->  round robin: 6 + 3 + 0 pairs.
SUBMISSIONS = [
    {"question": f"Question {q} asks something?", "question_id": q, "model": m, "output": f"[{m}] answer to {q} " * n}
    for q, models in (("q1", "abcd"), ("q2", "abc"), ("q3", "a"))
    for n, m in enumerate(models, start=1)
]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prefer(list("abcd"))) as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, redis_url: str, fake: FakeAnthropic, worker_database_url: str,
        monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name, value in {"JOUST_DATA_DIR": str(tmp_path), "DATABASE_URL": worker_database_url,
                        "REDIS_URL": redis_url, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "x"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("JOUST_PRICES", raising=False)
    return Settings.from_env()


@pytest.fixture
def client(env: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(env.with_(api_key=KEY))) as client:
        assert client.post("/api/submissions", json=SUBMISSIONS, headers=AUTH).status_code == 201
        yield client


def dry(client: TestClient, **body: object) -> dict:
    response = client.post("/api/tournaments?dry_run=true", json=body, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()


def nothing_created(client: TestClient, env: Settings) -> bool:
    store: Store = app_state_of(client).store
    with store.engine.connect() as conn:
        rows = conn.execute(text("select (select count(*) from tournaments) + (select count(*) from matches)")).scalar()
    return rows == 0 and Queue(env.queue_name, connection=Redis.from_url(env.redis_url)).count == 0


def tokens(chars: int) -> int:
    return -(-chars // 4)


def test_a_dry_run_counts_calls_and_cost_and_creates_nothing(client: TestClient, env: Settings) -> None:
    got = dry(client)
    assert (got["matches"], got["calls"], got["cached"], got["judge"], got["priced"]) == (9, 18, 0, DEFAULT_JUDGE, True)
    # Each pair: two calls, each the question, both outputs and 280 prompt tokens in, 60 out, at
    # the default judge's price of $3 / $15 per million tokens.
    by_q: dict[str, list[dict]] = {}
    for sub in SUBMISSIONS:
        by_q.setdefault(sub["question_id"], []).append(sub)
    tokens_in = sum(2 * (tokens(len(a["question"])) + tokens(len(a["output"])) + tokens(len(b["output"])) + 280)
                    for subs in by_q.values() for a, b in combinations(subs, 2))
    assert got["estimated_cost_usd"] == pytest.approx((tokens_in * 3.0 + 18 * 60 * 15.0) / 1e6, abs=1e-6)
    assert nothing_created(client, env)
    assert dry(client, order="single")["calls"] == 9
    assert dry(client, questions=["q2"], models=["a", "b"])["calls"] == 2


def test_a_dry_run_predicts_the_real_run(client: TestClient, env: Settings, fake: FakeAnthropic) -> None:
    store: Store = app_state_of(client).store
    first = client.post("/api/tournaments", json={"judge": FAKE_JUDGE, "questions": ["q2"]}, headers=AUTH).json()
    work(env, store, first["id"])
    assert fake.replies == 6
    got = dry(client, judge=FAKE_JUDGE)
    assert (got["matches"], got["cached"], got["calls"]) == (9, 3, 12)
    assert (got["estimated_cost_usd"], got["priced"]) == (None, False)  # no price: said, not guessed
    second = client.post("/api/tournaments", json={"judge": FAKE_JUDGE}, headers=AUTH).json()
    work(env, store, second["id"])
    assert fake.replies == 6 + got["calls"]
    assert dry(client, judge=FAKE_JUDGE) | {"judge": None} == {
        "matches": 9, "calls": 0, "cached": 9, "estimated_cost_usd": 0.0, "judge": None, "priced": False, "seed": None,
        "placeholders_skipped": 0, "delivery": "live"}


def test_identical_outputs_in_one_run_are_judged_once(client: TestClient) -> None:
    same = [{"question": "Same?", "question_id": "q4", "model": m, "output": out}
            for m, out in (("x", "the same words"), ("y", "the same words"), ("z", "other words"))]
    assert client.post("/api/submissions", json=same, headers=AUTH).status_code == 201
    # (x, z) and (y, z) hold the same two texts: one judgement answers both.
    assert {k: dry(client, questions=["q4"])[k] for k in ("matches", "calls", "cached")} == {
        "matches": 3, "calls": 4, "cached": 1}


def test_a_sampled_dry_run_gives_its_seed_back(client: TestClient) -> None:
    got = dry(client, mode="sampled", opponents=1)
    assert isinstance(got["seed"], int)
    again = dry(client, mode="sampled", opponents=1, seed=got["seed"])
    assert (again["matches"], again["calls"]) == (got["matches"], got["calls"])
    real = client.post("/api/tournaments", json={"mode": "sampled", "opponents": 1, "seed": got["seed"]}, headers=AUTH)
    assert real.json()["matches_total"] == got["matches"]


def test_a_dry_run_is_validated_and_authenticated_like_a_run(client: TestClient, env: Settings) -> None:
    assert client.post("/api/tournaments?dry_run=true", json={}).status_code == 401
    response = client.post("/api/tournaments?dry_run=true", json={"mode": "swiss"}, headers=AUTH)
    assert response.status_code == 422 and "mode" in response.json()["error"]
    response = client.post("/api/tournaments?dry_run=true", json={"judge": "offline/x"}, headers=AUTH)
    assert response.status_code == 422 and "unknown offline judge 'offline/x'" in response.json()["error"]
    assert client.post("/api/tournaments?dry_run=maybe", json={}, headers=AUTH).status_code == 422
    assert nothing_created(client, env)


def test_the_cli_dry_run_agrees_with_the_api(
    client: TestClient, env: Settings, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = dry(client, models=["a", "b", "c"])
    # The CLI talks to a server over HTTP: this app on a loopback socket, its key in the environment.
    with serving(env.with_(api_key=KEY)) as url:
        monkeypatch.setenv("JOUST_URL", url)
        monkeypatch.setenv("JOUST_API_KEY", KEY)
        assert main(["tournament", "create", "--dry-run", "--model", "a", "--model", "b", "--model", "c"]) == 0
        assert json.loads(capsys.readouterr().out) == api
        assert nothing_created(client, env)
        assert main(["tournament", "create", "--budget", "0"]) == 2
        assert "budget: Input should be greater than 0" in capsys.readouterr().err
        assert main(["tournament", "create", "--dry-run", "--judge", "offline/x"]) == 2
        assert "judge: unknown offline judge 'offline/x' (known: offline/rubric)" in capsys.readouterr().err
        assert main(["tournament", "create", "--name", "from-cli", "--order", "single"]) == 0
        created = json.loads(capsys.readouterr().out)
        assert (created["matches_total"], created["queued"]) == (9, True)
        assert client.get(f"/api/tournaments/{created['id']}").json()["name"] == "from-cli"


def test_a_batch_dry_run_is_priced_at_the_batch_price_on_every_surface(
    client: TestClient, env: Settings, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    live, batch = dry(client), dry(client, delivery="batch")
    assert (live["delivery"], batch["delivery"]) == ("live", "batch")
    assert (batch["matches"], batch["calls"]) == (live["matches"], live["calls"])
    # the Message Batches API costs half the live price: the rate the workers charge a batch run at
    assert batch["estimated_cost_usd"] == pytest.approx(live["estimated_cost_usd"] / 2, abs=1e-6)
    nightly = dry(client, schedule="0 3 * * *")  # a scheduled anthropic run is batch by default
    assert (nightly["delivery"], nightly["estimated_cost_usd"]) == ("batch", batch["estimated_cost_usd"])
    with serving(env.with_(api_key=KEY)) as url:
        monkeypatch.setenv("JOUST_URL", url)
        monkeypatch.setenv("JOUST_API_KEY", KEY)
        assert main(["tournament", "create", "--dry-run", "--delivery", "batch"]) == 0
        assert json.loads(capsys.readouterr().out) == batch
        priced = Client(url, KEY).tournament(delivery="batch", dry_run=True)
        assert isinstance(priced, DryRun)
        assert (priced.estimated_cost_usd, priced.delivery) == (batch["estimated_cost_usd"], "batch")
    assert nothing_created(client, env)
