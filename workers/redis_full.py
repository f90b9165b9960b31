"""A worker whose Redis refuses writes for want of disk (MISCONF) or memory (OOM) waits for it.

Why: RQ ends its worker on any error in its loop, and `joust up` restarts it, which met the
same refusal at once: workers crash-looped for as long as the disk stayed full (12 restarts,
each a new process and a new registration), and judging resumed only after the restart backoff
(30 s). Now the worker process stays: `joust worker` runs RQ's loop again once Redis takes a
write (`writable`, probed every `poll_s`), so judging resumes within `poll_s` of space being
freed. Redis retries a failed AOF write itself every second; a failed RDB snapshot only when a
save point is next due, so while that is the refusal the probe asks for a BGSAVE (`every_save_s`).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError

from service.store import redis_full_reason

log = logging.getLogger(__name__)

PROBE_KEY = "joust:probe:writable"
POLL_S = 0.5
BGSAVE_EVERY_S = 5.0


def refusal(redis: Redis) -> str | None:
    """Redis's words when it refuses a write for want of disk or memory now; None when it takes
    one. Other errors (Redis down) are raised: they are not this module's to wait for."""
    try:
        redis.set(PROBE_KEY, 1, ex=10)
    except ResponseError as exc:
        reason = redis_full_reason(exc)
        if reason is None:
            raise
        return reason
    return None


def wait_until_writable(redis: Redis, reason: str, stop: threading.Event, *, poll_s: float = POLL_S,
                        every_save_s: float = BGSAVE_EVERY_S, clock: Callable[[], float] = time.monotonic) -> bool:
    """Wait until Redis takes a write again (True), or `stop` is set first (False)."""
    began = clock()
    saved_at = None
    log.warning("Redis refuses writes (%s): this worker takes no job until it takes them again", reason)
    while not stop.is_set():
        if "RDB" in reason and (saved_at is None or clock() - saved_at >= every_save_s):
            saved_at = clock()
            try:
                redis.bgsave()  # allowed while writes are refused; clears the refusal once it succeeds
            except RedisError:
                pass  # one in progress, or refused: the next try
        try:
            now_refused = refusal(redis)
        except RedisConnectionError:
            now_refused = reason  # restarting: keep waiting
        if now_refused is None:
            log.warning("Redis takes writes again after %.1f s: working again", clock() - began)
            return True
        reason = now_refused
        stop.wait(poll_s)
    return False
