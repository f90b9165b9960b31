"""A worker process's Redis connections, each riding out a Redis outage: the blocking client of
RQ and the engine's queue calls, and the engine's two asyncio pools (the calls in flight; the
leases and claims).

Kept apart from `workers.engine`, which runs the matches: how a connection is opened, pooled and
retried is the same for every user of it (`workers.worker_process` opens RQ's with `connect`) and
changes with redis-py, not with the engine.
"""
from __future__ import annotations

from redis import Redis
from redis.asyncio import BlockingConnectionPool
from redis.asyncio import Redis as AsyncRedis

from .stopping import redis_retry

REDIS_CONNECTIONS = 48
# Every Redis call of a worker process rides out an outage of about 30 s (0.1, 0.2, 0.4, 0.8,
# then 1 s between tries): a restarted Redis (`joust up` brings its own back within a second or
# two, a container takes a few) is waited for instead of failing the matches in flight, whose
# calls are paid already. redis-py's asyncio pools retry nothing by default. A worker told to
# stop gives up after `workers.stopping.GIVE_UP_AFTER_S`: its Redis may be gone for good.
REDIS_CONNECT_TIMEOUT_S = 5.0


def connect(url: str) -> Redis:
    """A blocking client that reconnects through a Redis outage instead of failing."""
    return Redis.from_url(url, retry=redis_retry(), socket_connect_timeout=REDIS_CONNECT_TIMEOUT_S)


def async_clients(url: str) -> tuple[AsyncRedis, AsyncRedis]:
    """The engine's asyncio clients: one for the calls in flight, one for the leases and claims."""
    # A bounded pool that makes a caller wait for a connection rather than fail: every
    # call in flight touches Redis (rate limit, budget) and the default pool raises past 100.
    riding = {"retry": redis_retry(asynchronous=True), "socket_connect_timeout": REDIS_CONNECT_TIMEOUT_S}
    pool = BlockingConnectionPool.from_url(url, max_connections=REDIS_CONNECTIONS,
                                           timeout=60, **riding)
    aredis = AsyncRedis(connection_pool=pool)
    # The leases and claims get connections of their own: a renewal must never queue
    # behind the calls in flight, or a busy worker would let its claims lapse.
    lease_redis = AsyncRedis(connection_pool=BlockingConnectionPool.from_url(
        url, max_connections=8, timeout=60, **riding))
    return aredis, lease_redis
