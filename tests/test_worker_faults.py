"""The many-in-flight worker through the faults of its own design: a provider failing a fifth of
its calls (429, 529, 500, timeouts, malformed replies), a worker SIGKILLed with many matches in
flight, and a shared rate limit that every worker keeps. Real RQ worker processes, Redis and
databases, the real anthropic SDK against the fake Messages API."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from service.config import Settings
from service.store import Store
from tests import worker_fixtures
from tests.fake_anthropic import FakeAnthropic, Received, prefer
from tests.worker_fixtures import start, work

MODELS = ["m1", "m2", "m3", "m4", "m5"]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prefer(MODELS)) as server:
        yield server


def submit_field(store: Store, questions: int) -> int:
    return worker_fixtures.submit_field(store, MODELS, questions)


def prompt_of(record: Received) -> tuple[str, str]:
    """What identifies one call: the same prompt sent again is the same call retried (a
    reminder re-ask has more turns, so it is another call)."""
    return record.system, repr(record.messages)


def planted_winner_holds(store: Store, tid: int) -> None:
    """Every judgement is the planted preference, consistent: no tie the judge did not give."""
    models = {s.id: s.model for s in store.list_submissions(limit=1000)}
    for j in store.tournament_judgements(tid):
        better = j["a"] if MODELS.index(models[j["a"]]) < MODELS.index(models[j["b"]]) else j["b"]
        assert (j["outcome"], j["consistent"]) == ("A" if better == j["a"] else "B", True), j


@pytest.mark.parametrize("env_vars", [{"JOUST_JUDGE_TIMEOUT": "1", "JOUST_RETRY_BACKOFF": "0.2",
                                       "JOUST_JOB_RETRIES": "4", "JOUST_JUDGE_CONCURRENCY": "16"}])
def test_a_fifth_of_calls_failing_ends_every_match_judged_or_failed_with_its_reason(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    """A 429/529 pauses every call for its retry-after, so the run goes in waves one retry-after
    apart: half a second here (a second made the run twice as long, and tested nothing more).
    A "timeout" fault answers after its client gave up (1.5 s > JOUST_JUDGE_TIMEOUT)."""
    fake.configure({"latency_s": 0.05, "fault_rate": 0.2, "fault_seed": 11, "fault_retry_after": 0.5,
                    "fault_timeout_s": 1.5})
    matches = submit_field(db, questions=4)
    tid = start(db, env)
    view = work(env, db, tid, timeout_s=240)
    # The fake logs a request once it has answered it: a "timeout" answers after its client gave
    # up (its match may be done since), so wait for the fake's last answers before counting.
    wait_for(lambda: fake.stats()["in_flight"] == 0, 30, "the fake to answer its last requests")
    assert view.matches_done + view.matches_failed == matches and view.matches_pending == 0
    faults = {kind: sum(r.fault == kind for r in fake.received) for kind in ("429", "529", "500", "timeout", "malformed")}
    assert all(n > 0 for n in faults.values()), faults  # every kind was met
    assert view.matches_done >= matches * 0.9
    planted_winner_holds(db, tid)
    assert len(db.tournament_judgements(tid)) == view.matches_done
    with db.engine.connect() as conn:
        errors = conn.execute(text("select last_error from matches where status = 'failed'")).scalars().all()
    assert all(e for e in errors)  # a failed match says why
    # A call is sent again only after the provider's retry-after (429/529), or after a backoff.
    by_prompt: dict[tuple[str, str], list[Received]] = defaultdict(list)
    for r in sorted(fake.received, key=lambda r: r.at):
        by_prompt[prompt_of(r)].append(r)
    waits = {"rate": [], "other": []}
    for calls in by_prompt.values():
        for failed, again in zip(calls, calls[1:]):
            if failed.status in (429, 529):
                waits["rate"].append(again.at - failed.answered_at)
            elif failed.status == 500:
                waits["other"].append(again.at - failed.answered_at)
    assert waits["rate"] and min(waits["rate"]) >= 0.45  # retry-after 0.5 s, shared by every call
    assert waits["other"] and min(waits["other"]) >= 0.45  # half of the first 1 s backoff, at least


# How late the fake may stamp a request that a worker sent just before it was killed.
ARRIVAL_LAG_S = 0.25

# JOUST_RETRY_BACKOFF: a match sent back on the queue after a provider error waits about this
# (at least the provider's retry-after), not the production 5-10 s of its first retry.
WORKER_ENV = {"JOUST_LEASE_TTL": "3", "JOUST_MATCH_TIMEOUT": "600", "JOUST_JUDGE_CONCURRENCY": "8",
              "JOUST_RETRY_BACKOFF": "1"}


def start_workers(n: int, extra: dict[str, str]) -> list[subprocess.Popen]:
    return [
        subprocess.Popen([sys.executable, "-m", "service.cli", "worker", "--name", f"w{i}"],
                         env={**os.environ, **extra}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for i in range(n)
    ]


def stop_workers(workers: list[subprocess.Popen]) -> None:
    for w in workers:
        if w.poll() is None:
            w.terminate()
    for w in workers:
        try:
            w.wait(timeout=30)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()


def wait_for(check, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_a_worker_killed_with_many_matches_in_flight_loses_nothing_and_pays_nothing_twice(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    """No scheduler runs and the sweep's timeout is ten minutes: only the survivor's reaper,
    reading the dead worker's lapsed leases, can hand its matches out again in time."""
    fake.latency_s = 0.5  # longer than a heartbeat and the poll below: the kill finds calls in flight
    matches = submit_field(db, questions=4)  # 40 matches, 80 calls
    tid = start(db, env)
    workers = start_workers(2, WORKER_ENV)
    try:
        wait_for(lambda: fake.stats()["in_flight"] >= 12, 60, "both workers to have calls in flight")
        workers[0].send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        workers[0].wait()
        wait_for(lambda: db.get_tournament(tid).matches_pending == 0, 120, "the tournament to finish")
    finally:
        stop_workers(workers)
    view = db.get_tournament(tid)
    assert (view.matches_done, view.matches_failed) == (matches, 0)
    judgements = db.tournament_judgements(tid)
    assert len({j["judgement_id"] for j in judgements}) == matches  # one judgement each
    planted_winner_holds(db, tid)
    answered: dict[tuple[str, str], list[Received]] = defaultdict(list)
    for r in fake.received:
        if r.status == 200:
            answered[prompt_of(r)].append(r)
    twice = {p: sorted(calls, key=lambda r: r.at) for p, calls in answered.items() if len(calls) > 1}
    # Paid twice only for a call of a match the dead worker had not stored: the first copy sent
    # by it before it died, the second by the survivor after its lease lapsed (3 s). The fake
    # stamps a request when its thread reads it, which can be a few milliseconds after the
    # worker sent it, so a request sent in the instant before the kill may read as after it.
    shown = {f"pair {n}": [(round(c.at - killed_at, 3), round(c.answered_at - killed_at, 3)) for c in calls]
             for n, calls in enumerate(twice.values())}
    assert all(len(calls) == 2 and calls[0].at < killed_at + ARRIVAL_LAG_S < calls[1].at for calls in twice.values()), (
        f"calls paid twice (arrival, reply: seconds after the kill): {shown}")
    # At most both orders of the matches it had in flight: each of its calls in flight (8, its
    # concurrency) and the other order of that match, whose reply may have come already (it is
    # lost with the worker too; the match is judged again whole).
    assert len(twice) <= 2 * 8, shown
    assert len(answered) == 2 * matches


@pytest.mark.slow
@pytest.mark.parametrize("limited", [False, True])
def test_every_worker_keeps_one_shared_rate_limit(
    db: Store, env: Settings, fake: FakeAnthropic, limited: bool
) -> None:
    """Two worker processes against a provider allowing 300 requests a minute: with
    JOUST_JUDGE_RPM at the provider's limit no call is refused; without it calls are refused
    and the shared cooldown still brings every match home."""
    fake.configure({"rpm": 300, "burst_s": 1.0, "latency_s": 0.2})
    matches = submit_field(db, questions=2)  # 20 matches, 40 calls: about 8 s at the limit
    tid = start(db, env)
    extra = {**WORKER_ENV, "JOUST_JUDGE_RPM": "300" if limited else "0"}
    workers = start_workers(2, extra)
    try:
        wait_for(lambda: db.get_tournament(tid).matches_pending == 0, 120, "the tournament to finish")
    finally:
        stop_workers(workers)
    assert db.get_tournament(tid).matches_done == matches
    refused = sum(r.status == 429 for r in fake.received)
    if limited:
        # Calls leave at their reserved times; a process stalled for a second (a loaded machine)
        # sends its overdue calls together, which the provider's one-second bucket mostly absorbs.
        assert refused <= 2
        # Paced evenly: no 6 s window holds more than the limit's 30 calls, joust's half-second
        # burst and a few arrivals bunched by the loopback's jitter.
        times = sorted(r.at for r in fake.received)
        busiest = max(sum(1 for u in times if t <= u < t + 6.0) for t in times)
        assert busiest <= 300 / 60 * 6.0 + 0.5 * 5 + 1 + 3
    else:
        assert refused >= 10
    planted_winner_holds(db, tid)


@pytest.mark.slow
def test_a_provider_slower_than_the_claims_ttl_never_lets_a_twin_pay(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    """Two tournaments over the same pairs, two workers, replies twice as slow as a claim's ttl:
    the heartbeat keeps each claim while its calls are in flight, so every pair is paid once and
    its twin resolves from the stored judgement. The reply takes longer than a twin's wait
    (TWIN_WAIT_S, 2 s, and the scheduler's second): without the heartbeat the twin would find
    the claim lapsed before the reply came and pay again. A ttl of 1.5 s (not the least, 1 s)
    so that only a worker stalled that long on a loaded machine lets a claim lapse."""
    fake.latency_s = 3.0
    matches = submit_field(db, questions=1)
    first, second = start(db, env), start(db, env)
    workers = start_workers(2, {**WORKER_ENV, "JOUST_LEASE_TTL": "1.5"})
    try:
        wait_for(lambda: all(db.get_tournament(t).matches_pending == 0 for t in (first, second)), 120,
                 "both tournaments to finish")
    finally:
        stop_workers(workers)
    assert [db.get_tournament(t).matches_done for t in (first, second)] == [matches, matches]
    assert fake.replies == fake.requests == 2 * matches  # each pair paid once, across both
