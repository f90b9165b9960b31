"""Criteria `compqa` end to end: a real RQ burst worker scores each submission through the real
anthropic SDK against the fake Messages API (or with the offline judge), the real SQLite store
keeps one score per submission, matches compare the totals, and `GET /api/scores` serves the
means."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from service.config import Settings
from service.store import NewSubmission, Store
from service.web.app import create_app
from tests.fake_anthropic import FakeAnthropic
from tests.fake_policies import rubric_points, rubric_scores
from tests.test_rubric import GOOD
from tests.worker_fixtures import start, submit, work

KEY = "test-key"
JUDGE = "anthropic/fake-judge"
TOTALS = {"good": 17, "mid": 12, "bad": 5}


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(rubric_scores(TOTALS)) as server:
        yield server


@pytest.fixture
def env_vars() -> dict[str, str]:
    return {"JOUST_API_KEY": KEY}


def scores(store: Store) -> list[tuple[int, str, float, dict]]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("select submission_id, judge, total, detail from scores order by submission_id"))
        return [(r[0], r[1], r[2], json.loads(r[3])) for r in rows]


def test_each_submission_is_scored_once_across_its_matches(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=2)
    tid = start(db, env, criteria="compqa")
    view = work(env, db, tid)
    assert (view.matches_done, view.matches_failed) == (6, 0)
    assert fake.replies == 6  # six submissions, each in two matches, each scored once
    assert all("<answer>" in r.users[0] and "15. the summary itself" in r.system for r in fake.received)
    models = {s.id: s.model for s in db.list_submissions()}
    calls = []
    for j in db.tournament_judgements(tid):
        a, b = TOTALS[models[j["a"]]], TOTALS[models[j["b"]]]
        assert (j["outcome"], j["consistent"]) == ("A" if a > b else "B", True)
        by_side = {c["first"]: c for c in j["calls"]}
        assert set(by_side) == {j["a"], j["b"]}
        assert (by_side[j["a"]]["score"], by_side[j["b"]]["score"]) == (a, b)
        assert all(c["winner"] is None and sum(c["points"].values()) == c["score"] for c in j["calls"])
        calls += j["calls"]
    assert sum(not c["reused"] for c in calls) == 6 and sum(c["reused"] for c in calls) == 6
    assert all(c["input_tokens"] == 0 for c in calls if c["reused"])
    stored = scores(db)
    assert len(stored) == 6 and all(judge == JUDGE and total == TOTALS[models[sid]] for sid, judge, total, _ in stored)
    detail = stored[0][3]
    assert set(detail["criteria"]) == {f"C{n}" for n in range(1, 16)} and detail["template_version"] == "compqa-v1"


def test_a_new_submission_is_the_only_one_scored_in_the_next_run(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    work(env, db, start(db, env, criteria="compqa"))
    assert fake.replies == 3
    db.add_submissions([NewSubmission(question_id="q0", question="Question 0?", model="newcomer", scenario="default",
                                      output="[newcomer] answer to 0")])
    fake.decide = rubric_scores({**TOTALS, "newcomer": 19})
    tid = start(db, env, criteria="compqa")
    work(env, db, tid)
    assert fake.replies == 4  # three new matches, one new score
    newcomer = [j for j in db.tournament_judgements(tid) if len({c["score"] for c in j["calls"]} & {19.0})]
    assert len(newcomer) == 3


def test_equal_totals_tie_consistently(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    fake.decide = rubric_scores({"good": 10, "mid": 10, "bad": 3})
    submit(db, questions=1)
    tid = start(db, env, criteria="compqa", models=["good", "mid"])
    work(env, db, tid)
    (judgement,) = db.tournament_judgements(tid)
    assert (judgement["outcome"], judgement["consistent"]) == ("TIE", True)


def test_an_out_of_range_score_is_reminded_then_kept(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    wrong = json.dumps({**rubric_points(19), "10": 3})
    right = rubric_scores(TOTALS)
    fake.decide = lambda system, users: right(system, users) if len(users) > 1 else wrong
    submit(db, questions=1)
    tid = start(db, env, criteria="compqa", models=["good", "mid"])
    work(env, db, tid)
    (judgement,) = db.tournament_judgements(tid)
    assert sorted(c["score"] for c in judgement["calls"]) == [12.0, 17.0]
    assert all(c["reminded"] for c in judgement["calls"]) and fake.replies == 4
    assert all(d["reminded"] for *_, d in scores(db))


def test_out_of_range_twice_fails_the_match_and_keeps_no_score(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    fake.decide = lambda system, users: json.dumps({**rubric_points(10), "9": 4})
    submit(db, questions=1)
    tid = start(db, env, criteria="compqa", models=["good", "mid"])
    view = work(env, db, tid)
    assert (view.status, view.matches_failed) == ("failed", 1)
    with db.engine.connect() as conn:
        error = conn.execute(text("select last_error from matches")).scalar_one()
    assert error.startswith("VerdictParseError") and "criterion 9 is 4, outside 0-2" in error
    assert scores(db) == [] and db.tournament_judgements(tid) == []


def test_scores_are_served_per_group(db: Store, env: Settings) -> None:
    db.add_submissions([
        NewSubmission(question_id=f"q{q}", question=f"Question {q}?", model=m, scenario=sc,
                      output=f"[{m}] answer to {q} ({sc})")
        for q in range(2) for m in ("good", "bad") for sc in ("plain", "fancy")
    ])  # fmt: skip
    work(env, db, start(db, env, criteria="compqa"))
    with TestClient(create_app(env)) as client:
        by_model = client.get("/api/scores", params={"by": "model"}).json()
        assert by_model["by"] == "model" and by_model["criteria"] == "compqa"
        assert [(r["judge"], r["model"], r["mean"], r["std"], r["n"]) for r in by_model["rows"]] == [
            (JUDGE, "bad", 5.0, 0.0, 4), (JUDGE, "good", 17.0, 0.0, 4)]
        systems = client.get("/api/scores?by=model+scenario&judge=" + JUDGE).json()["rows"]
        assert [(r["model"], r["scenario"], r["n"]) for r in systems] == [
            ("bad", "fancy", 2), ("bad", "plain", 2), ("good", "fancy", 2), ("good", "plain", 2)]
        assert client.get("/api/scores", params={"judge": "anthropic/other"}).json()["rows"] == []
        assert client.get("/api/scores", params={"criteria": "overall"}).json()["rows"] == []
        refused = client.get("/api/scores", params={"by": "question"})
        assert refused.status_code == 422 and "model+scenario" in refused.json()["error"]


def test_the_offline_judge_scores_compqa_and_names_what_it_cannot(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    poor = "Python is nice. Java is also nice. Both work."
    db.add_submissions([
        NewSubmission(question_id="pj", question="Compare Python and Java", model=m, scenario="default", output=o)
        for m, o in (("structured", GOOD), ("flat", poor))
    ])  # fmt: skip
    tid = start(db, env, judge="offline/rubric", criteria="compqa")
    work(env, db, tid)
    assert fake.requests == 0
    (judgement,) = db.tournament_judgements(tid)
    models = {s.id: s.model for s in db.list_submissions()}
    winner = judgement["a"] if judgement["outcome"] == "A" else judgement["b"]
    assert models[winner] == "structured" and judgement["consistent"] is True
    stored = {models[sid]: (total, d) for sid, _judge, total, d in scores(db)}
    total, detail = stored["structured"]
    assert total == 11.0 and detail["max_total"] == 11
    assert detail["unscored"] == ["C8", "C9", "C11", "C12", "C14"]
    assert detail["template_version"] == "compqa-v1+structure-v1"
    assert stored["flat"][0] < 11.0
