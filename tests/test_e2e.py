"""End to end through the CLI and HTTP: `joust up` as a user runs it (embedded Redis, real SQLite
file, worker and scheduler processes), with the fake Messages API as the only stand-in.

When a schedule fires is tested at passed-in times (tests/test_schedule_fires.py), not here by
waiting for the wall clock's next minute: the scheduler process of `joust up` is still exercised
here, driving a batch run (the last test)."""
from __future__ import annotations

import os
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.ops.redis_server import pid_alive
from tests.fake_anthropic import FakeAnthropic, always, prefer
from tests.joust_up import Joust, start_joust, stop_joust

MODELS = ["good", "mid", "bad"]
SCENARIOS = ["plus", "base"]
# The fake prefers systems in this order: the model dominates, the scenario breaks ties.
SYSTEMS = [f"{m}/{s}" for m in MODELS for s in SCENARIOS]
pytestmark = pytest.mark.slow  # `joust up` and its processes


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prefer(SYSTEMS)) as server:
        yield server


@pytest.fixture
def joust(tmp_path: Path, fake: FakeAnthropic) -> Iterator[Joust]:
    running = start_joust(tmp_path / "data", fake)
    yield running
    stop_joust(running)


def submissions() -> list[dict]:
    return [
        {"question": f"Question {q}: explain topic {q}.", "model": m, "scenario": s,
         "output": f"[{m}/{s}] An answer to question {q}.", "metadata": {"q": q}}
        for q in range(3) for m in MODELS for s in SCENARIOS
    ]


def test_joust_up_runs_the_whole_pipeline(joust: Joust, fake: FakeAnthropic) -> None:
    assert joust.key and joust.key not in "".join(joust.lines)  # printed: where it is kept, not the key
    assert (joust.data_dir / "joust.db").exists() and (joust.data_dir / "redis").is_dir()
    assert joust.call("POST", "/api/submissions", submissions(), auth=False)[0] == 401

    status, body = joust.call("POST", "/api/submissions", submissions())
    assert status == 201 and len(body["submissions"]) == 18
    assert all(s["created"] for s in body["submissions"])
    status, again = joust.call("POST", "/api/submissions", submissions())
    assert status == 201 and again["submissions"] == [{**s, "created": False} for s in body["submissions"]]

    # a recurring tournament: judged now, then at each due time (tests/test_schedule_fires.py)
    status, nightly = joust.call("POST", "/api/tournaments", {"name": "nightly", "judge": "anthropic/judge-1",
                                                              "schedule": "* * * * *", "delivery": "live"})
    assert status == 202 and nightly["matches_total"] == 3 * 15
    status, created = joust.call("POST", "/api/tournaments", {"name": "first", "mode": "round_robin",
                                                              "judge": "anthropic/judge-1", "order": "both"})
    assert status == 202 and created["matches_total"] == 3 * 15  # C(6, 2) pairs per question
    view = joust.wait_done(created["id"])
    assert (view["matches_done"], view["matches_failed"]) == (45, 0)
    joust.wait_done(nightly["id"])
    assert fake.replies == 2 * 45  # both orders, each pair paid for once across the two

    _, listing = joust.call("GET", f"/api/tournaments/{created['id']}/judgements")
    assert len(listing["judgements"]) == 45
    assert all(j["consistent"] and len(j["calls"]) == 2 for j in listing["judgements"])

    for by, expected in (("model", MODELS), ("scenario", SCENARIOS), ("model+scenario", None)):
        _, board = joust.call("GET", f"/api/leaderboard?by={urllib.request.quote(by)}")
        players = [row["player"] for row in board["rows"]]
        if expected is None:
            expected = [f"{m} + {s}" for m in MODELS for s in SCENARIOS]
        assert players == expected, (by, board)
        for row in board["rows"]:  # an interval holds its rating; a group its verdicts do not bound has none
            if row["bounded"]:
                assert row["ci_low"] <= row["rating"] <= row["ci_high"], row
            else:
                assert (row["ci_low"], row["ci_high"]) == (None, None), row
                assert row["rank_low"] <= row["rank"] <= row["rank_high"], row

    # a re-run pays for nothing: every pair is already judged by this judge
    before = fake.requests
    _, rerun = joust.call("POST", "/api/tournaments", {"name": "again", "judge": "anthropic/judge-1"})
    assert joust.wait_done(rerun["id"])["matches_done"] == 45
    assert fake.requests == before

    # a judge that always answers "A" only produces position-bias ties
    fake.decide = always("A")
    one_question = _question_of(joust, listing["judgements"][0]["a"])
    _, biased = joust.call("POST", "/api/tournaments", {"name": "biased", "judge": "anthropic/always-a",
                                                        "questions": [one_question]})
    joust.wait_done(biased["id"])
    _, tied = joust.call("GET", f"/api/tournaments/{biased['id']}/judgements")
    assert len(tied["judgements"]) == 15
    assert all(j["outcome"] == "TIE" and j["consistent"] is False for j in tied["judgements"])
    _, board = joust.call("GET", "/api/leaderboard?by=model&judge=anthropic/always-a")
    # each model's 2 submissions meet the other models' 4: 8 ties each
    assert {row["ties"] for row in board["rows"]} == {8} and all(row["wins"] == 0 for row in board["rows"])

    status, page = joust.call("GET", "/?by=system")
    assert status == 200 and "good + plus" in page

    # Ctrl-C / SIGTERM stops everything, Redis included
    assert joust.roles() == ["api", "redis-server", "scheduler", "worker", "worker"]
    children = joust.children()
    joust.proc.send_signal(signal.SIGTERM)
    assert joust.proc.wait(timeout=60) == 0
    deadline = time.monotonic() + 10
    while any(pid_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in children if pid_alive(pid)]


def _question_of(joust: Joust, submission_id: int) -> str:
    _, listing = joust.call("GET", "/api/submissions?limit=1000")
    return next(s["question_id"] for s in listing["submissions"] if s["id"] == submission_id)


# How soon a dead worker's leases and claims lapse (production: 15 s). Its matches are judged
# again only once they have: this is how long the test below waits on the dead. 5 s still gives
# a live worker three heartbeats (ttl / 3) before its own would lapse.
SHORT_LEASE_TTL = "5"


def test_a_killed_worker_loses_no_judgement(tmp_path: Path, fake: FakeAnthropic) -> None:
    """Both workers SIGKILLed mid-run; `joust up` restarts them and their matches come back. About
    15 s alone, over 20 s beside the rest of the suite: a `joust up` of its own (a short lease),
    two worker restarts (imports), and the dead workers' leases lapsing (5 s) before reuse."""
    joust = start_joust(tmp_path / "data", fake, JOUST_LEASE_TTL=SHORT_LEASE_TTL)
    try:
        _kill_the_workers_mid_run(joust, fake)
    finally:
        stop_joust(joust)


def _kill_the_workers_mid_run(joust: Joust, fake: FakeAnthropic) -> None:
    fake.latency_s = 0.5
    subs = [s for s in submissions() if s["question"].startswith("Question 0")]
    assert joust.call("POST", "/api/submissions", subs)[0] == 201
    _, created = joust.call("POST", "/api/tournaments", {"name": "t", "judge": "anthropic/judge-1"})
    deadline = time.monotonic() + 30
    while fake.requests == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    victims = joust.worker_pids()
    assert victims
    for pid in victims:  # both workers die mid-job; joust up restarts them
        os.kill(pid, signal.SIGKILL)
    view = joust.wait_done(created["id"], timeout_s=120)
    assert (view["matches_done"], view["matches_failed"]) == (15, 0)
    _, listing = joust.call("GET", f"/api/tournaments/{created['id']}/judgements")
    ids = [j["judgement_id"] for j in listing["judgements"]]
    assert len(ids) == 15 and len(set(ids)) == 15
    _, board = joust.call("GET", "/api/leaderboard?by=model")
    assert sum(row["matches"] for row in board["rows"]) == 2 * 12  # 12 cross-model pairs, counted once each


def test_a_scheduled_run_goes_through_message_batches_at_half_price(joust: Joust, fake: FakeAnthropic) -> None:
    """The default for a scheduled tournament of an anthropic/ judge: its calls go through the
    Message Batches API, driven by the scheduler and the workers of `joust up`."""
    subs = [s for s in submissions() if s["question"].startswith("Question 1")]
    assert joust.call("POST", "/api/submissions", subs)[0] == 201
    status, created = joust.call("POST", "/api/tournaments", {"name": "nightly", "judge": "anthropic/judge-2",
                                                              "schedule": "0 3 * * *"})
    assert status == 202 and created["matches_total"] == 15
    view = joust.wait_done(created["id"])
    assert (view["delivery"], view["status"], view["matches_done"]) == ("batch", "done", 15)
    assert fake.requests == 0 and fake.stats()["batch_replies"] == 30  # both orders, none live
    assert view["batches"] and all(b["status"] == "ended" for b in view["batches"])
    _, listing = joust.call("GET", f"/api/tournaments/{created['id']}/judgements")
    assert all(j["consistent"] and len(j["calls"]) == 2 for j in listing["judgements"])
