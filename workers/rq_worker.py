"""The RQ worker joust runs: jobs as JSON, and only joust's own job functions.

An RQ job names a function to import and call, and RQ's default serializer is pickle, which runs
code while it loads. Anyone who can write to the queue could therefore run code in a worker,
twice over. So joust's queue carries its jobs as JSON (`rq.serializers.JSONSerializer`: a job is
a function's dotted name and its plain arguments; loading it runs nothing), and a worker performs
only the functions in `JOB_FUNCTIONS`: a job naming anything else is refused (failed, with the
reason, and logged) without being imported, and a job that is not JSON at all (pickle written by
someone else) fails to load, never runs. The job contract (serializer, queue, job functions) is
`service.store.queue`, which the service builds its queue with.
"""
from __future__ import annotations

import inspect
import logging
import os
import signal
from multiprocessing.context import ForkProcess
from types import FrameType

from redis.exceptions import ConnectionError as RedisConnectionError
from rq import Queue, SimpleWorker
from rq.defaults import DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT
from rq.job import Job
from rq.scheduler import RQScheduler
from rq.scheduler import run as run_scheduler

from leaderboard.reach import Reach
from service.config import REACH_FIELD
from service.ops.orphans import die_with_parent
from service.store.queue import JOB_FUNCTIONS, SERIALIZER

from .stopping import STOPPING

log = logging.getLogger(__name__)

SCHEDULER_STOP_S = 3.0  # RQ's scheduler ends within its 1 s tick; past this it is stuck on a dead Redis


class RefusedJob(Exception):
    """A job that names a function joust does not run."""


class JoustWorker(SimpleWorker):
    """RQ's `SimpleWorker` (jobs in this process, where the engine lives) that performs only
    `JOB_FUNCTIONS`. With `reach`, its RQ registration also says which judges it can reach (never
    a key; `service.credentials`), for an API that holds no provider key of its own."""

    def __init__(self, queues: list[Queue], *, reach: Reach | None = None, **kwargs: object) -> None:
        super().__init__(queues, serializer=SERIALIZER, **kwargs)  # type: ignore[arg-type]
        self.reach = reach

    def serialize(self) -> dict:
        """RQ's fields of the worker's hash (written at its birth, gone with it), and its reach."""
        fields = super().serialize()
        if self.reach is not None:
            fields[REACH_FIELD] = self.reach.as_json()
        return fields

    def perform_job(self, job: Job, queue: Queue) -> bool:
        try:
            name = job.func_name
        except Exception as exc:  # not JSON: someone else's pickle, or garbage
            return self._refuse(job, queue, f"its data cannot be read as JSON ({type(exc).__name__})")
        if name not in JOB_FUNCTIONS:
            return self._refuse(job, queue, f"it names {name!r}, which is not one of joust's job functions")
        return super().perform_job(job, queue)

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        """RQ's warm shutdown, marking the process as stopping first: from then on its Redis
        calls give up within seconds (`workers.stopping`), as its Redis may be gone for good."""
        STOPPING.mark()
        super().request_stop(signum, frame)

    def _start_scheduler(self, burst: bool = False, logging_level: str | None = "INFO",
                         date_format: str = DEFAULT_LOGGING_DATE_FORMAT,
                         log_format: str = DEFAULT_LOGGING_FORMAT) -> None:
        """RQ's, with a scheduler process that dies with this worker (`DyingScheduler`)."""
        if burst:  # no process: RQ's own does the one pass
            return super()._start_scheduler(burst, logging_level, date_format, log_format)
        self.scheduler = DyingScheduler(self.queues, connection=self.connection,
                                        logging_level=logging_level if logging_level is not None else self.log.level,
                                        date_format=date_format, log_format=log_format, serializer=self.serializer)
        self.scheduler.acquire_locks()
        if self.scheduler.acquired_locks:
            self.scheduler.start()

    def stop_scheduler(self) -> None:
        """RQ's SIGTERM to its scheduler process, but a bounded wait (RQ's waits for ever, and a
        scheduler retrying a dead Redis takes half a minute), then SIGKILL."""
        process = self.scheduler._process if self.scheduler is not None else None
        if process is None or process.pid is None or process.exitcode is not None:
            return
        try:
            os.kill(process.pid, signal.SIGTERM)
        except OSError:
            pass
        process.join(SCHEDULER_STOP_S)
        if process.exitcode is None:
            log.warning("RQ's scheduler (pid %d) did not stop within %.0f s: killing it", process.pid, SCHEDULER_STOP_S)
            process.kill()
            process.join()

    def unsubscribe(self) -> None:
        """RQ's unsubscribe in an order that never waits. RQ sends UNSUBSCRIBE, then stops the
        pubsub thread; the thread may already have read the reply and gone back to wait (RQ asks
        for 60 s), and from redis-py 8.2 `stop()` joins it: every worker's shutdown then took up
        to a minute. Clearing the thread's flag first means the reply itself ends the thread."""
        thread, pubsub = self.pubsub_thread, self.pubsub
        if thread is None or pubsub is None:
            return
        log.info("Worker %s: unsubscribing from channel %s", self.name, self.pubsub_channel_name)
        if "timeout" in inspect.signature(thread.stop).parameters:
            thread.stop(timeout=0)  # redis-py >= 8.2: clear the flag, do not join yet
        else:
            thread.stop()  # older redis-py: stop() only clears the flag
        if thread.is_alive():
            try:
                pubsub.unsubscribe()  # the reply wakes the thread, which sees the flag and ends
            except RedisConnectionError:
                pass  # the thread already closed the connection on its way out: that is the end we want
        thread.join(timeout=1)
        pubsub.close()

    def _refuse(self, job: Job, queue: Queue, why: str) -> bool:
        message = f"refused job {job.id}: {why}"
        log.error(message)
        self.handle_job_failure(job, queue, exc_string=f"{RefusedJob.__name__}: {message}")
        return False


class DyingScheduler(RQScheduler):
    """RQ's scheduler, its process told to die with the worker that forked it (a parent-death
    signal and a watchdog, `service.ops.orphans`): RQ's lives on when its worker is killed, holding
    the queue's scheduler lock and outliving `joust up`."""

    def request_stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        """RQ's, marking the process as stopping: releasing its lock gives up on a dead Redis."""
        STOPPING.mark()
        super().request_stop(signum, frame)

    def start(self) -> ForkProcess:
        self._status = self.Status.STARTED
        self._connection = None  # not shared across the fork (RQ's own start does the same)
        self._process = ForkProcess(target=_run_dying_with, args=(self, os.getpid()), name="Scheduler")
        self._process.start()
        return self._process


def _run_dying_with(scheduler: RQScheduler, parent: int) -> None:
    die_with_parent(parent, grace_s=SCHEDULER_STOP_S)
    run_scheduler(scheduler)
