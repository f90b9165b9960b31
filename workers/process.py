"""`joust worker`: one RQ worker (`workers.worker.JoustWorker`, a `SimpleWorker` that runs only
joust's job functions) feeding the process's engine (`workers.engine`).

`SimpleWorker` runs jobs in this process, where the engine keeps many matches in flight and the
judges' HTTP clients live across jobs. RQ's scheduler runs beside it (`with_scheduler`), moving
delayed retries onto the queue when due. On SIGTERM RQ finishes handing over the current job and
returns; the engine then waits for its matches in flight (`drain_timeout_s`) and gives back the
rest, so they are handed out again at once.

A Redis restart is ridden out, not crashed on: every connection of the process (RQ's, the
engine's) reconnects and sends again for about 30 s (`workers.engine.REDIS_RETRIES`). RQ itself
retries only a failed dequeue (its backoff grows to 60 s); an error while it hands a job over,
or in its scheduler process, would end the worker or that process.
"""
from __future__ import annotations

import logging
import os

from service.config import Settings

from . import logcontext, runtime
from .engine import connect
from .worker import JoustWorker, job_queue


def run_worker(settings: Settings, *, name: str | None = None, log_level: str = "info") -> int:
    """Work the queue until told to stop. A restarted worker takes a name of its own (its pid
    appended), so it never waits for its dead predecessor's registration to expire."""
    assert settings.redis_url, "a worker needs REDIS_URL"
    # One INFO line per HTTP request from the SDK's client would drown the worker's own log.
    for noisy in ("httpx", "httpx2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logcontext.install()  # match and tournament ids on every line (JOUST_LOG_FORMAT=json writes them)
    redis = connect(settings.redis_url)  # RQ's loop, its jobs and its scheduler ride out a Redis restart
    worker = JoustWorker(
        [job_queue(redis, settings.queue_name)],
        connection=redis,
        name=f"{name}.{os.getpid()}" if name else None,
        reach=settings.reach(),  # which judges this worker can call, for the API (never a key)
    )
    try:
        worker.work(with_scheduler=True, logging_level=log_level.upper())
    finally:
        runtime.shutdown()
        redis.close()
    return 0
