"""GET /api/judges over judgements made by the real job: a real RQ worker on the real Redis,
the real anthropic SDK talking to the fake Messages API, the real app and SQLite file.

One reply is planted without a verdict (the reminder recovers it), a second judge never gives a
readable verdict (its matches fail with VerdictParseError), and one human vote is imported on a
pair the first judge also judged.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from redis import Redis

from leaderboard.types import Winner
from service.config import Settings
from service.store import Store
from service.store.imports import ImportedJudgement
from service.store.queue import job_queue
from service.web.app import create_app
from tests.api_fixtures import app_state_of
from tests.fake_anthropic import FakeAnthropic, malformed, prefer
from workers.rq_worker import JoustWorker

KEY = "k"
AUTH = {"Authorization": f"Bearer {KEY}"}
MODELS = ["good", "mid", "bad"]
JUDGE, BROKEN = "anthropic/fake-judge", "anthropic/broken-judge"


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prefer(MODELS)) as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, redis_url: str, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """One environment for the app and this process's worker runtime (same database and queue)."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    for name, value in {"JOUST_DATA_DIR": str(tmp_path), "REDIS_URL": redis_url, "JOUST_API_KEY": KEY,
                        "JOUST_QUEUE": "joust-judges-test", "ANTHROPIC_BASE_URL": fake.url,
                        "ANTHROPIC_API_KEY": "test-key", "JOUST_RETRY_BACKOFF": "0.05"}.items():
        monkeypatch.setenv(name, value)
    return Settings.from_env()


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as client:
        yield client


def run_tournament(client: TestClient, settings: Settings, judge: str) -> dict:
    """Start a round robin under `judge` and work its jobs with a burst worker until settled."""
    response = client.post("/api/tournaments", json={"judge": judge, "mode": "round_robin"}, headers=AUTH)
    assert response.status_code == 202, response.text
    tid = response.json()["id"]
    assert settings.redis_url
    redis = Redis.from_url(settings.redis_url)
    for _ in range(60):
        JoustWorker([job_queue(redis, settings.queue_name)], connection=redis).work(
            burst=True, with_scheduler=True)
        view = client.get(f"/api/tournaments/{tid}").json()
        if view["matches_pending"] == 0:
            redis.close()
            return view
        time.sleep(0.1)
    raise AssertionError(f"tournament {tid} did not settle")


def test_judge_health_of_judges_run_by_the_worker(client: TestClient, settings: Settings, fake: FakeAnthropic) -> None:
    # the better model writes the longer answer, so the judge always picks the longer one
    batch = [{"question": "Explain tides.", "question_id": "q", "model": m, "output": f"[{m}] " + "x" * (30 - 10 * i)}
             for i, m in enumerate(MODELS)]
    created = client.post("/api/submissions", json=batch, headers=AUTH)
    assert created.status_code == 201, created.text
    ids = {m: s["id"] for m, s in zip(MODELS, created.json()["submissions"])}

    fake.queue_replies("No verdict here, sorry.")  # one call needs the reminder
    view = run_tournament(client, settings, JUDGE)
    assert (view["matches_done"], view["matches_failed"]) == (3, 0)
    fake.decide = malformed("Both have merits.")
    view = run_tournament(client, settings, BROKEN)
    assert (view["matches_done"], view["matches_failed"]) == (0, 3)

    store: Store = app_state_of(client).store
    store.import_judgements(name="panel", source="test", judge="human/panel", criteria="overall", rows=[
        ImportedJudgement(key="vote-1", a_id=ids["mid"], b_id=ids["good"], outcome=Winner.B,
                          calls=[{"first": ids["mid"], "winner": "B"}]),
    ])

    response = client.get("/api/judges")
    assert response.status_code == 200, response.text
    health = {h["judge"]: h for h in response.json()["judges"]}
    assert list(health) == [BROKEN, JUDGE, "human/panel"]
    assert health[JUDGE] == {
        "judge": JUDGE, "calls": 6, "judgements": 3,
        "consistency": 1.0,  # the planted preference holds in both orders
        "first_position_win_rate": 0.5,  # each pair's better answer is shown first once
        "tie_rate": 0.0,
        "parse_failure_rate": pytest.approx(1 / 6),  # one reminded call of six
        "longer_wins_rate": 1.0,
        "human_agreement": 1.0, "human_pairs": 1, "human_votes": 1,  # good beat mid, as the panel said
        "human_agreement_decided": 1.0, "human_decided_pairs": 1, "human_decided_votes": 1,
        # one pair: every resample is that pair, so no interval ("no_spread"), not a zero-width [1, 1]
        "human_alpha": 1.0, "human_alpha_low": None, "human_alpha_high": None, "human_alpha_pairs": 1,
        "human_alpha_ci_missing": "no_spread",
    }
    assert health[BROKEN] == {
        "judge": BROKEN, "calls": 0, "judgements": 0, "consistency": None, "first_position_win_rate": None,
        "tie_rate": None, "parse_failure_rate": 1.0, "longer_wins_rate": None, "human_agreement": None,
        "human_pairs": 0, "human_votes": 0, "human_agreement_decided": None, "human_decided_pairs": 0,
        "human_decided_votes": 0,
        "human_alpha": None, "human_alpha_low": None, "human_alpha_high": None, "human_alpha_pairs": 0,
        "human_alpha_ci_missing": None,
    }
    panel = health["human/panel"]
    assert (panel["calls"], panel["first_position_win_rate"], panel["human_agreement"]) == (1, 0.0, None)

    only = client.get("/api/judges", params={"judge": JUDGE}).json()["judges"]
    assert [h["judge"] for h in only] == [JUDGE] and only[0]["human_agreement"] == 1.0
    nobody = client.get("/api/judges", params={"judge": "anthropic/nobody"}).json()
    assert nobody["judges"] == [] and nobody["humans"] == ["human/panel"]


NO_VOTERS = {"rate": None, "pairs": 0, "votes": 0, "decided": None, "decided_pairs": 0, "decided_votes": 0}


def test_no_judgements_no_judges(client: TestClient) -> None:
    assert client.get("/api/judges").json() == {"judges": [], "humans": [], "voter_agreement": NO_VOTERS,
                                                "judge_agreement": [], "turn": None}
    response = client.get("/api/judges", params={"humans": "human/anyone"})
    assert response.status_code == 404 and "no human votes are stored" in response.json()["error"]
