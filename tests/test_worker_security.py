"""Nobody runs code through the queue: jobs travel as JSON and a worker performs only joust's
own job functions. An outside process writes to joust's queue as RQ lets anyone do (its default
pickle serializer, and JSON naming another function); a real worker takes the jobs, refuses them
and keeps judging."""
from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest
from redis import Redis
from rq import Queue
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer

from service.config import Settings
from service.store import Store
from service.store.queue import JOB_FUNCTIONS, job_queue
from tests.fake_anthropic import FakeAnthropic
from tests.worker_fixtures import start, submit, work


class RunsOnLoad:
    """A pickle that makes a directory while it is being loaded: what RQ's default serializer
    would do to any worker reading it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (os.mkdir, (str(self.path),))


def test_jobs_that_are_not_joust_s_are_refused_and_never_run(
    db: Store, env: Settings, fake: FakeAnthropic, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    redis = Redis.from_url(env.redis_url)
    outsider_pickle = Queue(env.queue_name, connection=redis)  # RQ's default: pickle
    outsider_json = Queue(env.queue_name, connection=redis, serializer=JSONSerializer)
    by_pickle = outsider_pickle.enqueue("builtins.print", RunsOnLoad(tmp_path / "pickle-ran"))
    by_name = outsider_json.enqueue("os.mkdir", str(tmp_path / "json-ran"))
    posing = outsider_pickle.enqueue("workers.jobs.judge_match", RunsOnLoad(tmp_path / "posing-ran"))
    submit(db, questions=1)
    tid = start(db, env)  # joust's own jobs, on the same queue, after the outsiders'
    view = work(env, db, tid)
    assert view.matches_done == 3  # the worker refused the outsiders and went on judging
    assert not any((tmp_path / name).exists() for name in ("pickle-ran", "json-ran", "posing-ran"))
    failed = FailedJobRegistry(env.queue_name, connection=redis, serializer=JSONSerializer)
    assert {by_pickle.id, by_name.id, posing.id} <= set(failed.get_job_ids())
    refusals = [r.getMessage() for r in caplog.records if "refused job" in r.getMessage()]
    assert any(by_name.id in m and "'os.mkdir'" in m for m in refusals)
    assert any(by_pickle.id in m and "cannot be read as JSON" in m for m in refusals)
    assert any(posing.id in m for m in refusals)


def test_joust_s_own_jobs_are_json_and_named(db: Store, env: Settings) -> None:
    submit(db, questions=1)
    start(db, env)
    jobs = job_queue(Redis.from_url(env.redis_url), env.queue_name).get_jobs()
    assert jobs and {job.func_name for job in jobs} <= JOB_FUNCTIONS
    raw = Redis.from_url(env.redis_url).hget(f"rq:job:{jobs[0].id}", "data")
    assert zlib.decompress(raw).startswith(b'["workers.jobs.judge_match"')  # JSON: nothing runs when read
