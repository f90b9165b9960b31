"""The scheduler against a real Redis and a real SQLite file: due runs start once, lost
matches are handed out again."""
from __future__ import annotations

from pathlib import Path

from redis import Redis
from rq import Queue

from leaderboard.spec import RunSpec
from service.config import Settings
from service.ops.cron import next_due
from service.ops.scheduler import Scheduler
from service.store import NewSubmission, Store
from service.store.queue import JobQueue
from service.usecases.tournaments import launch

SPEC = RunSpec(judge="anthropic/x")


def seed(store: Store, models: list[str], question: str = "q1") -> None:
    store.add_submissions(
        [NewSubmission(question_id=question, question="Q?", model=m, scenario="default", output=f"out {m}") for m in models]
    )


def scheduler(store: Store, redis_url: str, tmp_path: Path) -> Scheduler:
    settings = Settings(data_dir=tmp_path, redis_url=redis_url, match_timeout_s=300)
    return Scheduler(store, JobQueue(Redis.from_url(redis_url), settings.queue_name, 60), settings)


def test_a_due_run_starts_once_with_two_schedulers(store: Store, redis_url: str, tmp_path: Path) -> None:
    seed(store, ["m1", "m2", "m3"])
    now = 1_700_000_000.0
    first_due = next_due("0 3 * * *", now)
    one, two = scheduler(store, redis_url, tmp_path), scheduler(Store(store.url), redis_url, tmp_path)
    parent = launch(store, one.queue, "nightly", SPEC, schedule="0 3 * * *", next_run_at=first_due)
    assert one.tick(now).started == []  # not due yet
    later = first_due + 60
    started = one.tick(later).started + two.tick(later).started
    assert len(started) == 1
    run = store.get_tournament(started[0])
    assert run.parent_id == parent.id and run.matches_total == 3
    assert store.get_tournament(parent.id).next_run_at == next_due("0 3 * * *", later)
    assert store.get_tournament(parent.id).runs == tuple(started)
    # a scheduler that was down for three days starts one run, not three
    assert len(one.tick(later + 3 * 86400).started) == 1
    two.store.close()


def test_lost_jobs_are_handed_out_again(store: Store, redis_url: str, tmp_path: Path) -> None:
    seed(store, ["m1", "m2"])
    sch = scheduler(store, redis_url, tmp_path)
    run = launch(store, sch.queue, "t", SPEC)
    queue = Queue(sch.settings.queue_name, connection=Redis.from_url(redis_url))
    assert queue.count == 1
    now = store.get_tournament(run.id).created_at
    assert sch.sweep(now + 10_000) == []  # its job is still waiting: nothing to do
    Redis.from_url(redis_url).flushall()  # Redis restarted without its files
    assert sch.sweep(now + 10) == []  # not yet past the timeout
    assert len(sch.sweep(now + 10_000)) == 1
    assert queue.count == 1


def test_matches_created_while_redis_was_down_are_not_lost(store: Store, redis_url: str, tmp_path: Path) -> None:
    seed(store, ["m1", "m2", "m3"])
    sch = scheduler(store, redis_url, tmp_path)
    dead = JobQueue(Redis.from_url("redis://127.0.0.1:1/0"), sch.settings.queue_name, 60)
    run = launch(store, dead, "t", SPEC)
    assert not run.queued and run.matches_total == 3
    created = store.get_tournament(run.id).created_at
    assert len(sch.sweep(created + 60)) == 3
    assert Queue(sch.settings.queue_name, connection=Redis.from_url(redis_url)).count == 3


def test_jobs_a_killed_worker_or_a_dead_rq_scheduler_left_behind_count_as_lost(
    store: Store, redis_url: str, tmp_path: Path
) -> None:
    """RQ cleans these up only after many minutes: a job left "started" past its timeout, a job
    left in the queue's intermediate list, a scheduled job long overdue. The sweep hands their
    matches out again once they are older than the match timeout; fresh ones are left alone."""
    from datetime import datetime, timedelta, timezone

    from rq.job import JobStatus

    seed(store, ["m1", "m2", "m3"])
    sch = scheduler(store, redis_url, tmp_path)
    redis = Redis.from_url(redis_url)
    run = launch(store, sch.queue, "t", SPEC)
    now = store.get_tournament(run.id).created_at + 10_000  # every match past the timeout
    queue = sch.queue.queue
    started, stuck, overdue = queue.get_jobs()
    # a worker took `started` and was killed while handing it over, an hour ago
    queue.remove(started)
    started.set_status(JobStatus.STARTED)
    started.started_at = datetime.now(timezone.utc) - timedelta(hours=1)
    started.save()
    # a worker moved `stuck` to the intermediate list and died before starting it
    queue.remove(stuck)
    redis.rpush(queue.intermediate_queue_key, stuck.id)
    # `overdue` waits for RQ's scheduler, which died: due five minutes ago
    queue.remove(overdue)
    queue.scheduled_job_registry.schedule(overdue, datetime.now(timezone.utc) - timedelta(minutes=5))
    overdue.set_status(JobStatus.SCHEDULED)
    assert all(not sch.queue.is_waiting(job.id) for job in (started, stuck, overdue))
    assert len(sch.sweep(now)) == 3
    assert queue.count == 3  # handed out again, each once
    fresh = queue.get_jobs()[0]
    fresh.set_status(JobStatus.STARTED)
    fresh.started_at = datetime.now(timezone.utc)
    fresh.save()
    assert sch.queue.is_waiting(fresh.id)  # a job being handed over right now is alive
