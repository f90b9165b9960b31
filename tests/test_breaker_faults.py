"""Provider errors that are not rate limits, through the real worker engine: a dead provider stops
its run within a bounded number of calls (the judge's circuit breaker), a provider that comes
back is probed and judged again, and overloads without retry-after pause every worker only when
they come in a row. Real RQ, Redis and databases, the real anthropic SDK against the fake
Messages API; the breaker's, the backoffs' and the pauses' timers are shortened through settings.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from redis import Redis
from redis.asyncio import Redis as AsyncRedis
from sqlalchemy import text

from service.config import Settings
from service.ops.metrics import parse_call_stats
from service.store import Store
from tests import worker_fixtures
from tests.fake_anthropic import Failure, FakeAnthropic, prefer
from tests.worker_fixtures import start, work, work_until
from workers.ratelimit import Limits, SharedRateLimit

MODELS = ["m1", "m2", "m3", "m4", "m5"]
JUDGE = "anthropic/fake-judge"
FAILURES, PROBES, CONCURRENCY = 4, 2, 4
FAST = {"JOUST_CALL_BACKOFF": "0.02", "JOUST_RETRY_BACKOFF": "0.05", "JOUST_OVERLOAD_PAUSE": "0.05"}


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prefer(MODELS), latency_s=0.02) as server:
        yield server


def submit_field(store: Store, questions: int) -> int:
    return worker_fixtures.submit_field(store, MODELS, questions)


def call_stats(env: Settings) -> dict[str, float]:
    """The workers' counts of the judge's calls (as /metrics reads them)."""
    with Redis.from_url(env.redis_url) as redis:
        return parse_call_stats(redis.hgetall(env.call_stats_key)).get(JUDGE, {})


def cooldown_until(env: Settings) -> float | None:
    """Until when the judge's shared rate limit pauses every worker (None: it never did lately)."""

    async def look() -> float | None:
        client = AsyncRedis.from_url(env.redis_url)
        try:
            return (await SharedRateLimit(client).state(JUDGE, Limits())).cooldown_until
        finally:
            await client.aclose()

    return asyncio.run(look())


def planted_winner_holds(store: Store, tid: int) -> None:
    models = {s.id: s.model for s in store.list_submissions(limit=1000)}
    for j in store.tournament_judgements(tid):
        better = j["a"] if MODELS.index(models[j["a"]]) < MODELS.index(models[j["b"]]) else j["b"]
        assert (j["outcome"], j["consistent"]) == ("A" if better == j["a"] else "B", True), j


@pytest.mark.parametrize("env_vars", [{
    **FAST, "JOUST_BREAKER_FAILURES": str(FAILURES), "JOUST_BREAKER_PROBES": str(PROBES),
    "JOUST_BREAKER_OPEN": "0.5", "JOUST_JUDGE_CONCURRENCY": str(CONCURRENCY), "JOUST_STOP_AFTER_FAILURES": "5",
}])
def test_a_provider_that_fails_everything_stops_the_run_within_a_bounded_number_of_calls(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    """Every call answers 500. Before the breaker each match sent its calls 3 times per attempt
    over 4 attempts, and the run stopped only after 5 matches in a row had used all of them
    (759 requests here; 8,224 in the issue's run). Now: FAILURES failed calls open the breaker,
    the calls already in flight (CONCURRENCY - 1 at most, one worker process) fail too, PROBES
    probes fail, and every later call fails unsent, so the run stops after
    FAILURES + CONCURRENCY - 1 + PROBES requests at most. The breaker stays open 0.5 s, then 1 s,
    then 2 s while the run's matches fail unsent (a slow machine that needed longer would see
    one more probe, so this bound is the one the README states)."""
    fake.configure({"fault_rate": 1.0, "fault_kinds": ["500"]})
    matches = submit_field(db, questions=4)
    tid = start(db, env)
    work_until(env, lambda: db.get_tournament(tid).status not in ("queued", "running"))
    view = db.get_tournament(tid)
    assert (view.status, view.stopped_reason) == ("failed", "failing")
    assert fake.requests <= FAILURES + CONCURRENCY - 1 + PROBES, fake.requests
    assert view.matches_failed >= 5 and view.matches_failed + view.matches_cancelled == matches
    report = db.tournament_failures(tid)  # the reason, as the tournament page shows it
    top = report.groups[0].error
    assert "JudgeDown" in top and "is down" in top and "HTTP 500" in top, top
    stats = call_stats(env)
    assert stats.get("circuit_opens") == 1 + PROBES  # opened once, reopened by each failed probe
    assert stats.get("calls:error") == fake.requests


@pytest.mark.parametrize("env_vars", [{
    **FAST, "JOUST_BREAKER_FAILURES": "3", "JOUST_BREAKER_OPEN": "0.2", "JOUST_JUDGE_CONCURRENCY": "1",
}])
def test_a_provider_that_comes_back_is_probed_once_and_judged_again(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    """Five 500s, then answers, one call at a time (order "single": one call per match): three
    open the breaker; after 0.2 s one probe fails (open 0.4 s more), the next fails too (0.8 s
    more), the one after is answered and every call goes again. Nothing is lost, every judgement
    is the judge's own, and no call was sent but the five failed and one per match."""
    fake.fail(*[500] * 5)
    matches = submit_field(db, questions=1)
    tid = start(db, env, order="single")
    view = work(env, db, tid)
    assert (view.matches_done, view.matches_failed) == (matches, 0)
    assert fake.requests == matches + 5
    planted_winner_holds(db, tid)
    assert call_stats(env).get("circuit_opens") == 3  # opened, then reopened by each failed probe
    with Redis.from_url(env.redis_url) as redis:
        assert not redis.exists(f"joust:circuit:{JUDGE}")  # closed, with no failure left to count


@pytest.mark.parametrize("env_vars", [{**FAST, "JOUST_JUDGE_CONCURRENCY": "1", "JOUST_OVERLOAD_PAUSE_AFTER": "3"}])
def test_a_lone_overload_pauses_nobody_and_overloads_in_a_row_pause_everyone(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    """529s without retry-after, one call at a time (order "single": one call per match). A lone
    one used to pause every worker for 5 s; now its call alone waits its backoff and is sent
    again. Five in a row (the call's three sends, then the match's next attempt) pause every
    worker from the third on, for 0.05 s, 0.1 s, 0.2 s: three pauses for five overloads."""
    submit_field(db, questions=1)
    tid = start(db, env, models=["m1", "m2"], order="single")
    fake.fail(Failure(529))
    view = work(env, db, tid)
    assert (view.matches_done, fake.requests) == (1, 2)
    assert call_stats(env).get("pauses", 0) == 0 and call_stats(env).get("retries") == 1
    assert cooldown_until(env) is None  # the shared rate limit was never paused
    tid = start(db, env, models=["m1", "m3"], order="single")
    fake.fail(*[Failure(529)] * 5)
    view = work(env, db, tid)
    assert (view.matches_done, fake.requests) == (1, 2 + 6)
    assert call_stats(env).get("pauses") == 3
    assert cooldown_until(env) is not None
    with db.engine.connect() as conn:  # the match was tried again once: the call's three sends ran out
        assert conn.execute(text("select attempts from matches where tournament_id = :t"), {"t": tid}).scalar() == 2


@pytest.mark.parametrize("env_vars", [{**FAST, "JOUST_JUDGE_CONCURRENCY": "8"}])
def test_a_fifth_of_calls_overloaded_pauses_everyone_rarely(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    """A fifth of the calls answer 529 without retry-after (seeded), eight calls in flight: every
    one of them used to pause every worker for 5 s (the issue's run took 7.7 times as long as a
    clean one). Now a 529 pauses everyone only as the third failure in a row, which random
    overloads seldom make; the rest are sent again after their own backoff. Counted here (the
    pauses against the 529s); bench/overload.py measures the run's time against a clean run."""
    fake.configure({"fault_rate": 0.2, "fault_kinds": ["529"], "fault_retry_after": None, "fault_seed": 5})
    matches = submit_field(db, questions=4)
    tid = start(db, env)
    view = work(env, db, tid)
    assert (view.matches_done, view.matches_failed) == (matches, 0)
    planted_winner_holds(db, tid)
    overloads = sum(r.status == 529 for r in fake.received)
    assert overloads >= 10
    stats = call_stats(env)
    assert stats.get("pauses", 0) <= overloads // 4, (stats, overloads)
    assert stats.get("circuit_opens", 0) == 0
