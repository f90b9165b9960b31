"""Criteria `factsim` end to end: a real RQ burst worker has the fake Messages API (through the
real anthropic SDK) extract fact tuples from the sources and the summaries, the real
all-MiniLM-L6-v2 encoder embeds them offline, the real SQLite store keeps one FactSim per
submission with its facts, and matches compare the scores. The encoder (the `factsim` extra) is
a required part (tests/required.py); a worker without it is a real worker process on which
sentence-transformers cannot be imported."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from service.config import Settings
from service.store import NewSubmission, Store
from service.web.app import create_app
from tests.fake_anthropic import FakeAnthropic
from tests.fake_policies import fact_lines
from tests.required import REPO, require_factsim
from tests.test_criteria_compqa import scores
from tests.worker_fixtures import start, work

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
JUDGE = "anthropic/fake-judge"
QUESTION = "Summarise the biography of Marie Curie."
SOURCE = """Marie Curie was a physicist and chemist.
Marie Curie | was born in | Warsaw
Marie Curie | won | the Nobel Prize in Physics
Marie Curie | discovered | polonium
Marie Curie | founded | the Radium Institute"""
SUMMARIES = {
    "covering": "Curie | was born in | Warsaw\nMarie Curie | received | the Nobel Prize for Physics\n"
                "Curie | discovered | the element polonium\nMarie Curie | established | the Radium Institute",
    "partial": "Marie Curie | was born in | Warsaw\nMarie Curie | discovered | polonium",
    "inventing": "Marie Curie | was born in | Warsaw\nMarie Curie | invented | the telephone\n"
                 "Marie Curie | was president of | France\nthe Eiffel Tower | is made of | chocolate",
}  # fmt: skip
EXPECTED = {"covering": (1.0, 1.0), "partial": (0.5, 1.0), "inventing": (0.25, 0.25)}  # (f_V, f_N)

# Loading torch and the encoder costs a process about 13 s of CPU: every test that loads it
# runs in one xdist process (pyproject's --dist loadgroup), so the suite pays it once.
pytestmark = pytest.mark.xdist_group("minilm_encoder")


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(fact_lines()) as server:
        yield server


@pytest.fixture
def env_vars() -> dict[str, str]:
    return {"JOUST_API_KEY": KEY, "HF_HUB_OFFLINE": "1"}


def submit(store: Store, models: dict[str, str] = SUMMARIES, *, sources: list[str] | None = None,
           question: str = QUESTION) -> None:
    store.add_submissions([
        NewSubmission(question_id="curie", question=question, model=m, scenario="default", output=o,
                      metadata={} if sources is None else {"sources": sources})
        for m, o in models.items()
    ])  # fmt: skip


def last_error(store: Store) -> str:
    with store.engine.connect() as conn:
        return str(conn.execute(text("select last_error from matches")).scalar_one())


def test_covering_beats_partial_beats_inventing_and_each_text_is_extracted_once(
    env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    """The first test of a pytest process to embed pays for importing sentence-transformers
    (torch, transformers, scikit-learn: about 15 s on a loaded 2-core machine, more than the
    test itself) and loading the model; the process keeps both for every later test."""
    require_factsim()
    with TestClient(create_app(env)) as client:
        body = [{"question_id": "curie", "question": QUESTION, "model": m, "output": o,
                 "metadata": {"sources": [SOURCE]}} for m, o in SUMMARIES.items()]
        assert client.post("/api/submissions", json=body, headers=AUTH).status_code == 201
        created = client.post("/api/tournaments", json={"judge": JUDGE, "criteria": "factsim"}, headers=AUTH)
        assert created.status_code == 202, created.text
        view = work(env, db, created.json()["id"])
        assert (view.status, view.matches_done, view.matches_failed) == ("done", 3, 0)
        assert fake.replies == 4  # the source once, each summary once, across three matches
        assert sum("<document>\nMarie Curie was a physicist" in r.users[0] for r in fake.received) == 1
        models = {s.id: s.model for s in db.list_submissions()}
        rank = ["covering", "partial", "inventing"]
        calls = []
        for j in db.tournament_judgements(created.json()["id"]):
            better = min(j["a"], j["b"], key=lambda i: rank.index(models[i]))
            assert (j["outcome"], j["consistent"]) == ("A" if better == j["a"] else "B", True)
            calls += j["calls"]
        sides = [c for c in calls if c["first"] is not None]
        assert sum(not c["reused"] for c in sides) == 3 and sum(c["reused"] for c in sides) == 3
        assert all(c["input_tokens"] == 0 for c in sides if c["reused"])
        (source_call,) = [c for c in calls if c["first"] is None]
        assert source_call["source"] == 0 and source_call["facts"] == 4 and source_call["winner"] is None
        stored = {models[sid]: (total, detail) for sid, judge, total, detail in scores(db)}
        for model, (coverage, consistency) in EXPECTED.items():
            total, detail = stored[model]
            assert (detail["coverage"], detail["consistency"]) == (pytest.approx(coverage), pytest.approx(consistency))
            assert total == pytest.approx(2 * coverage * consistency / (coverage + consistency))
            assert detail["threshold"] == 0.75 and detail["encoder"] == "all-MiniLM-L6-v2"
            assert detail["template_version"].startswith("factsim-v1+src:")
            assert len(detail["sources"][0]["facts"]) == 4 and len(detail["source_matches"]) == 4
        assert stored["covering"][1]["summary_facts"][1] == ["Marie Curie", "received", "the Nobel Prize for Physics"]
        served = client.get("/api/scores", params={"criteria": "factsim", "by": "model"}).json()["rows"]
        assert [(r["model"], r["mean"]) for r in served] == [
            ("covering", 1.0), ("inventing", pytest.approx(0.25)), ("partial", pytest.approx(2 / 3))]


def test_without_sources_the_question_is_the_source_and_only_new_texts_are_extracted(
    env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    require_factsim()
    question = f"Summarise this text:\n{SOURCE}"
    submit(db, {m: SUMMARIES[m] for m in ("covering", "inventing")}, question=question)
    tid = start(db, env, criteria="factsim")
    work(env, db, tid)
    assert fake.replies == 3
    (judgement,) = db.tournament_judgements(tid)
    models = {s.id: s.model for s in db.list_submissions()}
    winner = judgement["a"] if judgement["outcome"] == "A" else judgement["b"]
    assert models[winner] == "covering"
    work(env, db, start(db, env, criteria="factsim"))
    assert fake.replies == 3  # the same pair again: its judgement is reused
    submit(db, {"partial": SUMMARIES["partial"]}, question=question)
    work(env, db, start(db, env, criteria="factsim"))
    assert fake.replies == 4  # the newcomer's summary only: the source's facts are in the book


def test_equal_factsims_tie(env: Settings, db: Store, fake: FakeAnthropic) -> None:
    require_factsim()
    submit(db, {"plain": SUMMARIES["partial"], "wordy": "In short:\n" + SUMMARIES["partial"]}, sources=[SOURCE])
    tid = start(db, env, criteria="factsim")
    work(env, db, tid)
    (judgement,) = db.tournament_judgements(tid)
    assert (judgement["outcome"], judgement["consistent"]) == ("TIE", True)


def test_a_reply_without_facts_is_reminded_then_kept(env: Settings, db: Store, fake: FakeAnthropic) -> None:
    require_factsim()
    right = fact_lines(lambda reply: f"Here are the facts:\n```json\n{reply}\n```")
    fake.decide = lambda system, users: right(system, users) if len(users) > 1 else "The text states several facts."
    submit(db, {m: SUMMARIES[m] for m in ("covering", "partial")}, sources=[SOURCE])
    tid = start(db, env, criteria="factsim")
    work(env, db, tid)
    (judgement,) = db.tournament_judgements(tid)
    assert fake.replies == 6 and all(c["reminded"] for c in judgement["calls"])
    assert sorted(c["score"] for c in judgement["calls"] if c["first"] is not None) == [pytest.approx(2 / 3), 1.0]


def test_unreadable_facts_twice_fail_the_match_and_keep_no_score(env: Settings, db: Store, fake: FakeAnthropic) -> None:
    require_factsim()
    fake.decide = lambda system, users: json.dumps({"facts": [["Marie Curie", "was born in"]]})
    submit(db, {m: SUMMARIES[m] for m in ("covering", "partial")}, sources=[SOURCE])
    tid = start(db, env, criteria="factsim")
    view = work(env, db, tid)
    assert (view.status, view.matches_failed) == ("failed", 1)
    error = last_error(db)
    assert error.startswith("VerdictParseError") and "fact 1 is not a (subject, relation, object) triple" in error
    assert scores(db) == [] and db.tournament_judgements(tid) == []


def test_sides_with_different_sources_fail_without_a_call(env: Settings, db: Store, fake: FakeAnthropic) -> None:
    submit(db, {"covering": SUMMARIES["covering"]}, sources=[SOURCE])
    submit(db, {"partial": SUMMARIES["partial"]})  # no sources: its question is its source
    view = work(env, db, start(db, env, criteria="factsim"))
    assert view.matches_failed == 1 and fake.requests == 0
    assert last_error(db).startswith("PermanentJudgeError") and "different sources" in last_error(db)


def test_sources_stating_nothing_fail_the_match(env: Settings, db: Store, fake: FakeAnthropic) -> None:
    require_factsim()
    submit(db, {m: SUMMARIES[m] for m in ("covering", "partial")}, sources=["No facts here, only prose."])
    view = work(env, db, start(db, env, criteria="factsim"))
    assert view.matches_failed == 1 and "no fact in the sources" in last_error(db)
    assert scores(db) == []


def test_the_offline_judge_cannot_extract_facts(env: Settings, db: Store, fake: FakeAnthropic) -> None:
    submit(db, {m: SUMMARIES[m] for m in ("covering", "partial")}, sources=[SOURCE])
    view = work(env, db, start(db, env, judge="offline/rubric", criteria="factsim"))
    assert view.matches_failed == 1 and fake.requests == 0
    error = last_error(db)
    assert error.startswith("PermanentJudgeError") and "needs an LLM to extract fact tuples" in error


def hide_package(root: Path, name: str) -> Path:
    """A directory which, first on PYTHONPATH, makes `import <name>` fail as if it were not
    installed (its modules and the project's code stay as they are)."""
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{name}'\", name={name!r})\n")
    return root


@pytest.mark.slow
def test_a_worker_without_the_encoder_fails_before_paying(
    env: Settings, db: Store, fake: FakeAnthropic, tmp_path: Path
) -> None:
    """A real `joust worker` process on which sentence-transformers cannot be imported: the
    match fails before any call, saying what to install."""
    submit(db, {m: SUMMARIES[m] for m in ("covering", "partial")}, sources=[SOURCE])
    tid = start(db, env, criteria="factsim")
    hidden = hide_package(tmp_path / "hidden", "sentence_transformers")
    worker = subprocess.Popen([sys.executable, "-m", "service.cli", "worker"], cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(hidden)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while db.get_tournament(tid).matches_pending and time.monotonic() < deadline:
            assert worker.poll() is None, "the worker exited"
            time.sleep(0.05)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    view = db.get_tournament(tid)
    assert (view.matches_failed, fake.requests) == (1, 0)
    error = last_error(db)
    assert error.startswith("PermanentJudgeError: criteria 'factsim' cannot embed facts on this worker: "), error
    assert "needs sentence-transformers" in error and "joust[factsim]" in error
    assert "No module named 'sentence_transformers'" in error
