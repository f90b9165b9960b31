"""Lua scripts run on Redis by their sha, and by their text when the server does not know them.

Every shared count the workers keep (leases and claims, the rate limit, the circuit breaker, the
budget) changes in one Lua script call. redis-py's `register_script` runs a script by its sha
(EVALSHA) and, when the server answers NOSCRIPT, loads it and runs it by its sha again. A Redis
that restarts comes back with an empty script cache, and that second EVALSHA was seen to fail
too, under load, right after a restart (tests/test_redis_supervision.py's outage test): the
breaker could not record a call that had been answered and paid for, the match failed, and its
calls were paid for again. Here the fallback is EVAL with the script's text, which cannot answer
NOSCRIPT (and caches the script again, for the next EVALSHA).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError


class LuaScript:
    """One script on one (asyncio) Redis client; calling it runs it there."""

    def __init__(self, redis: Redis, text: str) -> None:
        self.redis = redis
        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()

    async def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        try:
            return await self.redis.evalsha(self.sha, len(keys), *keys, *args)  # type: ignore[misc]
        except NoScriptError:  # a restarted (or flushed) Redis: run it by its text
            return await self.redis.eval(self.text, len(keys), *keys, *args)  # type: ignore[misc]
