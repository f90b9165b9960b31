"""Judge panels through the API: POST /api/tournaments with `judges`, worked by real RQ burst
workers in this process against two fake providers (the Messages API for anthropic/ judges, Chat
Completions for openai/ judges), then the boards and judge health the panel shows up on; SQLite, then PostgreSQL.

Both anthropic/ judges prefer good > mid > bad, the openai/ judges the reverse, so a panel of
two anthropic judges and one openai judge has a 2-1 majority on every pair, and a panel of one
of each splits on every pair.
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis

from service.config import Settings
from service.store.queue import job_queue
from service.web.app import create_app
from tests.api_fixtures import app_state_of
from tests.fake_anthropic import FakeAnthropic, malformed, prefer
from tests.fake_openai import FakeOpenAI
from workers import jobs
from workers.rq_worker import JoustWorker

KEY = "k"
AUTH = {"Authorization": f"Bearer {KEY}"}
MODELS = ["good", "mid", "bad"]
ONE, TWO, CONTRA, OTHER = "anthropic/one", "anthropic/two", "openai/contra", "openai/other"


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prefer(MODELS)) as server:
        yield server


@pytest.fixture
def openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(prefer(MODELS[::-1])) as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> str | None:
    """The store: a SQLite file in the data dir, then a fresh PostgreSQL database (skipped where
    PostgreSQL is absent)."""
    return str(request.getfixturevalue("postgres_url")) if request.param == "postgresql" else None


@pytest.fixture
def settings(tmp_path: Path, redis_url: str, anthropic: FakeAnthropic, openai: FakeOpenAI, database: str | None,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """One environment for the app and this process's worker runtime."""
    if database is None:
        monkeypatch.delenv("DATABASE_URL", raising=False)
    else:
        monkeypatch.setenv("DATABASE_URL", database)
    for name, value in {"JOUST_DATA_DIR": str(tmp_path), "REDIS_URL": redis_url, "JOUST_API_KEY": KEY,
                        "JOUST_QUEUE": "joust-panel-test", "ANTHROPIC_BASE_URL": anthropic.url,
                        "ANTHROPIC_API_KEY": "test-key", "OPENAI_BASE_URL": openai.url,
                        "OPENAI_API_KEY": "test-key", "JOUST_RETRY_BACKOFF": "0.05"}.items():
        monkeypatch.setenv(name, value)
    yield Settings.from_env()
    jobs.shutdown(drain_s=5)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as client:
        batch = [{"question": "Explain tides.", "question_id": "q", "model": m, "output": f"[{m}] tides"}
                 for m in MODELS]
        assert client.post("/api/submissions", json=batch, headers=AUTH).status_code == 201
        yield client


def run_panel(client: TestClient, settings: Settings, **body: Any) -> dict:
    """Start a panel's run and work the queue until its matches and its runs' settle."""
    response = client.post("/api/tournaments", json={"mode": "round_robin", **body}, headers=AUTH)
    assert response.status_code == 202, response.text
    tid = response.json()["id"]
    assert settings.redis_url
    redis = Redis.from_url(settings.redis_url)
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            JoustWorker([job_queue(redis, settings.queue_name)], connection=redis).work(burst=True, with_scheduler=True)
            view = client.get(f"/api/tournaments/{tid}").json()
            runs = [client.get(f"/api/tournaments/{run}").json() for run in view["runs"]]
            if all(v["matches_pending"] == 0 for v in [view, *runs]):
                return view
            time.sleep(0.1)
    finally:
        redis.close()
    raise AssertionError(f"panel run {tid} did not settle: {client.get(f'/api/tournaments/{tid}').json()}")


def failures(client: TestClient, tid: int) -> object:
    """Why a run's matches failed, for an assertion's message."""
    return app_state_of(client).store.tournament_failures(tid)


def verdicts(client: TestClient, tid: int) -> list[dict]:
    response = client.get(f"/api/tournaments/{tid}/judgements")
    assert response.status_code == 200, response.text
    return response.json()["judgements"]


def board(client: TestClient, judge: str) -> dict[str, tuple[int, int, int]]:
    response = client.get("/api/leaderboard", params={"judge": judge, "by": "model"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["judge"] == judge
    return {r["player"]: (r["wins"], r["losses"], r["ties"]) for r in body["rows"]}


def calls_by_model(server: FakeAnthropic) -> Counter[str]:
    return Counter(r.model for r in server.received if r.status == 200)


def test_a_majority_panel_then_a_split_panel_reusing_a_member(
    client: TestClient, settings: Settings, anthropic: FakeAnthropic, openai: FakeOpenAI
) -> None:
    priced = client.post("/api/tournaments?dry_run=true", json={"judges": [TWO, CONTRA, ONE]}, headers=AUTH)
    assert priced.status_code == 200, priced.text
    assert (priced.json()["matches"], priced.json()["calls"]) == (9, 18)  # three members, three pairs, two orders
    view = run_panel(client, settings, judges=[TWO, CONTRA, ONE])
    assert (view["matches_done"], view["matches_failed"]) == (3, 0), failures(client, view["id"])
    assert view["spec"]["judge"] == f"panel/{ONE}+{TWO}+{CONTRA}"
    assert view["spec"]["judges"] == [ONE, TWO, CONTRA] and view["spec"]["aggregation"] == "majority"
    assert len(view["runs"]) == 3  # one run per member, listed under the panel's
    # every member judged the three pairs in both orders, and the panel asked nobody
    assert calls_by_model(anthropic) == {"one": 6, "two": 6} and calls_by_model(openai) == {"contra": 6}
    panel = f"panel/{ONE}+{TWO}+{CONTRA}"
    judged = verdicts(client, view["id"])
    assert len(judged) == 3
    ranks = {m: i for i, m in enumerate(MODELS)}
    model = {sub.id: sub.model for sub in app_state_of(client).store.select_submissions()}
    for j in judged:
        assert j["judge"] == panel and j["cost_usd"] == 0.0
        better = min(model[j["a"]], model[j["b"]], key=ranks.__getitem__)
        assert j["outcome"] == ("A" if model[j["a"]] == better else "B")  # two anthropic judges outvote one
        [call] = j["calls"]  # the panel's verdict, naming its members' judgements
        assert call["winner"] == j["outcome"] and call["first"] is None
        assert sorted(m["judge"] for m in call["members"]) == [ONE, TWO, CONTRA]
        assert Counter(m["winner"] for m in call["members"])[j["outcome"]] == 2
        assert all(isinstance(m["judgement_id"], int) for m in call["members"])
    assert board(client, panel) == {"good": (2, 0, 0), "mid": (1, 1, 0), "bad": (0, 2, 0)}
    assert board(client, CONTRA) == {"bad": (2, 0, 0), "mid": (1, 1, 0), "good": (0, 2, 0)}  # its own board

    before_anthropic, before_openai = calls_by_model(anthropic), calls_by_model(openai)
    again = client.post("/api/tournaments?dry_run=true", json={"judges": [ONE, OTHER]}, headers=AUTH).json()
    assert (again["calls"], again["cached"]) == (6, 3)  # ONE's three verdicts are stored
    split = run_panel(client, settings, judges=[ONE, OTHER], panel="split")
    assert (split["matches_done"], split["matches_failed"]) == (3, 0), failures(client, split["id"])
    assert calls_by_model(anthropic) == before_anthropic  # ONE's verdicts were reused: no call
    assert calls_by_model(openai) - before_openai == Counter({"other": 6})  # only the new member paid
    assert {j["outcome"] for j in verdicts(client, split["id"])} == {"TIE"}  # they disagree on every pair
    assert board(client, "panel/split") == {"good": (0, 0, 2), "mid": (0, 0, 2), "bad": (0, 0, 2)}

    health = {h["judge"]: h for h in client.get("/api/judges").json()["judges"]}
    assert {panel, "panel/split", ONE, TWO, CONTRA, OTHER} <= set(health)
    assert (health["panel/split"]["judgements"], health["panel/split"]["tie_rate"]) == (3, 1.0)


def test_a_separate_panel_pools_its_members_verdicts(
    client: TestClient, settings: Settings, anthropic: FakeAnthropic, openai: FakeOpenAI
) -> None:
    view = run_panel(client, settings, judges=[ONE, CONTRA], aggregation="separate", panel="pool")
    assert (view["matches_total"], view["matches_done"]) == (3, 3)
    assert len(view["runs"]) == 3  # each member's run, and the run copying the second member's verdicts
    judged = [j for run in [view["id"], *view["runs"]] for j in verdicts(client, run) if j["judge"] == "panel/pool"]
    assert Counter(m["judge"] for j in judged for c in j["calls"] for m in c["members"]) == {ONE: 3, CONTRA: 3}
    # each member's verdict is one battle: good beat bad once and lost to it once
    assert board(client, "panel/pool") == {"good": (2, 2, 0), "mid": (2, 2, 0), "bad": (2, 2, 0)}
    assert board(client, ONE) == {"good": (2, 0, 0), "mid": (1, 1, 0), "bad": (0, 2, 0)}


@pytest.mark.parametrize(("body", "message"), [
    ({"judges": []}, "'judges' is empty"),
    ({"judges": [ONE, CONTRA, ONE]}, f"'judges' names '{ONE}' more than once"),
    ({"judges": [ONE, CONTRA], "judge": TWO}, "judge and judges"),
    ({"judges": [ONE, CONTRA], "aggregation": "mean"}, "'aggregation' 'mean' is unknown"),
    ({"judges": [ONE, "nobody/x"]}, "unknown provider 'nobody'"),
    ({"aggregation": "majority"}, "aggregation: only with judges"),
    ({"judges": [ONE, CONTRA], "mode": "adaptive"}, "a panel runs modes 'round_robin' and 'sampled'"),
    ({"judges": [ONE, "offline/none"]}, "unknown offline judge 'offline/none'"),
])
def test_bad_panels_are_refused_and_change_nothing(client: TestClient, body: dict, message: str) -> None:
    response = client.post("/api/tournaments", json={"mode": "round_robin", **body}, headers=AUTH)
    assert response.status_code == 422, response.text
    assert message in response.json()["error"]
    assert client.get("/api/tournaments").json()["tournaments"] == []


def test_judge_health_gives_each_members_agreement_with_its_panel(
    client: TestClient, settings: Settings, anthropic: FakeAnthropic, openai: FakeOpenAI
) -> None:
    run_panel(client, settings, judges=[ONE, TWO, CONTRA], panel="jury")
    body = client.get("/api/judges", params={"judge": "panel/jury"}).json()
    with_panel = {a["judge"]: a for a in body["judge_agreement"]}  # "anthropic/..." < "openai/..." < "panel/..."
    assert set(with_panel) == {ONE, TWO, CONTRA}
    assert [(with_panel[j]["agreement"], with_panel[j]["agreement_decided"], with_panel[j]["pairs"])
            for j in (ONE, TWO, CONTRA)] == [(1.0, 1.0, 3), (1.0, 1.0, 3), (0.0, 0.0, 3)]
    assert [h["judge"] for h in body["judges"]] == ["panel/jury"]


def test_a_member_without_a_verdict_fails_the_panels_match_naming_it(
    client: TestClient, settings: Settings, openai: FakeOpenAI
) -> None:
    openai.decide = malformed("Both have merits.")  # the openai judge never gives a readable verdict
    view = run_panel(client, settings, judges=[ONE, CONTRA], panel="broken")
    assert (view["matches_done"], view["matches_failed"]) == (0, 3)
    [group] = app_state_of(client).store.tournament_failures(view["id"]).groups
    assert group.matches == 3 and f"no verdict from {CONTRA}" in group.error


def test_cancelling_a_panel_cancels_its_members_runs(client: TestClient) -> None:
    """A panel's run and its members' runs are made in one transaction, and cancelled together:
    no member keeps paying for a panel its owner stopped."""
    made = client.post("/api/tournaments", json={"name": "jury", "judges": [ONE, TWO, CONTRA]}, headers=AUTH)
    assert made.status_code in (201, 202), made.text
    tid = made.json()["id"]
    runs = client.get(f"/api/tournaments/{tid}", headers=AUTH).json()["runs"]
    assert len(runs) == 3
    cancelled = client.post(f"/api/tournaments/{tid}/cancel", headers=AUTH)
    assert cancelled.status_code == 200, cancelled.text
    for run in [tid, *runs]:
        view = client.get(f"/api/tournaments/{run}", headers=AUTH).json()
        assert view["status"] == "cancelled" and view["matches_cancelled"] == view["matches_total"] == 3, view
