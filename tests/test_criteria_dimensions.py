"""Criteria `dimensions` end to end: the API starts the tournament, a real RQ burst worker judges
through the real anthropic SDK against the fake Messages API, the real SQLite store keeps the
calls, and `GET /api/leaderboard?dimension=` ranks by one dimension."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from leaderboard.dimensions import DIMENSIONS, stored_outcome
from leaderboard.players import battles_at_level
from leaderboard.ties import fit_with_ties
from leaderboard.types import Level
from service.config import Settings
from service.store import Store
from service.web.app import create_app
from tests.fake_anthropic import FakeAnthropic, prefer
from tests.fake_policies import dimension_verdicts
from tests.worker_fixtures import MODELS, start, submit, work

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(dimension_verdicts(MODELS)) as server:
        yield server


@pytest.fixture
def env_vars() -> dict[str, str]:
    return {"JOUST_API_KEY": KEY, "JOUST_JUDGE": "anthropic/fake-judge"}


@pytest.fixture
def client(env: Settings, db: Store) -> Iterator[TestClient]:
    with TestClient(create_app(env)) as client:
        yield client


def models_of(store: Store) -> dict[int, str]:
    return {s.id: s.model for s in store.list_submissions()}


def test_each_dimension_gets_its_own_consistency(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    fake.decide = dimension_verdicts(MODELS, first_wins=("clarity",))  # position-biased on clarity only
    submit(db, questions=1)
    tid = start(db, env, criteria="dimensions")
    view = work(env, db, tid)
    assert (view.matches_done, view.matches_failed) == (3, 0)
    assert fake.replies == 6 and all("conciseness" in r.system for r in fake.received)
    models = models_of(db)
    for j in db.tournament_judgements(tid):
        assert j["criteria"] == "dimensions"
        better = "A" if MODELS.index(models[j["a"]]) < MODELS.index(models[j["b"]]) else "B"
        assert (j["outcome"], j["consistent"]) == (better, True)  # the overall dimension's
        assert {c["first"] for c in j["calls"]} == {j["a"], j["b"]}
        assert all(set(c["dimensions"]) == set(DIMENSIONS) and c["winner"] == c["dimensions"]["overall"]
                   for c in j["calls"])
        accuracy = stored_outcome(j["calls"], j["a"], j["b"], "accuracy")
        clarity = stored_outcome(j["calls"], j["a"], j["b"], "clarity")
        assert accuracy is not None and (accuracy.winner.value, accuracy.consistent) == (better, True)
        assert clarity is not None and (clarity.winner.value, clarity.consistent) == ("TIE", False)


def test_the_board_ranks_by_one_dimension(client: TestClient, db: Store, env: Settings, fake: FakeAnthropic) -> None:
    # best on accuracy is worst on conciseness
    fake.decide = dimension_verdicts(MODELS, per_dimension={"conciseness": MODELS[::-1]})
    submit(db, questions=2)
    created = client.post("/api/tournaments", json={"criteria": "dimensions"}, headers=AUTH)
    assert created.status_code == 202, created.text
    work(env, db, created.json()["id"])
    # an `overall` tournament with the opposite preference: it must not count on dimension boards
    fake.decide = prefer(MODELS[::-1])
    work(env, db, start(db, env, criteria="overall"))

    def board(**params: str) -> dict:
        response = client.get("/api/leaderboard", params={"by": "model", **params})
        assert response.status_code == 200, response.text
        return response.json()

    accuracy = board(dimension="accuracy")
    assert [r["player"] for r in accuracy["rows"]] == MODELS
    assert accuracy["dimension"] == "accuracy" and accuracy["judgements"] == 6
    assert [r["player"] for r in board(dimension="Conciseness")["rows"]] == MODELS[::-1]
    assert board(dimension="overall")["judgements"] == 6
    assert [r["wins"] for r in board(dimension="accuracy")["rows"]] == [4, 2, 0]
    assert board()["judgements"] == 12 and board()["dimension"] is None  # the overall board counts both
    # Davidson's tie model fitted on the dimension's own verdicts (the overall ones do not count)
    tied = board(dimension="conciseness", ties="davidson")
    battles = battles_at_level(db.dimension_side_rows("conciseness", judge=tied["judge"]), Level.MODEL)
    expected = fit_with_ties(battles, "davidson")
    assert tied["ties"] == "davidson" and [r["player"] for r in tied["rows"]] == MODELS[::-1]
    assert {r["player"]: r["rating"] for r in tied["rows"]} == pytest.approx(
        {p: rating for p, (rating, _, _) in expected.ratings.items()}, abs=1e-9)
    assert tied["tie_parameter"]["nu"] == pytest.approx(expected.tie_parameter[0], abs=1e-12)
    refused = client.get("/api/leaderboard", params={"dimension": "style"})
    assert refused.status_code == 422 and "accuracy" in refused.json()["error"]


def test_a_dimension_board_follows_new_judgements(client: TestClient, db: Store, env: Settings) -> None:
    submit(db, questions=1)
    assert client.get("/api/leaderboard", params={"dimension": "clarity"}).json()["rows"] == []
    work(env, db, start(db, env, criteria="dimensions"))
    rows = client.get("/api/leaderboard", params={"dimension": "clarity"}).json()["rows"]
    assert [r["player"] for r in rows] == MODELS


def test_missing_dimensions_fail_the_match_never_tie(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    partial = json.dumps({"accuracy": "A", "completeness": "A", "clarity": "B", "overall": "A", "reason": "r"})
    fake.decide = lambda system, users: partial
    submit(db, questions=1)
    tid = start(db, env, criteria="dimensions", models=["good", "mid"])
    view = work(env, db, tid)
    assert (view.status, view.matches_failed) == ("failed", 1)
    assert fake.replies == 4  # each order asked, then reminded once
    assert db.tournament_judgements(tid) == []
    with db.engine.connect() as conn:
        error = conn.execute(text("select last_error from matches")).scalar_one()
    assert error.startswith("VerdictParseError") and "conciseness" in error


def test_an_unreadable_first_reply_is_reminded_and_recorded(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    good = dimension_verdicts(MODELS)
    fake.decide = lambda system, users: good(system, users) if len(users) > 1 else "Both are fine."
    submit(db, questions=1)
    tid = start(db, env, criteria="dimensions", models=["good", "mid"])
    work(env, db, tid)
    (judgement,) = db.tournament_judgements(tid)
    assert all(c["reminded"] for c in judgement["calls"]) and fake.replies == 4
    health = {h.judge: h for h in db.judge_health()}["anthropic/fake-judge"]
    assert health.parse_failure_rate == 1.0


def test_the_offline_judge_refuses_dimensions_and_says_why(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    tid = start(db, env, judge="offline/rubric", criteria="dimensions", models=["good", "mid"])
    view = work(env, db, tid)
    assert (view.status, view.matches_failed) == ("failed", 1) and fake.requests == 0
    with db.engine.connect() as conn:
        error = conn.execute(text("select last_error from matches")).scalar_one()
    assert error.startswith("PermanentJudgeError") and "'dimensions'" in error and "free-form" in error
