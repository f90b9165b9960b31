"""`joust worker`: one RQ worker (`workers.rq_worker.JoustWorker`, a `SimpleWorker` that runs only
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

A Redis that refuses writes for want of disk or memory (MISCONF, OOM) ends RQ's loop too; the
process then waits until Redis takes a write and runs a new loop (`workers.redis_full`), rather
than exit and be restarted into the same refusal.
"""
from __future__ import annotations

import itertools
import logging
import os
import signal
import threading

from redis import Redis
from redis.exceptions import RedisError

from service.config import Settings
from service.store import redis_full_reason
from service.store.queue import job_queue

from . import jobs, logcontext
from .connections import connect
from .redis_full import refusal, wait_until_writable
from .rq_worker import JoustWorker
from .stopping import STOPPING


def run_worker(settings: Settings, *, name: str | None = None, log_level: str = "info") -> int:
    """Work the queue until told to stop. A restarted worker takes a name of its own (its pid
    appended), so it never waits for its dead predecessor's registration to expire."""
    assert settings.redis_url, "a worker needs REDIS_URL"
    # One INFO line per HTTP request from the SDK's client would drown the worker's own log.
    for noisy in ("httpx", "httpx2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logcontext.install()  # match and tournament ids on every line (JOUST_LOG_FORMAT=json writes them)
    redis = connect(settings.redis_url)  # RQ's loop, its jobs and its scheduler ride out a Redis restart
    try:
        for run in itertools.count():
            named = f"{name}.{os.getpid()}" if name else None
            worker = JoustWorker(
                [job_queue(redis, settings.queue_name)],
                connection=redis,
                # a worker that ended on a full Redis could not deregister: its successor in this process needs a name of its own
                name=f"{named}.{run}" if named and run else named,
                reach=settings.reach(),  # which judges this worker can call, for the API (never a key)
            )
            if not work_until_stopped_or_full(worker, redis, log_level):
                break
    finally:
        jobs.shutdown()
        redis.close()
    return 0


def work_until_stopped_or_full(worker: JoustWorker, redis: Redis, log_level: str) -> bool:
    """Run RQ's loop; True when it ended because Redis refused writes for want of space and takes
    them again now (the caller runs a new loop), False when it ended otherwise or the worker was
    told to stop while it waited (`workers.redis_full`)."""
    try:
        worker.work(with_scheduler=True, logging_level=log_level.upper())
    except RedisError as exc:
        reason = redis_full_reason(exc)
        if reason is None or STOPPING.since is not None:
            raise
    else:
        if STOPPING.since is not None:
            return False
        try:
            reason = refusal(redis)  # RQ ends its loop on any error, after logging it
        except RedisError:
            return False
        if reason is None:
            return False
    stop = threading.Event()

    def on_signal(_signum: int, _frame: object) -> None:
        STOPPING.mark()
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    if not wait_until_writable(redis, reason, stop):
        return False
    if worker.scheduler is not None:  # its process died of the refusal, holding the queue's lock
        try:
            worker.scheduler.release_locks()
        except RedisError:
            pass
    return True
