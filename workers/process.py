"""`joust worker`: one RQ worker (`workers.worker.JoustWorker`, a `SimpleWorker` that runs only
joust's job functions) feeding the process's engine (`workers.engine`).

`SimpleWorker` runs jobs in this process, where the engine keeps many matches in flight and the
judges' HTTP clients live across jobs. RQ's scheduler runs beside it (`with_scheduler`), moving
delayed retries onto the queue when due. On SIGTERM RQ finishes handing over the current job and
returns; the engine then waits for its matches in flight (`drain_timeout_s`) and gives back the
rest, so they are handed out again at once.
"""
from __future__ import annotations

import os

from redis import Redis

from service.config import Settings

from . import runtime
from .worker import JoustWorker, job_queue


def run_worker(settings: Settings, *, name: str | None = None, log_level: str = "info") -> int:
    """Work the queue until told to stop. A restarted worker takes a name of its own (its pid
    appended), so it never waits for its dead predecessor's registration to expire."""
    assert settings.redis_url, "a worker needs REDIS_URL"
    redis = Redis.from_url(settings.redis_url)
    worker = JoustWorker(
        [job_queue(redis, settings.queue_name)],
        connection=redis,
        name=f"{name}.{os.getpid()}" if name else None,
    )
    try:
        worker.work(with_scheduler=True, logging_level=log_level.upper())
    finally:
        runtime.shutdown()
        redis.close()
    return 0
