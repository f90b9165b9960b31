"""A delayed job is never lost to a scheduler that reads the schedule while it is written
(`service.store.queue.enqueue_later`). RQ's `enqueue_in` adds a job to the schedule before it
saves the job, and its scheduler drops an entry whose job it cannot find: a retry went missing
that way. Real Redis and RQ's own scheduler, racing on a thread of its own."""
from __future__ import annotations

import threading

from redis import Redis
from rq.scheduler import RQScheduler

from service.store.queue import JUDGE_MATCH, SERIALIZER, enqueue_later, job_queue

JOBS = 300


def test_no_delayed_job_is_lost_to_a_scheduler_running_at_the_same_time(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    queue = job_queue(redis, "race")
    scheduler = RQScheduler([queue], connection=redis, serializer=SERIALIZER)
    scheduler.acquire_locks()
    assert scheduler.acquired_locks
    done = threading.Event()

    def schedule_all_the_time() -> None:
        while not done.is_set():
            scheduler.enqueue_scheduled_jobs()  # RQ's own pass, as its scheduler process makes it

    racer = threading.Thread(target=schedule_all_the_time)
    racer.start()
    try:
        ids = [enqueue_later(queue, 0, JUDGE_MATCH, n, job_timeout=10, description=f"job {n}").id for n in range(JOBS)]
    finally:
        done.set()
        racer.join()
    scheduler.enqueue_scheduled_jobs()  # what is due and still scheduled
    scheduler.release_locks()
    on_queue = set(queue.get_job_ids())
    lost = [job_id for job_id in ids if job_id not in on_queue]
    assert not lost, f"{len(lost)} of {JOBS} jobs neither queued nor scheduled"
    redis.close()
