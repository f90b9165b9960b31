"""A worker whose Redis refuses writes for want of disk (MISCONF) or memory (OOM) waits for it.

Why: RQ ends its worker on any error in its loop, and `joust up` restarts it, which met the
same refusal at once: workers crash-looped for as long as the disk stayed full (12 restarts,
each a new process and a new registration), and judging resumed only after the restart backoff
(30 s). Now the worker process stays: `joust worker` runs RQ's loop again once Redis takes a
write (`writable`, probed every `poll_s`), so judging resumes within `poll_s` of space being
freed. Redis retries a failed AOF write itself every second; a failed RDB snapshot only when a
save point is next due, so while that is the refusal the probe asks for a BGSAVE (`every_save_s`).

A job can be stranded by the refusal itself: RQ takes a job by moving it from its queue to the
queue's intermediate list (one write), registers an execution of it (a second), then starts it
(a third: its status "started", and out of the intermediate list). When Redis refuses the last,
the job sits in the intermediate list, still "queued", and RQ puts it back only at a maintenance
pass a minute later at the earliest (passes are ten minutes apart), so its match waited for the
scheduler's lost-job sweep (JOUST_MATCH_TIMEOUT, 300 s). Found by the fault schedule
(tests/test_fault_schedule.py). So the wait notes the jobs taken and never started (`stranded`:
while Redis refuses writes no job is taken, so none of them is about to start) and puts them
back at the front of their queue once Redis takes writes (`put_back`), dropping the execution
registered for them (RQ would later call it abandoned).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from rq.intermediate_queue import IntermediateQueue
from rq.job import Job, JobStatus
from rq.queue import Queue

from service.store import redis_full_reason

log = logging.getLogger(__name__)

PROBE_KEY = "joust:probe:writable"
POLL_S = 0.5
BGSAVE_EVERY_S = 5.0
# KEYS: the intermediate list, the queue, the job. ARGV: the job id, the status "queued". A job
# never started goes back to its queue's front, by one taker only.
_PUT_BACK = """
if redis.call('HGET', KEYS[3], 'status') ~= ARGV[2] then return 0 end
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[1])
return 1
"""


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


def stranded(redis: Redis) -> dict[str, list[str]]:
    """The jobs taken off each queue (in its intermediate list) and never started (still
    "queued"), by queue key. Reads only: asked while Redis refuses writes."""
    found: dict[str, list[str]] = {}
    try:
        for raw in redis.smembers(Queue.redis_queues_keys):
            key = raw.decode() if isinstance(raw, bytes) else str(raw)
            ids = [i.decode() for i in redis.lrange(IntermediateQueue.get_intermediate_queue_key(key), 0, -1)]
            statuses = [redis.hget(Job.key_for(job_id), "status") for job_id in ids]
            ids = [job_id for job_id, status in zip(ids, statuses) if status == JobStatus.QUEUED.value.encode()]
            if ids:
                found[key] = ids
    except RedisError as exc:  # down meanwhile: nothing noted, RQ's own pass is left
        log.warning("could not look for jobs taken and never started: %s", exc)
    return found


def put_back(redis: Redis, taken: dict[str, list[str]]) -> list[str]:
    """Put the `stranded` jobs still never started back at the front of their queue (each by
    one worker only), and drop the executions registered for them; the ids put back."""
    moved = []
    for queue_key, ids in taken.items():
        intermediate = IntermediateQueue.get_intermediate_queue_key(queue_key)
        for job_id in ids:
            if redis.eval(_PUT_BACK, 3, intermediate, queue_key, Job.key_for(job_id), job_id,
                          JobStatus.QUEUED.value):
                moved.append(job_id)
        if moved:
            registry = Queue.from_queue_key(queue_key, connection=redis).started_job_registry
            stale = [e for e in redis.zrange(registry.key, 0, -1) if e.decode().split(":", 1)[0] in moved]
            if stale:
                redis.zrem(registry.key, *stale)
    if moved:
        log.warning("put back on their queue %d jobs taken as Redis began refusing writes and never started: %s",
                    len(moved), moved[:20])
    return moved


def wait_until_writable(redis: Redis, reason: str, stop: threading.Event, *, poll_s: float = POLL_S,
                        every_save_s: float = BGSAVE_EVERY_S, clock: Callable[[], float] = time.monotonic) -> bool:
    """Wait until Redis takes a write again (True: the jobs the refusal stranded are back on
    their queue), or `stop` is set first (False)."""
    began = clock()
    saved_at = None
    taken = stranded(redis)
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
            try:
                put_back(redis, taken)
            except RedisError as exc:  # refusing (or down) again: RQ's own pass is left
                log.warning("could not put back the jobs taken and not started: %s", exc)
            return True
        reason = now_refused
        stop.wait(poll_s)
    return False
