"""The job queue seen from the service: match ids go onto RQ by dotted path, nothing more.

The service never imports `workers`: RQ imports `workers.jobs.judge_match` inside the worker.
Jobs carry only ids; the database holds everything else.
"""
from __future__ import annotations

from typing import Iterable

from redis import Redis
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

JUDGE_MATCH = "workers.jobs.judge_match"
ANALYSE_TIE = "workers.analysis.analyse_tie"
WAITING = {JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED, JobStatus.STARTED}


class JobQueue:
    """Hands matches to the workers and tells whether a match's job is still alive."""

    def __init__(self, redis: Redis, name: str, job_timeout_s: float) -> None:
        self.redis = redis
        self.queue = Queue(name, connection=redis)
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

    def is_waiting(self, job_id: str | None) -> bool:
        """True when the job still exists and will run or is running."""
        if not job_id:
            return False
        try:
            status = Job.fetch(job_id, connection=self.redis).get_status(refresh=False)
        except NoSuchJobError:
            return False
        return status in WAITING

    def depth(self) -> int:
        """How many jobs wait on the queue."""
        return self.queue.count
