"""The scheduler process: starts recurring tournaments when due, plans the rounds of adaptive
tournaments (`service.usecases.rounds`), snapshots finished scheduled runs' boards (`service.usecases.history`),
re-hands lost matches, and enqueues the batch driver (`workers.batches.drive_job`, by dotted path)
at most once per `batch_poll_s` while there is batch work.

Two schedulers may run (two machines, a restart overlapping): a due run is claimed in the
database by moving the schedule's next due time with a compare-and-set, so exactly one of them
starts it. Missed due times (the scheduler was down) start one run, not a pile of them.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from redis.exceptions import ConnectionError as RedisConnectionError

from service.config import Settings
from service.ops.cron import next_due
from service.ops.liveness import beat_scheduler
from service.store import Store, StoreUnavailable
from service.store.queue import JobQueue
from service.usecases.history import take_snapshots
from service.usecases.rounds import advance
from service.usecases.tournaments import hand_out, launch

log = logging.getLogger(__name__)


@dataclass
class TickReport:
    """What one tick did, for logs and tests."""

    started: list[int] = field(default_factory=list)
    rehanded: list[int] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)  # adaptive runs given a new round
    snapshots: list[int] = field(default_factory=list)  # runs whose board was snapshotted
    driver: str | None = None  # the batch driver's job, when this tick enqueued one


class Scheduler:
    """One tick at a time; `run` ticks until told to stop."""

    def __init__(self, store: Store, queue: JobQueue, settings: Settings) -> None:
        self.store = store
        self.queue = queue
        self.settings = settings

    def tick(self, now: float) -> TickReport:
        """Start due runs, plan the next round of adaptive runs whose round is over (or finish
        them), snapshot finished scheduled runs, hand out matches whose job was lost, then
        enqueue the batch driver if it is due."""
        report = TickReport()
        for due in self.store.due_schedules(now):
            following = next_due(due.schedule, now)
            if not self.store.claim_schedule(due.id, due.next_run_at, following):
                continue  # another scheduler took it
            stamp = datetime.fromtimestamp(due.next_run_at, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            run = launch(
                self.store, self.queue, f"{due.name} @ {stamp}", due.spec.with_(rerun=True), parent_id=due.id
            )
            log.info("started run %d of tournament %d (%d matches)", run.id, due.id, run.matches_total)
            report.started.append(run.id)
        for round_due in self.store.rounds_due():
            new = advance(self.store, round_due.id, round_due.spec, round_due.rounds)
            if new is not None:
                if not round_due.spec.batch:  # a batch run's round waits for the batch driver
                    hand_out(self.store, self.queue, new)
                report.rounds.append(round_due.id)
        report.snapshots = take_snapshots(self.store)
        report.rehanded = self.sweep(now)
        if self.store.batch_work_left():
            report.driver = self.queue.enqueue_driver(self.settings.batch_poll_s)
        return report

    def sweep(self, now: float) -> list[int]:
        """Re-enqueue matches that sat too long without a live job."""
        lost = [
            m.id
            for m in self.store.stale_matches(now, self.settings.match_timeout_s)
            if m.status != "queued" or not self.queue.is_waiting(m.job_id, now)
        ]
        if lost and hand_out(self.store, self.queue, lost):
            log.warning("re-enqueued %d matches whose job was lost", len(lost))
            return lost
        return []

    def run(self, stop: threading.Event, clock: Callable[[], float] = time.time) -> None:
        """Tick every `scheduler_interval_s` until `stop` is set; a failing tick is logged.

        Redis going away is waited out, not fatal: redis-py reconnects on the next command, every
        step of a tick can be done again (a run whose matches could not be enqueued keeps them
        pending for the sweep), so the next tick after Redis is back picks up where this one
        failed. While it is down the log says so once, not once per tick; so for the database."""
        redis_down_since: float | None = None
        database_down_since: float | None = None
        while not stop.is_set():
            try:
                now = clock()
                self.tick(now)
                beat_scheduler(self.queue.redis, now, ttl_s=max(30.0, 6 * self.settings.scheduler_interval_s))
                if redis_down_since is not None:
                    log.warning("Redis is back after %.1f s: scheduling again", time.monotonic() - redis_down_since)
                    redis_down_since = None
                if database_down_since is not None:
                    log.warning("the database is back after %.1f s: scheduling again",
                                time.monotonic() - database_down_since)
                    database_down_since = None
            except RedisConnectionError as exc:
                if redis_down_since is None:
                    redis_down_since = time.monotonic()
                    log.warning("Redis is unreachable, retrying every %ss: %s", self.settings.scheduler_interval_s, exc)
            except StoreUnavailable as exc:
                if database_down_since is None:
                    database_down_since = time.monotonic()
                    log.warning("the database does not answer, retrying every %ss: %s",
                                self.settings.scheduler_interval_s, exc.reason)
            except Exception:  # keep scheduling through a database hiccup
                log.exception("scheduler tick failed")
            stop.wait(self.settings.scheduler_interval_s)
