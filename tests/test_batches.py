"""Batch delivery end to end below the API: the real anthropic SDK against the fake Message Batches
API on loopback, a real Redis and database (SQLite, then PostgreSQL), the real scheduler tick and
RQ burst workers, or the driver's job (`workers.batches.drive`) called directly.

Most tests give the fake's batches a long delay and end them explicitly (`fake.end_batches()`),
so that what each driver cycle sees is decided by the test, not by the clock."""
from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from leaderboard.consistency import match_seed, plan_orders
from leaderboard.pricing import DEFAULT_PRICES
from leaderboard.types import OrderPolicy, Winner
from service.config import Settings
from service.ops.scheduler import Scheduler
from service.store import Store
from service.store.queue import SERIALIZER, JobQueue
from service.store.tournament_rows import BatchCounts, RequestTally, Tournament
from tests.api_fixtures import API_KEY
from tests.fake_anthropic import FakeAnthropic, ResultType, prefer
from tests.worker_fixtures import MODELS, set_env, start, submit, work, work_until
from workers import batches, jobs
from workers.match import key_of

PRICED = "anthropic/claude-haiku-4-5"  # a judge with a list price, so costs can be compared


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    """The fake Messages API preferring MODELS, its batches ending only when a test says so."""
    with FakeAnthropic(prefer(MODELS), batch_delay_s=3600) as server:
        yield server


@pytest.fixture
def env(env: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The worker environment with a quick batch poll and two re-submissions at most."""
    set_env(monkeypatch, {"JOUST_BATCH_POLL": "0.1", "JOUST_JOB_RETRIES": "2"})
    return Settings.from_env()


def drive() -> batches.Cycle:
    cycle = batches.drive()
    assert cycle.ran
    return cycle


def drive_to_end(store: Store, fake: FakeAnthropic, tid: int, cycles: int = 12) -> Tournament:
    """Drive, ending every batch after each cycle, until the run has no active match."""
    for _ in range(cycles):
        drive()
        if store.get_tournament(tid).matches_pending == 0:
            return store.get_tournament(tid)
        fake.end_batches()
    raise AssertionError(f"tournament {tid} did not finish: {store.get_tournament(tid)}")


def paid(fake: FakeAnthropic) -> float:
    """What every reply the fake gave would cost at PRICED's list price."""
    price = DEFAULT_PRICES[PRICED]
    return sum(r.input_tokens * price.input_per_mtok + r.output_tokens * price.output_per_mtok
               for r in fake.received if r.status == 200) / 1e6


def judgements_by_key(store: Store, tid: int) -> dict[str, dict]:
    """The run's judgements under their keys, each with what a live run must equal."""
    found = {}
    for j in store.tournament_judgements(tid):
        key = key_of(store.match_context(j["match_id"])).key
        stored = store.find_judgement(key)
        assert stored is not None
        calls = sorted((c["first"], c["winner"], c["raw"], c["input_tokens"], c["output_tokens"])
                       for c in stored.calls)
        found[key] = {"outcome": stored.outcome, "consistent": stored.consistent, "calls": calls,
                      "cost": stored.cost_usd}
    return found


def test_a_batch_round_robin_judges_as_live_does_at_half_the_price(
        db: Store, env: Settings, fake: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.configure({"batch_delay_s": 0.2})
    submit(db)
    tid = start(db, env, judge=PRICED, delivery="batch")
    scheduler = Scheduler(db, JobQueue(Redis.from_url(env.redis_url), env.queue_name, 60), env)

    def finished() -> bool:
        scheduler.tick(time.time())
        return db.get_tournament(tid).matches_pending == 0

    work_until(env, finished, failure=lambda: f"the batch run did not finish: {db.get_tournament(tid)}")
    view = db.get_tournament(tid)
    assert (view.status, view.matches_done, view.matches_failed) == ("done", 6, 0)
    assert fake.requests == 0  # no live call
    first = fake.batches()[0]
    assert len(first.custom_ids) == 12  # both orders of all six pairs in the first batch
    assert set(fake.batch_submissions().values()) == {1}
    in_batches = judgements_by_key(db, tid)
    assert len(in_batches) == 6

    # the same pairs judged live, in a database of their own (the keys would answer them else)
    set_env(monkeypatch, {"DATABASE_URL": f"sqlite:///{tmp_path / 'live.db'}"})
    live_env = Settings.from_env()
    live_db = Store(live_env.resolved_database_url)
    try:
        submit(live_db)
        live_tid = start(live_db, live_env, judge=PRICED)
        assert work(live_env, live_db, live_tid).matches_done == 6
        live = judgements_by_key(live_db, live_tid)
    finally:
        live_db.close()
    assert fake.replies == 12
    assert {k: {**v, "cost": None} for k, v in in_batches.items()} == {k: {**v, "cost": None} for k, v in live.items()}
    price = DEFAULT_PRICES[PRICED]
    for key, judged in live.items():  # each judgement costs its calls' tokens at the list price; half in a batch
        listed = sum(i * price.input_per_mtok + o * price.output_per_mtok for *_, i, o in judged["calls"]) / 1e6
        assert judged["cost"] == pytest.approx(listed) and in_batches[key]["cost"] == pytest.approx(listed / 2)
    live_replies = [r for r in fake.received if r.batch_id is None and r.status == 200]
    assert sum(j["cost"] for j in live.values()) == pytest.approx(
        sum(r.input_tokens * price.input_per_mtok + r.output_tokens * price.output_per_mtok for r in live_replies) / 1e6)
    assert view.spent_usd == pytest.approx(sum(j["cost"] for j in live.values()) / 2)
    assert {j["outcome"] for j in in_batches.values()} <= {Winner.A.value, Winner.B.value}


def test_single_order_replays_ask_the_one_order_live_would(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db)
    tid = start(db, env, delivery="batch", order="single")
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_done) == ("done", 6)
    assert len(fake.batches()) == 1 and len(fake.batch_submissions()) == 6  # every replay asked the same
    for j in db.tournament_judgements(tid):
        key = key_of(db.match_context(j["match_id"])).key
        [(first, _)] = plan_orders(j["a"], j["b"], OrderPolicy.SINGLE, random.Random(match_seed(key)))
        assert [c["first"] for c in j["calls"]] == [first]  # the order seeded by the match, as live


def test_a_restart_in_the_middle_submits_nothing_twice(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db)
    tid = start(db, env, delivery="batch")
    first = drive()
    assert (first.submitted, len(first.created)) == (12, 1)
    view = db.get_tournament(tid)
    assert view.status == "running" and view.requests == RequestTally(pending=0, submitted=12, done=0, failed=0)
    [batch] = view.batches
    assert (batch.id, batch.status, batch.requests) == (first.created[0], "in_progress", 12)
    assert batch.request_counts.processing == 12 and batch.ended_at is None

    jobs.shutdown()  # every process restarts: a new engine, store and driver
    again = drive()
    assert (again.submitted, again.created, again.ended) == (0, (), ())
    fake.end_batches()
    jobs.shutdown()
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_done) == ("done", 6)
    assert len(fake.batch_submissions()) == 12 and set(fake.batch_submissions().values()) == {1}
    [batch] = view.batches
    assert (batch.status, batch.request_counts.succeeded) == ("ended", 12) and batch.ended_at
    assert view.requests == RequestTally(pending=0, submitted=0, done=12, failed=0)


def test_one_driver_at_a_time(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    start(db, env, delivery="batch")
    redis = Redis.from_url(env.redis_url)
    held = redis.lock(batches.LOCK_KEY.format(queue=env.queue_name), timeout=30)
    assert held.acquire(blocking=False)
    try:
        assert batches.drive().ran is False  # another machine's driver holds the lock
        assert fake.batches() == []
    finally:
        held.release()
    assert drive().submitted == 6


def test_twins_in_two_runs_share_their_requests(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    one, two = start(db, env, delivery="batch"), start(db, env, delivery="batch")
    drive_to_end(db, fake, one)
    assert db.get_tournament(two).matches_pending == 0
    assert len(fake.batch_submissions()) == 6 and set(fake.batch_submissions().values()) == {1}
    assert [db.get_tournament(t).matches_done for t in (one, two)] == [3, 3]
    assert len(db.side_rows()) == 3  # each judgement counted once


def test_transient_errors_and_expired_requests_go_again_in_a_later_batch(
        db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    tid = start(db, env, delivery="batch")
    drive()
    ids = fake.batches()[0].custom_ids
    fake.configure({"batch_errors": {ids[0]: "errored", ids[1]: "expired", ids[2]: "overloaded"}})
    fake.end_batches()
    second = drive()
    assert sorted(fake.batches()[1].custom_ids) == sorted(ids[:3]) and second.submitted == 3
    assert db.get_tournament(tid).requests.submitted == 3
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_done, view.matches_failed) == ("done", 3, 0)
    assert fake.batch_submissions() == {cid: 2 if cid in ids[:3] else 1 for cid in ids}
    assert [b.request_counts for b in view.batches][0] == BatchCounts(
        processing=0, succeeded=3, errored=2, canceled=0, expired=1)


def test_a_request_that_keeps_failing_is_given_up_and_fails_its_match(
        db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    tid = start(db, env, delivery="batch")
    drive()
    doomed = fake.batches()[0].custom_ids[0]
    fake.configure({"batch_errors": {doomed: ["errored", "overloaded", "expired"]}})
    view = drive_to_end(db, fake, tid)
    assert fake.batch_submissions()[doomed] == 3  # JOUST_JOB_RETRIES=2: two re-submissions
    assert (view.status, view.matches_done, view.matches_failed) == ("done", 2, 1)
    [error] = failed_errors(db, tid)
    assert error.startswith("gave up after 3 attempts: expired")
    assert view.requests.failed == 1 and len(db.tournament_judgements(tid)) == 2
    # a retry asks for it again (the provider has recovered), and reuses the other order's reply
    assert len(db.retry_failed(tid)) == 1
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_done, view.matches_failed) == ("done", 3, 0)
    assert fake.batch_submissions()[doomed] == 4
    assert sum(fake.batch_submissions().values()) == 6 + 3


def test_an_invalid_request_fails_its_match_with_the_reason_and_is_never_a_tie(
        db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    tid = start(db, env, delivery="batch")
    drive()
    invalid = fake.batches()[0].custom_ids[0]
    fake.configure({"batch_errors": {invalid: "invalid"}})
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_done, view.matches_failed) == ("done", 2, 1)
    [error] = failed_errors(db, tid)
    assert error.startswith("PermanentJudgeError") and "invalid_request_error" in error
    assert fake.batch_submissions()[invalid] == 1  # never sent again: it would be refused again
    assert len(db.tournament_judgements(tid)) == 2 and len(db.side_rows()) == 2


def test_a_reminder_goes_in_a_later_batch_than_its_first_ask(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    tid = start(db, env, delivery="batch", models=["good", "mid"])
    fake.queue_replies("Both have merits; I cannot decide.")  # the first reply holds no verdict
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_done) == ("done", 1)
    first, second = fake.batches()
    assert len(first.custom_ids) == 2 and len(second.custom_ids) == 1
    assert second.custom_ids[0] not in first.custom_ids
    [judgement] = db.tournament_judgements(tid)
    assert judgement["consistent"] and judgement["outcome"] == "A"  # good (a) beats mid
    assert sorted(c["reminded"] for c in judgement["calls"]) == [False, True]


def test_a_reply_unreadable_after_the_reminder_fails_the_match(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    from tests.fake_anthropic import malformed

    fake.decide = malformed("I like both of them.")
    submit(db, questions=1)
    tid = start(db, env, judge=PRICED, delivery="batch", models=["good", "mid"])
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_failed, view.matches_done) == ("failed", 1, 0)
    assert [len(b.custom_ids) for b in fake.batches()] == [2, 2]  # both asks, then both reminders
    [error] = failed_errors(db, tid)
    assert error.startswith("VerdictParseError") and "even after the reminder" in error
    assert db.tournament_judgements(tid) == [] and db.side_rows() == []
    # the four replies were paid, at the batch price, and the failed match is charged for them
    assert len(fake.received) == 4 and view.spent_usd == pytest.approx(paid(fake) / 2)


def test_a_budget_stops_a_batch_run_before_it_submits_what_it_cannot_pay_for(
        db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db)  # two questions: two matches between good and mid, two requests each
    price = DEFAULT_PRICES[PRICED]
    most_out = env.judge_max_tokens * price.output_per_mtok / 1e6 * 0.5  # a reply's largest cost, batch price
    budget = 3.2 * most_out  # three requests' replies fit, with room for their prompts; four do not
    tid = start(db, env, judge=PRICED, delivery="batch", models=["good", "mid"], budget=budget)
    drive()
    view = db.get_tournament(tid)
    assert (view.status, view.stopped_reason, view.matches_cancelled) == ("cancelled", "budget", 2)
    assert fake.batches() == [] and fake.batch_submissions() == {}  # the run's matches were stopped first
    assert view.spent_usd == 0.0
    spent = float(Redis.from_url(env.redis_url).get(f"joust:spend:{tid}") or 0.0)
    assert spent == pytest.approx(0.0, abs=1e-12)  # every reservation released


def test_a_budget_that_fits_is_kept_and_settled_with_the_real_cost(
        db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    tid = start(db, env, judge=PRICED, delivery="batch", budget=1.0)
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_done) == ("done", 3)
    spent = float(Redis.from_url(env.redis_url).get(f"joust:spend:{tid}") or 0.0)
    assert 0 < view.spent_usd == pytest.approx(spent)  # the reservations became the real cost


class DriverDied(Exception):
    """A driver process killed at a chosen line."""


def test_a_batch_created_by_a_driver_that_died_before_storing_its_id_is_adopted(
        db: Store, env: Settings, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    submit(db, questions=1)
    tid = start(db, env, delivery="batch")
    stored = Store.batch_created

    def die(*args: object, **kwargs: object) -> bool:
        raise DriverDied("killed after the create call, before its id was stored")

    monkeypatch.setattr(Store, "batch_created", die)
    with pytest.raises(DriverDied):
        batches.drive()
    monkeypatch.setattr(Store, "batch_created", stored)
    [made] = fake.batches()
    assert db.get_tournament(tid).batches[0].id is None  # our "creating" row, without its id
    jobs.shutdown()

    again = drive()
    assert (again.adopted, again.submitted) == ((made.id,), 0)
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_done) == ("done", 3)
    assert len(fake.batches()) == 1 and set(fake.batch_submissions().values()) == {1}
    assert [b.id for b in view.batches] == [made.id]


def test_a_create_call_that_never_reached_the_provider_is_given_back_after_the_grace_period(
        db: Store, env: Settings, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    from anthropic.resources.messages.batches import AsyncBatches

    submit(db, questions=1)
    tid = start(db, env, delivery="batch")
    create = AsyncBatches.create

    async def die(*args: object, **kwargs: object) -> object:
        raise DriverDied("killed before the create call went out")

    monkeypatch.setattr(AsyncBatches, "create", die)
    with pytest.raises(DriverDied):
        batches.drive()
    monkeypatch.setattr(AsyncBatches, "create", create)
    jobs.shutdown()
    waited = drive()  # within the grace period the batch may still show up: nothing is sent
    assert (waited.submitted, fake.batches()) == (0, [])
    monkeypatch.setattr(batches, "CREATING_GRACE_S", 0.0)
    resent = drive()
    assert resent.submitted == 6 and resent.adopted == ()
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_done) == ("done", 3)
    assert set(fake.batch_submissions().values()) == {1}
    assert [b.status for b in view.batches] == ["abandoned", "ended"]


def test_cancelling_a_batch_run_cancels_its_batch(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    tid = start(db, env, delivery="batch")
    drive()
    db.cancel_tournament(tid)
    drive()  # nobody waits on the batch's requests any more
    [batch] = fake.batches()
    assert batch.processing_status in ("canceling", "ended")
    fake.end_batches()
    drive()
    assert set(fake.batches()[0].results.values()) == {ResultType.CANCELED}
    assert db.get_tournament(tid).requests.submitted == 0
    assert not db.batch_work_left()


def test_compqa_scores_each_submission_once_through_batches(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    from tests.fake_policies import rubric_scores

    fake.decide = rubric_scores({"good": 17, "mid": 12, "bad": 5})
    submit(db, questions=1)
    tid = start(db, env, judge=PRICED, delivery="batch", criteria="compqa")
    view = drive_to_end(db, fake, tid)
    assert (view.status, view.matches_done) == ("done", 3)
    assert [len(b.custom_ids) for b in fake.batches()] == [3]  # one score per submission, shared
    models = {s.id: s.model for s in db.list_submissions()}
    for j in db.tournament_judgements(tid):
        better = min((j["a"], j["b"]), key=lambda i: MODELS.index(models[i]))
        assert j["outcome"] == ("A" if better == j["a"] else "B")
    assert view.spent_usd == pytest.approx(paid(fake) / 2)  # each score counted once, at the batch price


# ---- the service's side: defaults, no jobs per match, the driver's schedule ------------------


def failed_errors(store: Store, tid: int) -> list[str]:
    from sqlalchemy import text

    with store.engine.connect() as conn:
        return [row[0] for row in conn.execute(
            text("select last_error from matches where tournament_id = :t and status = 'failed'"), {"t": tid})]


def test_the_scheduler_enqueues_the_driver_once_per_poll_while_there_is_batch_work(
        db: Store, env: Settings, fake: FakeAnthropic) -> None:
    redis = Redis.from_url(env.redis_url)
    settings = env.with_(batch_poll_s=30.0)
    queue = JobQueue(redis, env.queue_name, 60)
    scheduler = Scheduler(db, queue, settings)
    assert scheduler.tick(time.time()).driver is None  # no batch work
    submit(db, questions=1)
    tid = start(db, env, delivery="batch")
    jobs = Queue(env.queue_name, connection=redis, serializer=SERIALIZER)
    assert [job.func_name for job in jobs.get_jobs()] == []  # no job per match
    assert scheduler.tick(time.time()).driver is not None
    assert scheduler.tick(time.time()).driver is None  # not again within batch_poll_s
    start(db, env, delivery="batch", models=["good", "mid"])  # a new run wakes it
    assert scheduler.tick(time.time()).driver is not None
    assert [job.func_name for job in jobs.get_jobs()] == ["workers.batches.drive_job"] * 2
    assert db.get_tournament(tid).matches_pending == 3  # pending, for the driver


def test_scheduled_anthropic_tournaments_default_to_batch_and_live_opts_out(client: TestClient, queue: Queue) -> None:
    auth = {"Authorization": f"Bearer {API_KEY}"}
    subs = [{"question": "Q?", "question_id": "q1", "model": m, "output": f"{m} answers"} for m in MODELS]
    assert client.post("/api/submissions", json=subs, headers=auth).status_code == 201

    def create(**body: object) -> dict:
        response = client.post("/api/tournaments", json={"name": "t", **body}, headers=auth)
        assert response.status_code == 202, response.text
        return client.get(f"/api/tournaments/{response.json()['id']}").json()

    nightly = create(judge=PRICED, schedule="0 3 * * *")
    assert (nightly["delivery"], nightly["spec"]["delivery"], nightly["matches_pending"]) == ("batch", "batch", 3)
    assert queue.count == 0  # its matches wait for the batch driver, not on the queue
    assert nightly["batches"] == [] and nightly["requests"] == {"pending": 0, "submitted": 0, "done": 0, "failed": 0}
    assert create(judge=PRICED, schedule="0 3 * * *", delivery="live")["delivery"] == "live"
    assert queue.count == 3
    assert create(judge=PRICED)["delivery"] == "live"  # a run started now is urgent
    assert create(judge=PRICED, delivery="batch")["delivery"] == "batch"
    assert queue.count == 6
    refused = client.post("/api/tournaments", json={"judge": "offline/rubric", "delivery": "batch"}, headers=auth)
    assert refused.status_code == 422 and "batch delivery needs an anthropic/ judge" in refused.json()["error"]
