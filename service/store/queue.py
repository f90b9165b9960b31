"""The job queue's contract, the one place it is spelled: the serializer, the queue, the three
job functions by dotted name, and the service's side of it (match ids go onto RQ, nothing more).

The service never imports `workers`: RQ imports `workers.jobs.judge_match` inside the worker,
which performs only `JOB_FUNCTIONS` (`workers.rq_worker`).
Jobs carry only ids; the database holds everything else. Batch runs have no job per match:
their driver (`workers.batches.drive_job`) is enqueued at most once per poll interval.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone

from redis import Redis
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

# Jobs travel as JSON: loading a pickle runs code, and the queue must not be a way to run code in
# a worker. The workers read the queue with the same serializer (workers.rq_worker) and perform only
# these functions.
SERIALIZER = JSONSerializer
JUDGE_MATCH = "workers.jobs.judge_match"
ANALYSE_TIE = "workers.analysis.analyse_tie"
DRIVE_BATCHES = "workers.batches.drive_job"
JOB_FUNCTIONS = frozenset({JUDGE_MATCH, ANALYSE_TIE, DRIVE_BATCHES})  # what a worker performs
DRIVER_DUE = "joust:batches:due:{queue}"  # set while the last driver job is recent
DRIVER_TIMEOUT_S = 3600  # one cycle may stream the results of 100,000 requests
WAITING = {JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED, JobStatus.STARTED}
STARTED_GRACE_S = 5.0
OVERDUE_GRACE_S = 60.0  # RQ's scheduler moves due jobs every second; a minute late means it is gone


def job_queue(redis: Redis, name: str) -> Queue:
    """joust's queue `name`, its jobs as JSON."""
    return Queue(name, connection=redis, serializer=SERIALIZER)


def enqueue_later(queue: Queue, delay_s: float, func: str, *args: object, job_timeout: int | None, description: str) -> Job:
    """Put a job on `queue`'s schedule, to run in `delay_s` seconds.

    Not RQ's `enqueue_in`: its `schedule_job` adds the job to the schedule at once, outside the
    pipeline that saves the job afterwards, and a scheduler that reads the schedule in between
    finds no job, drops the entry, and the job is lost (rq 2.12: a retry in tests/test_jobs.py
    went missing about once in twenty runs, its match left waiting for the sweep). RQ's atomic
    path, one Lua script that saves the job and schedules it together, needs an explicit job id:
    each job gets a fresh one."""
    job = queue.create_job(func, args=args, timeout=job_timeout, description=description,
                           job_id=str(uuid.uuid4()), status=JobStatus.SCHEDULED)
    return queue.schedule_job(job, datetime.now(timezone.utc) + timedelta(seconds=delay_s), unique=True)


class JobQueue:
    """Hands matches to the workers and tells whether a match's job is still alive."""

    def __init__(self, redis: Redis, name: str, job_timeout_s: float) -> None:
        self.redis = redis
        self.queue = job_queue(redis, name)
        self.job_timeout_s = int(max(1, job_timeout_s))

    def enqueue(self, match_ids: Iterable[int]) -> dict[int, str]:
        """Put one job per match on the queue; returns match id -> job id."""
        jobs: dict[int, str] = {}
        with self.redis.pipeline() as pipe:
            for match_id in match_ids:
                job = self.queue.enqueue(
                    JUDGE_MATCH,
                    match_id,
                    job_timeout=self.job_timeout_s,
                    result_ttl=3600,
                    failure_ttl=7 * 24 * 3600,
                    description=f"judge match {match_id}",
                    pipeline=pipe,
                )
                jobs[match_id] = job.id
            pipe.execute()
        return jobs

    def enqueue_analysis(self, judgement_id: int) -> str:
        """Put one tie-analysis job on the queue; returns its job id (RedisError when down)."""
        job = self.queue.enqueue(
            ANALYSE_TIE,
            judgement_id,
            job_timeout=self.job_timeout_s,
            result_ttl=3600,
            failure_ttl=7 * 24 * 3600,
            description=f"analyse tie {judgement_id}",
        )
        return job.id

    def enqueue_driver(self, every_s: float) -> str | None:
        """Put one batch-driver job on the queue unless one was put there less than `every_s`
        ago (a Redis SET NX with that TTL, so several schedulers enqueue it once); its job id,
        or None. The driver's own lock keeps two cycles from overlapping."""
        due = DRIVER_DUE.format(queue=self.queue.name)
        if not self.redis.set(due, "1", nx=True, px=max(1, int(every_s * 1000))):
            return None
        job = self.queue.enqueue(DRIVE_BATCHES, job_timeout=DRIVER_TIMEOUT_S, result_ttl=600,
                                 failure_ttl=24 * 3600, description="drive the message batches")
        return job.id

    def wake_driver(self) -> None:
        """Let the next scheduler tick enqueue the driver at once (a new batch run)."""
        self.redis.delete(DRIVER_DUE.format(queue=self.queue.name))

    def is_waiting(self, job_id: str | None, now: float | None = None) -> bool:
        """True when the job still exists and will run or is running.

        Three states RQ only cleans up after many minutes count as lost: a job "started" for longer
        than its own timeout plus `STARTED_GRACE_S` (its worker was killed while handing it over:
        a live worker's job ends within its timeout), a job left in the queue's intermediate list
        (its worker was killed between taking it and starting it), and a scheduled job overdue by
        `OVERDUE_GRACE_S` (RQ's scheduler died, as it does after a long Redis outage, and is only
        revived at RQ's maintenance interval)."""
        if not job_id:
            return False
        try:
            job = Job.fetch(job_id, connection=self.redis, serializer=SERIALIZER)
        except NoSuchJobError:
            return False
        status = job.get_status(refresh=False)
        if status not in WAITING:
            return False
        now = time.time() if now is None else now
        if status == JobStatus.STARTED and job.started_at is not None:
            started = job.started_at.replace(tzinfo=timezone.utc).timestamp()
            return now - started <= (job.timeout or self.job_timeout_s) + STARTED_GRACE_S
        if status == JobStatus.QUEUED:
            stuck = self.redis.lpos(self.queue.intermediate_queue_key, job_id)
            return stuck is None
        if status == JobStatus.SCHEDULED:  # overdue: RQ's scheduler died (a long Redis outage)
            try:
                due = self.queue.scheduled_job_registry.get_scheduled_time(job)
            except NoSuchJobError:  # scheduled, yet in no schedule: nothing will ever move it
                return False
            return now - due.replace(tzinfo=timezone.utc).timestamp() <= OVERDUE_GRACE_S
        return True

    def depth(self) -> int:
        """How many jobs wait on the queue."""
        return self.queue.count
