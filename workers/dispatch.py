"""Match jobs onto RQ's queue: each now or after a delay, and the delayed jobs RQ's scheduler left
overdue. Blocking RQ calls, which the engine runs on its thread pool.

Kept apart from `workers.engine`, whose loop decides when a match is handed out: how a match
becomes a job (its function, timeout and description) is RQ's side of that, and the same for
every hand-out, whatever the reason.
"""
from __future__ import annotations

import time

from redis import Redis
from rq import Queue

from service.store.queue import JUDGE_MATCH, enqueue_later

# RQ's scheduler moves a delayed job onto the queue within a second of its time; one this late
# waits on a scheduler that is not running, and the reaper moves it (`Engine.move_overdue`).
OVERDUE_S = 5.0


def enqueue(queue: Queue, match_ids: list[int], delay_s: float, why: str, match_timeout_s: float) -> dict[int, str]:
    """Put each match's job on the queue (in `delay_s` seconds, if any); the job id of each."""
    jobs: dict[int, str] = {}
    timeout = int(max(1, match_timeout_s / 2))
    for match_id in match_ids:
        description = f"judge match {match_id} ({why})"
        if delay_s > 0:
            job = enqueue_later(queue, delay_s, JUDGE_MATCH, match_id, job_timeout=timeout, description=description)
        else:
            job = queue.enqueue(JUDGE_MATCH, match_id, job_timeout=timeout, description=description)
        jobs[match_id] = job.id
    return jobs


def move_overdue(queue: Queue, redis: Redis) -> list[str]:
    """Put on the queue the delayed jobs (retries, twins' waits, requeues) overdue by
    `OVERDUE_S`; the ids of those this call moved. RQ's scheduler moves them, in one worker
    process only (a lock that outlives a killed holder by a minute, retaken at RQ's maintenance
    interval, ten minutes), so after that worker is killed nobody moved them for minutes. One
    taker per job: the one whose ZREM removes it from the schedule enqueues it."""
    registry = queue.scheduled_job_registry
    moved = []
    for job_id in registry.get_jobs_to_schedule(int(time.time() - OVERDUE_S)):
        if redis.zrem(registry.key, job_id):
            job = queue.fetch_job(job_id)
            if job is not None:
                queue.enqueue_job(job)
                moved.append(job_id)
    return moved
