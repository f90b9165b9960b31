"""A worker process told to stop, and the retry policy of its Redis connections, which rides out
a Redis outage of about 30 s while the process works and at most `GIVE_UP_AFTER_S` once it stops.

Why: a working worker waits for a restarted Redis rather than fail the matches in flight, whose
calls are paid already. A stopping one has nothing to wait for: when `joust up` is killed, its
Redis gets the same parent-death signal as the workers and is gone for good, and a shutdown
that retried every call (the scheduler beside it, the worker's death notice, the unsubscribe)
for 30 s each kept the worker alive for over a minute, beside the `joust up` started after it.
So `STOPPING` is marked by the worker's signal handler; from `GIVE_UP_AFTER_S` after that, a
Redis call that fails is not tried again, and the rest of the shutdown takes a moment.

The mark is per process (a fork starts with the parent's state) and shared by every copy of the
retry policy: redis-py deep-copies a policy into each connection, and `Stopping` copies as itself.
"""
from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

T = TypeVar("T")
# 0.1, 0.2, 0.4, 0.8, then 1 s between tries: about 30 s in all (see workers.connections).
REDIS_RETRIES = 34
GIVE_UP_AFTER_S = 2.0  # a stopping worker still rides out a Redis restart this short


class Stopping:
    """Whether (and since when) this process was told to stop. One per process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.since: float | None = None

    def mark(self) -> None:
        """The process was told to stop (its first signal counts)."""
        if self.since is None:
            self.since = self._clock()

    def clear(self) -> None:
        self.since = None

    def given_up(self, grace_s: float = GIVE_UP_AFTER_S) -> bool:
        """True once the process has been stopping for `grace_s`: failed Redis calls end there."""
        return self.since is not None and self._clock() - self.since >= grace_s

    def __copy__(self) -> Stopping:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Stopping:
        return self


STOPPING = Stopping()


class StoppingRetry(Retry):
    """redis-py's retry, except that a call failing after `stopping.given_up()` is not tried again."""

    def __init__(self, backoff: Any, retries: int, stopping: Stopping = STOPPING, **kwargs: Any) -> None:
        super().__init__(backoff, retries, **kwargs)
        self.stopping = stopping

    def call_with_retry(self, do: Callable[[], T], fail: Callable[..., Any], *args: Any, **kwargs: Any) -> T:
        def fail_then_maybe_give_up(error: Exception, *count: int) -> Any:
            fail(error, *count)  # the connection's cleanup first (it may raise by itself)
            if self.stopping.given_up():
                raise error

        return super().call_with_retry(do, fail_then_maybe_give_up, *args, **kwargs)


class AsyncStoppingRetry(AsyncRetry):
    """The asyncio twin of `StoppingRetry`."""

    def __init__(self, backoff: Any, retries: int, stopping: Stopping = STOPPING, **kwargs: Any) -> None:
        super().__init__(backoff, retries, **kwargs)
        self.stopping = stopping

    async def call_with_retry(self, do: Callable[[], Awaitable[T]], fail: Callable[..., Any], *args: Any,
                              **kwargs: Any) -> T:
        async def fail_then_maybe_give_up(error: Exception, *count: int) -> Any:
            await fail(error, *count)
            if self.stopping.given_up():
                raise error

        return await super().call_with_retry(do, fail_then_maybe_give_up, *args, **kwargs)


def redis_retry(*, asynchronous: bool = False, stopping: Stopping = STOPPING) -> Retry | AsyncRetry:
    """The retry policy of a worker's Redis connections (see the module docstring)."""
    backoff = ExponentialBackoff(cap=1.0, base=0.05)
    if asynchronous:
        return AsyncStoppingRetry(backoff, REDIS_RETRIES, stopping)
    return StoppingRetry(backoff, REDIS_RETRIES, stopping)
