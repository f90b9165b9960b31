"""The long-lived state of one worker process: settings, store, Redis, judges, one event loop.

RQ calls jobs as plain functions, so the job asks for the process's runtime; it is built on the
first job (from the environment the process was started with) and rebuilt after a fork.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any, Coroutine, TypeVar

from redis import Redis

from service.config import Settings, env_fingerprint
from service.store import Store

from .judge import Judge
from .ratelimit import RateLimitedJudge, SharedRateLimit
from .registry import JudgePool

T = TypeVar("T")


class Runtime:
    """What a worker process keeps between jobs."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = Store(settings.resolved_database_url)
        self.redis = Redis.from_url(settings.redis_url) if settings.redis_url else None
        self.judges = JudgePool(settings)
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self._limit = (
            SharedRateLimit(self.redis, settings.judge_rpm) if settings.judge_rpm and self.redis is not None else None
        )

    def judge(self, spec: str) -> Judge:
        """The process's judge for `spec`, behind the shared rate limit when one is set (an
        offline judge makes no provider call, so none applies to it)."""
        judge = self.judges.get(spec)
        if self._limit is None or getattr(judge, "offline", False):
            return judge
        return RateLimitedJudge(judge, self._limit, spec)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the process's one loop, so async clients stay bound to it."""
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        """Release the judges' clients, the store, Redis and the loop."""
        self.run(self.judges.aclose())
        self.store.close()
        if self.redis is not None:
            self.redis.close()
        self.loop.close()


_runtime: Runtime | None = None
_fingerprint: tuple[tuple[str, str], ...] = ()


def current() -> Runtime:
    """The runtime of this process, built on first use and rebuilt when the environment it was
    built from changes (a test pointing the process elsewhere) or after a fork. The settings
    (and the files they name) are parsed again only then, not on every job."""
    global _runtime, _fingerprint
    fingerprint = env_fingerprint()
    if _runtime is None or _runtime.pid != os.getpid() or fingerprint != _fingerprint:
        if _runtime is not None and _runtime.pid == os.getpid():
            _runtime.close()
        _runtime, _fingerprint = Runtime(Settings.from_env()), fingerprint
    return _runtime
