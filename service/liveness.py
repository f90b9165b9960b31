"""Liveness of the worker and scheduler processes, for container healthchecks.

Workers already beat in Redis through RQ; the scheduler writes a beat of its own after every
tick. `joust healthcheck worker|scheduler` answers for the processes on this host.
"""
from __future__ import annotations

import socket

from redis import Redis
from rq import Worker

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
