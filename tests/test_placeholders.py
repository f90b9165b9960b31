"""Submissions made by `joust import battles` hold a placeholder, not an output: no live
tournament pairs them (round robin, sampled, adaptive, anchored), so no judge is paid to compare
two placeholders, and a dry run says how many it left out. Real RQ burst workers, real Redis,
SQLite then PostgreSQL, the fake Messages API."""
from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from leaderboard.spec import RunSpec
from leaderboard.types import PLACEHOLDER_OUTPUT, Pair
from service.config import Settings
from service.store import NewSubmission, Store
from service.usecases.importers.battles import load_battles
from service.usecases.tournaments import plan
from service.web.app import create_app
from tests.fake_anthropic import FakeAnthropic
from tests.worker_fixtures import MODELS, start, submit, work  # db, env, fake: fixtures of tests/conftest.py

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
JUDGE = "anthropic/fake-judge"
# Battles without outputs on their own questions: placeholders qb/good, qb/bad, qb/new, qb2/mid, qb2/new.
BATTLES = "model_a,model_b,winner,question_id\ngood,bad,model_a,qb\nnew,good,tie,qb\nmid,new,model_b,qb2\n"


def field_with_battles(db: Store, tmp_path: Path) -> set[int]:
    """Real answers of good, mid, bad (and new) to q0 and q1, and the battle file's placeholders;
    the placeholders' ids."""
    submit(db)
    db.add_submissions([NewSubmission(f"q{q}", f"Question {q}?", "new", "default", f"[new] answer to {q}")
                        for q in range(2)])
    path = tmp_path / "battles.csv"
    path.write_text(BATTLES)
    load_battles(db, path)
    placeholders = {s.id for s in db.list_submissions(limit=1000) if s.output == PLACEHOLDER_OUTPUT}
    assert len(placeholders) == 5
    return placeholders


def touches(pairs: list[Pair], ids: set[int]) -> list[Pair]:
    return [p for p in pairs if p.a in ids or p.b in ids]


def test_no_live_tournament_pairs_a_placeholder(db: Store, env: Settings, fake: FakeAnthropic,
                                                tmp_path: Path) -> None:
    placeholders = field_with_battles(db, tmp_path)
    with TestClient(create_app(env.with_(api_key=KEY))) as client:
        response = client.post("/api/tournaments?dry_run=true", headers=AUTH,
                               json={"judge": JUDGE, "models": MODELS})
        assert response.status_code == 200, response.text
        got = response.json()
    # q0 and q1: 3 pairs each; qb's good-bad pair of placeholders is left out, and said so
    assert (got["matches"], got["calls"], got["placeholders_skipped"]) == (6, 12, 3)

    tid = start(db, env, judge=JUDGE, models=MODELS)
    view = work(env, db, tid)
    assert (view.matches_total, view.matches_done) == (6, 6)
    assert fake.requests == 12
    assert not any(PLACEHOLDER_OUTPUT in str(call.messages) for call in fake.received)

    spec = RunSpec(judge=JUDGE)
    for mode in (spec.with_(mode="sampled", opponents=3, seed=7), spec.with_(mode="adaptive", round_size=100),
                 spec.with_(mode="anchored", anchors=("good", "mid", "bad"))):
        pairs = plan(db, mode)
        assert pairs and not touches(pairs, placeholders), mode.mode
    assert plan(db, spec.with_(questions=("qb", "qb2"))) == []
