"""Liveness of the worker and scheduler processes, for container healthchecks.

Workers already beat in Redis through RQ; the scheduler writes a beat of its own after every
tick. `joust healthcheck worker|scheduler` answers for the processes on this host. A worker's
RQ registration also carries which judges it can reach (`service.credentials`), which the API
reads when it holds no key of its own (`live_workers`, what a tournament's check asks).

A process that is alive but cannot work for want of space (Redis refusing writes, the SQLite
database's disk full: `service.store.shortage`) fails the healthcheck too, saying which and where.
"""
from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from functools import cache

from redis import Redis
from redis.exceptions import RedisError
from rq import Queue, Worker

from leaderboard.reach import Reach
from service.config import REACH_FIELD, Settings
from service.store import Shortage, database_shortage, redis_shortage
from service.store.queue import JobQueue

log = logging.getLogger(__name__)

SCHEDULER_BEAT = "joust:scheduler:beat:{host}"


def beat_scheduler(redis: Redis, now: float, ttl_s: float) -> None:
    """Record that this host's scheduler ticked; the beat expires on its own."""
    redis.set(SCHEDULER_BEAT.format(host=socket.gethostname()), now, ex=max(1, int(ttl_s)))


def scheduler_alive(redis: Redis) -> bool:
    """True when this host's scheduler beat recently."""
    return bool(redis.exists(SCHEDULER_BEAT.format(host=socket.gethostname())))


def worker_alive(redis: Redis, queue_name: str) -> bool:
    """True when an RQ worker of this host listens on the queue (RQ drops dead ones' keys)."""
    host = socket.gethostname()
    return any(w.hostname == host and queue_name in w.queue_names() for w in Worker.all(connection=redis))


def worker_reaches(redis: Redis, queue_name: str) -> list[Reach]:
    """What each live RQ worker on the queue says it can reach (`service.credentials`); a worker
    that says nothing (another version, or not `joust worker`) is left out."""
    keys = sorted(Worker.all_keys(connection=redis, queue=Queue(queue_name, connection=redis)))
    with redis.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.hget(key, REACH_FIELD)
        said = pipe.execute()
    return [reach for raw in said if raw is not None and (reach := Reach.from_json(raw)) is not None]


def live_workers(queue: JobQueue, settings: Settings) -> Callable[[], list[Reach] | None]:
    """What the live workers on the queue can reach, read from Redis once when first asked. With
    Redis down nothing can be asked: the judge is accepted (a tournament is stored meanwhile and
    handed out once Redis is back), and a worker without the key fails its matches saying so."""

    @cache
    def read() -> list[Reach] | None:
        try:
            return worker_reaches(queue.redis, settings.queue_name)
        except RedisError as exc:
            log.warning("cannot ask the workers which judges they reach (Redis: %s); accepting the judge", exc)
            return None

    return read


def out_of_space(redis: Redis, database_url: str) -> list[Shortage]:
    """The parts that cannot write for want of space, as `/api/health` names them."""
    return [short for short in (database_shortage(database_url), redis_shortage(redis)) if short is not None]
