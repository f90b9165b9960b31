"""Baseline mode over the API, the client and the CLI: every other player against one baseline
(n-1 pairs a question), refused clearly when the baseline is missing, misplaced or alone; priced
by a dry run; judged by a real burst worker against the fake Messages API up to the board, the
win rates against the baseline and the tournament's page (real Redis, SQLite and PostgreSQL)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue
from sqlalchemy import text

from joust import Client, DryRun
from service.cli import main
from service.config import Settings
from service.store import Store
from service.web.app import create_app
from tests.api_fixtures import app_state_of
from tests.fake_anthropic import FakeAnthropic, prefer
from tests.serving import serving
from tests.test_jobs import work

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
FAKE_JUDGE = "anthropic/fake-judge"
# q1: a b c d, q2: a b c, q3: a. Baseline b: q1 3 pairs, q2 2, q3 none (round robin: 6 + 3).
SUBMISSIONS = [
    {"question": f"Question {q} asks something?", "question_id": q, "model": m, "output": f"[{m}] answer to {q} " * n}
    for q, models in (("q1", "abcd"), ("q2", "abc"), ("q3", "a"))
    for n, m in enumerate(models, start=1)
]
BASELINE = {"mode": "baseline", "baseline": "b"}


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


def nothing_created(client: TestClient, env: Settings) -> bool:
    store: Store = app_state_of(client).store
    with store.engine.connect() as conn:
        rows = conn.execute(text("select (select count(*) from tournaments) + (select count(*) from matches)")).scalar()
    return rows == 0 and Queue(env.queue_name, connection=Redis.from_url(env.redis_url)).count == 0


def models_of(client: TestClient) -> dict[int, str]:
    return {row["id"]: row["model"] for row in client.get("/api/submissions").json()["submissions"]}


def test_a_baseline_run_pairs_every_other_player_with_the_baseline(client: TestClient) -> None:
    response = client.post("/api/tournaments", json={"name": "vs-b", **BASELINE}, headers=AUTH)
    assert response.status_code == 202, response.text
    created = response.json()
    assert created["matches_total"] == 3 + 2
    store: Store = app_state_of(client).store
    model = models_of(client)
    pairs = sorted(tuple(sorted((model[a], model[b]))) for a, b in store.tournament_pairs(created["id"]))
    assert pairs == [("a", "b"), ("a", "b"), ("b", "c"), ("b", "c"), ("b", "d")]
    view = client.get(f"/api/tournaments/{created['id']}").json()
    assert (view["mode"], view["spec"]["mode"], view["spec"]["baseline"], view["spec"]["level"]) == (
        "baseline", "baseline", "b", "model")
    at_scenario = client.post("/api/tournaments?dry_run=true", headers=AUTH,
                              json={**BASELINE, "baseline": "default", "level": "scenario"})
    assert at_scenario.status_code == 422  # one scenario: no other player to meet the baseline


@pytest.mark.parametrize(("body", "words"), [
    ({"mode": "baseline"}, "baseline: required when mode is 'baseline'"),
    ({"baseline": "b"}, "baseline: only for mode 'baseline'"),
    ({"mode": "sampled", "opponents": 1, "baseline": "b"}, "baseline: only for mode 'baseline'"),
    ({"mode": "adaptive", "baseline": "b"}, "baseline: not with mode 'adaptive': adaptive rounds pick pairs"),
    ({"mode": "adaptive", "max_calls": 4, "baseline": "b"},
     "baseline: not with mode 'adaptive': adaptive rounds pick pairs across the whole field, question by question, "
     "so win rates against a baseline would be over different"),
    ({**BASELINE, "baseline": "zed"}, "baseline: 'zed' is no model of this tournament's field (its players: a, b, c, d)"),
    ({**BASELINE, "models": ["b"]}, "baseline: the field has no player but the baseline 'b'"),
    ({**BASELINE, "models": ["a", "c"]}, "baseline: 'b' is no model of this tournament's field (its players: a, c)"),
    ({**BASELINE, "baseline": ""}, "baseline: must not be empty"),
    ({**BASELINE, "judges": [FAKE_JUDGE, "anthropic/other"]}, "judges: a panel runs modes 'round_robin' and "
                                                            "'sampled', not 'baseline'"),
])
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_baseline_missing_misplaced_or_alone_is_refused_and_nothing_is_made(
    client: TestClient, env: Settings, body: dict, words: str, dry_run: bool
) -> None:
    response = client.post(f"/api/tournaments?dry_run={str(dry_run).lower()}", json=body, headers=AUTH)
    assert response.status_code == 422, response.text
    assert words in response.json()["error"]
    if words.startswith("baseline:"):  # the use case's refusal names the field (a model-wide one has no path)
        assert any(d["path"] == "baseline" for d in response.json()["details"])
    assert nothing_created(client, env)


def test_a_dry_run_prices_the_n_minus_1_plan(client: TestClient, env: Settings) -> None:
    full = client.post("/api/tournaments?dry_run=true", json={}, headers=AUTH).json()
    cheap = client.post("/api/tournaments?dry_run=true", json=BASELINE, headers=AUTH).json()
    assert (full["matches"], full["calls"]) == (9, 18)
    assert (cheap["matches"], cheap["calls"], cheap["cached"]) == (5, 10, 0)
    texts = {(s["question_id"], s["model"]): s for s in SUBMISSIONS}

    def tokens(chars: int) -> int:
        return -(-chars // 4)

    pairs = [("q1", "a"), ("q1", "c"), ("q1", "d"), ("q2", "a"), ("q2", "c")]
    tokens_in = sum(2 * (tokens(len(texts[q, m]["question"])) + tokens(len(texts[q, m]["output"]))
                         + tokens(len(texts[q, "b"]["output"])) + 280) for q, m in pairs)
    # the default judge's $3 / $15 per million tokens; 60 tokens out a call
    assert cheap["estimated_cost_usd"] == pytest.approx((tokens_in * 3.0 + 10 * 60 * 15.0) / 1e6, abs=1e-6)
    assert nothing_created(client, env)


def test_a_baseline_run_is_judged_to_its_win_rates_and_page(
    client: TestClient, env: Settings, fake: FakeAnthropic
) -> None:
    store: Store = app_state_of(client).store
    created = client.post("/api/tournaments", json={"judge": FAKE_JUDGE, **BASELINE}, headers=AUTH).json()
    done = work(env, store, created["id"])
    assert (done.status, done.matches_done, fake.replies) == ("done", 5, 10)  # both orders of 5 pairs
    tid = created["id"]
    board = client.get(f"/api/leaderboard?tournament={tid}").json()
    assert {row["player"] for row in board["rows"]} == set("abcd")
    rates = client.get(f"/api/leaderboard/winrate?tournament={tid}&baseline=b").json()
    got = {row["player"]: (row["win_rate"], row["n_total"]) for row in rates["rows"]}
    assert got == {"a": (100.0, 2), "c": (0.0, 2), "d": (0.0, 1)}  # the fake prefers a > b > c > d
    assert all(row["lc_win_rate"] is not None for row in rates["rows"])
    own = client.get(f"/api/leaderboard/winrate?tournament={tid}").json()  # the run's own baseline by default
    assert (own["baseline"], own["by"], own["rows"]) == ("b", "model", rates["rows"])
    with serving(env.with_(api_key=KEY)) as url:
        frame = Client(url, KEY).winrate(tournament=tid).set_index("player")
    assert (frame.attrs["baseline"], frame.loc["a", "win_rate"], frame.loc["d", "n_total"]) == ("b", 100.0, 1)
    page = client.get(f"/tournaments/{tid}")
    assert page.status_code == 200
    assert "Win rate against b" in page.text and "baseline-title" in page.text
    assert "<tr><td>a</td><td class=\"num\">100.0%</td>" in page.text
    plain = client.post("/api/tournaments", json={"judge": FAKE_JUDGE, "questions": ["q3"]}, headers=AUTH).json()
    assert "Win rate against" not in client.get(f"/tournaments/{plain['id']}").text  # only for a baseline run
    for scope in (f"?tournament={plain['id']}", ""):  # no baseline to default to
        refused = client.get(f"/api/leaderboard/winrate{scope}")
        assert refused.status_code == 409, refused.text  # valid parameters, no baseline run
        assert "query parameter baseline: required, unless `tournament` is a baseline run" in refused.json()["error"]
    assert "is of mode 'round_robin'" in client.get(f"/api/leaderboard/winrate?tournament={plain['id']}").text


def test_the_client_and_the_cli_start_a_baseline_run(
    client: TestClient, env: Settings, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(env.with_(api_key=KEY)) as url:
        joust = Client(url, KEY)
        priced = joust.tournament(mode="baseline", baseline="c", dry_run=True)
        assert isinstance(priced, DryRun) and (priced.matches, priced.calls) == (5, 10)
        made = joust.tournament(name="vs-c", mode="baseline", baseline="c", models=["a", "b", "c"])
        assert (made.mode, made.spec["baseline"], made.matches_total) == ("baseline", "c", 4)
        monkeypatch.setenv("JOUST_URL", url)
        monkeypatch.setenv("JOUST_API_KEY", KEY)
        assert main(["tournament", "create", "--dry-run", "--mode", "baseline", "--baseline", "a"]) == 0
        assert json.loads(capsys.readouterr().out)["matches"] == 3 + 2
        assert main(["tournament", "create", "--mode", "baseline"]) == 2
        assert "baseline: required when mode is 'baseline'" in capsys.readouterr().err
