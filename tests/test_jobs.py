"""The judging job end to end below the API: real RQ worker, real Redis, real SQLite file, the
real anthropic SDK talking to the fake Messages API on loopback."""
from __future__ import annotations

import time

import pytest

from leaderboard.types import MatchOutcome
from service.config import Settings
from service.store import Store
from tests import worker_fixtures
from tests.fake_anthropic import Failure, FakeAnthropic, always, malformed
from tests.worker_fixtures import MODELS, set_env, start, submit, work
from workers import jobs

db = worker_fixtures.db  # tests.test_rounds imports `db` and `env` from here


@pytest.fixture
def env(env: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The worker environment, with quick retries."""
    set_env(monkeypatch, {"JOUST_RETRY_BACKOFF": "0.05", "JOUST_JOB_RETRIES": "2"})
    return Settings.from_env()


def test_both_orders_are_judged_and_the_planted_order_wins(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db)
    tid = start(db, env)
    view = work(env, db, tid)
    assert (view.status, view.matches_done, view.matches_total) == ("done", 6, 6)
    assert fake.replies == 12
    models = {s.id: s.model for s in db.list_submissions()}
    judgements = db.tournament_judgements(tid)
    for j in judgements:
        assert j["consistent"] is True
        assert {c["first"] for c in j["calls"]} == {j["a"], j["b"]}  # each order shown once
        better = j["a"] if MODELS.index(models[j["a"]]) < MODELS.index(models[j["b"]]) else j["b"]
        assert j["outcome"] == ("A" if better == j["a"] else "B")
    # each call records the tokens the fake counted for it
    assert sorted((c["input_tokens"], c["output_tokens"]) for j in judgements for c in j["calls"]) == sorted(
        (r.input_tokens, r.output_tokens) for r in fake.received)


def test_a_judge_that_always_answers_a_gives_only_inconsistent_ties(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    fake.decide = always("A")
    submit(db, questions=1)
    tid = start(db, env)
    work(env, db, tid)
    judgements = db.tournament_judgements(tid)
    assert len(judgements) == 3
    assert all(j["outcome"] == "TIE" and j["consistent"] is False for j in judgements)


def test_single_order_makes_one_call(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    work(env, db, start(db, env, order="single"))
    assert fake.replies == 3


def test_a_rerun_judges_nothing_new(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db)
    work(env, db, start(db, env))
    paid = fake.requests
    second = start(db, env)
    view = work(env, db, second)
    assert fake.requests == paid
    assert view.matches_done == 6
    assert len(db.side_rows()) == 6  # counted once although two tournaments hold each pair
    # a different judge is a different key: it is judged again
    work(env, db, start(db, env, judge="anthropic/another-judge"))
    assert fake.requests == paid * 2


def test_an_unparseable_reply_fails_the_match_and_is_never_a_tie(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    fake.decide = malformed("I like both of them.")
    submit(db, questions=1)
    tid = start(db, env)
    view = work(env, db, tid)
    assert (view.status, view.matches_failed, view.matches_done) == ("failed", 3, 0)
    assert db.tournament_judgements(tid) == []
    assert db.side_rows() == []


def test_rate_limits_are_retried_after_retry_after(
    db: Store, env: Settings, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 429 with retry-after (every worker pauses that long), and a lone 529 without (only its
    call waits its own backoff, half to all of JOUST_CALL_BACKOFF: 1 s in production, shortened
    here; the engine runs in this process)."""
    monkeypatch.setenv("JOUST_CALL_BACKOFF", "0.3")
    retry_after = 0.2
    submit(db, questions=1)
    fake.fail(Failure(429, retry_after=retry_after), Failure(529))
    tid = start(db, env)
    view = work(env, db, tid)
    assert (view.matches_done, view.matches_failed) == (3, 0)
    assert fake.requests == 6 + 2
    # each refused call was sent again, and only after its pause
    received = sorted(fake.received, key=lambda r: r.at)
    for failed in (r for r in received if r.status != 200):
        again = [r for r in received if (r.system, r.messages) == (failed.system, failed.messages) and r.at > failed.at]
        pause = retry_after if failed.status == 429 else 0.3 / 2
        assert again and again[0].at - failed.answered_at >= 0.9 * pause, (failed.status, again)


def test_a_provider_that_keeps_failing_fails_the_match_with_its_reason(
    db: Store, env: Settings, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each attempt sends its call three times; the waits between sends (1-2 s and 2-4 s in
    production) are shortened here: the engine runs in this process. The judge's circuit breaker
    is off: this is the story of a match's own attempts (tests/test_breaker_faults.py tells the
    breaker's)."""
    monkeypatch.setenv("JOUST_CALL_BACKOFF", "0.05")
    monkeypatch.setenv("JOUST_BREAKER_FAILURES", "0")
    submit(db, questions=1)
    fake.fail(*[500] * 100)
    tid = start(db, env, models=["good", "mid"])
    view = work(env, db, tid)
    assert (view.status, view.matches_failed) == ("failed", 1)
    from sqlalchemy import text

    with db.engine.connect() as conn:
        error, attempts = conn.execute(text("select last_error, attempts from matches")).one()
    assert "gave up after 3 attempts" in error and "TransientJudgeError" in error
    assert attempts == 3


def test_a_job_that_runs_twice_stores_one_judgement(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    tid = start(db, env, models=["good", "mid"])
    (match_id,) = [m for m in range(1, 10) if _exists(db, m)]
    engine = jobs.engine()
    assert engine.judge_now(match_id) is MatchOutcome.JUDGED
    assert engine.judge_now(match_id) is MatchOutcome.SKIPPED  # a twin job from a re-hand-out
    work(env, db, tid)  # the queued job finds the match done
    assert fake.replies == 2
    assert len(db.tournament_judgements(tid)) == 1


def _exists(store: Store, match_id: int) -> bool:
    try:
        store.match_context(match_id)
        return True
    except Exception:
        return False


@pytest.mark.slow
def test_twin_matches_in_two_tournaments_pay_once(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    """Two tournaments over the same pairs, judged at the same time by two worker processes:
    the content is claimed by one, the other waits for its judgement."""
    import os
    import subprocess
    import sys

    submit(db, questions=1)
    fake.latency_s = 0.3
    first, second = start(db, env), start(db, env)
    workers = [
        subprocess.Popen([sys.executable, "-m", "service.cli", "worker"], env=dict(os.environ),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(2)
    ]
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if all(db.get_tournament(t).matches_pending == 0 for t in (first, second)):
                break
            time.sleep(0.05)
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            w.wait(timeout=30)
    assert all(db.get_tournament(t).matches_done == 3 for t in (first, second))
    assert fake.replies == 3 * 2  # three pairs, both orders, paid once across the two tournaments


def test_a_job_for_a_match_still_in_flight_here_is_taken_up_when_its_task_ends(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    """A retry's job can reach this process before the task that queued it has ended (the
    queue is written before the store): it is taken up then, never dropped. Dropping it once
    left a match of 40 pending until the scheduler's sweep (tests/test_worker_faults.py in CI)."""
    fake.latency_s = 0.3
    submit(db, questions=1)
    start(db, env, models=["good", "mid"])
    (match_id,) = [m for m in range(1, 10) if _exists(db, m)]
    engine = jobs.engine()
    assert engine.admit(match_id) == "admitted"
    assert engine.admit(match_id) == "deferred"  # its task is still asking the judge
    deadline = time.monotonic() + 20
    while (engine.outcomes[MatchOutcome.SKIPPED] == 0 or engine.in_flight()) and time.monotonic() < deadline:
        time.sleep(0.02)
    # the first job judged it; the second was taken up after and found it finished
    assert engine.outcomes[MatchOutcome.JUDGED] == 1
    assert engine.outcomes[MatchOutcome.SKIPPED] == 1
    assert engine.in_flight() == 0
    assert fake.replies == 2
