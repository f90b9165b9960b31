"""Liveness of the worker and scheduler processes, for container healthchecks.

Workers already beat in Redis through RQ; the scheduler writes a beat of its own after every
tick. `joust healthcheck worker|scheduler` answers for the processes on this host. A worker's
RQ registration also carries which judges it can reach (`service.credentials`), which the API
reads when it holds no key of its own.

A process that is alive but cannot work for want of space (Redis refusing writes, the SQLite
database's disk full: `service.store.shortage`) fails the healthcheck too, saying which and where.
"""
from __future__ import annotations

import socket

from redis import Redis
from rq import Queue, Worker

from leaderboard.reach import Reach
from service.config import REACH_FIELD
from service.store import Shortage, database_shortage, redis_shortage

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


def out_of_space(redis: Redis, database_url: str) -> list[Shortage]:
    """The parts that cannot write for want of space, as `/api/health` names them."""
    return [short for short in (database_shortage(database_url), redis_shortage(redis)) if short is not None]
