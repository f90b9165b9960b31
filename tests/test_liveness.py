"""Container healthchecks of the worker and scheduler, against a real Redis."""
from __future__ import annotations

import os
import subprocess
import sys

from redis import Redis
from rq import Queue, SimpleWorker

from service.ops.liveness import beat_scheduler, scheduler_alive, worker_alive


def test_scheduler_beat(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    assert not scheduler_alive(redis)
    beat_scheduler(redis, 1.0, ttl_s=30)
    assert scheduler_alive(redis)


def test_worker_alive_while_registered(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    worker = SimpleWorker([Queue("joust", connection=redis)], connection=redis)
    assert not worker_alive(redis, "joust")
    worker.register_birth()
    assert worker_alive(redis, "joust")
    assert not worker_alive(redis, "another-queue")
    worker.register_death()
    assert not worker_alive(redis, "joust")


def test_healthcheck_command_exit_codes(redis_url: str) -> None:
    env = {**os.environ, "REDIS_URL": redis_url}
    cmd = [sys.executable, "-m", "service.cli", "healthcheck", "scheduler"]
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 1
    beat_scheduler(Redis.from_url(redis_url), 1.0, ttl_s=30)
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    dead = {**env, "REDIS_URL": "redis://127.0.0.1:1/0"}
    assert subprocess.run(cmd, env=dead, capture_output=True).returncode == 1
