"""RQ job entry points. Jobs carry match ids only; the database holds the rest.

`judge_match` hands its match to the process's engine (`workers.engine`), which judges dozens of
matches at once (`workers.match.judge_one`), and returns as soon as the engine has taken it, so
RQ gives the worker its next job while earlier matches still wait on the judge. From then on the
match's lease (`workers.leases`), not the RQ job, says that a live worker holds it.

A worker that starts while the database is down cannot build its engine (the store checks its
schema first): the job waits for the database as a job of a running engine does (a quarter of
`match_timeout_s`, polling), then goes back on the queue with a delay rather than failing, so
the match keeps a job.

Only `joust worker` (RQ's `SimpleWorker`, jobs in the worker's own process) may run these jobs: a
forking worker would judge in a work-horse that exits after each job.

The jobs share one engine per process (`engine()`): RQ calls a job as a plain function, so the
job asks for it; it is built from the environment the process was started with, and built again
when that environment changes (a test pointing the process elsewhere) or after a fork.
"""
from __future__ import annotations

import logging
import os
import time

from rq import get_current_job

from service.config import Settings, env_fingerprint
from service.store import StoreUnavailable
from service.store.queue import JUDGE_MATCH, enqueue_later, job_queue

from . import logcontext
from .engine import Engine

log = logging.getLogger(__name__)

DATABASE_POLL_S = 0.5

_engine: Engine | None = None
_pid = 0
_fingerprint: tuple[tuple[str, str], ...] = ()


def engine() -> Engine:
    """The engine of this process (see the module docstring). The settings, and the files they
    name, are parsed again only when the environment changed, not on every job."""
    global _engine, _pid, _fingerprint
    fingerprint = env_fingerprint()
    if _engine is None or _pid != os.getpid() or fingerprint != _fingerprint:
        if _engine is not None and _pid == os.getpid():
            _engine.close(drain_s=0)
        _engine, _pid, _fingerprint = Engine(Settings.from_env()), os.getpid(), fingerprint
    return _engine


def shutdown(drain_s: float | None = None) -> list[int]:
    """Drain and close this process's engine, if it has one; the matches it gave back."""
    global _engine
    if _engine is None or _pid != os.getpid():
        _engine = None
        return []
    found, _engine = _engine, None
    left = found.drain(drain_s)
    found.close(drain_s=0)
    return left


def judge_match(match_id: int) -> str:
    """Give one match to this process's engine: "admitted", "requeued" (this process stayed full
    too long, or the database was down: another worker, or this one later, takes it) or "deferred"
    (it is in flight here already: taken up when that task ends)."""
    token = logcontext.MATCH_ID.set(match_id)  # the lines of handing it over say which match
    try:
        found = _engine_for(match_id)
        return "requeued" if found is None else found.admit(match_id)
    finally:
        logcontext.MATCH_ID.reset(token)


def _engine_for(match_id: int) -> Engine | None:
    """The process's engine, waiting for a database that is down while it is built; None when
    it stayed down, after the match was put back on the queue."""
    try:
        return engine()
    except StoreUnavailable:
        pass
    settings = Settings.from_env()  # parsed only here: a job of a running engine never needs it
    deadline = time.monotonic() + max(1.0, settings.match_timeout_s / 4)
    while True:
        time.sleep(DATABASE_POLL_S)
        try:
            return engine()
        except StoreUnavailable as exc:
            if time.monotonic() < deadline:
                continue
            job = get_current_job()
            if job is None:
                raise
            enqueue_later(job_queue(job.connection, job.origin), settings.lease_ttl_s, JUDGE_MATCH, match_id,
                          job_timeout=job.timeout, description=f"judge match {match_id} (the database is down)")
            log.warning("match %d: back on the queue, no engine without the database (%s)", match_id, exc.reason)
            return None
