"""Starting a tournament run: plan its pairs, store its matches, hand them to the queue.

The API and the scheduler both start runs through `launch`, so a nightly re-run is planned
exactly like the first run, against the submissions present at that moment.
"""
from __future__ import annotations

import logging
import random
from dataclasses import dataclass

from redis.exceptions import RedisError

from leaderboard import pairing
from leaderboard.types import Mode, Pair

from .queue import JobQueue
from .store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Launched:
    """A run that was created; `queued` is False when Redis was unreachable (the scheduler's
    sweep hands its matches out later, nothing is lost)."""

    id: int
    matches_total: int
    queued: bool


def plan(store: Store, spec: dict) -> list[Pair]:
    """The pairs a tournament spec asks for, over the submissions stored now."""
    subs = store.select_submissions(
        models=spec.get("models"), scenarios=spec.get("scenarios"), questions=spec.get("questions")
    )
    mode = Mode(spec.get("mode", Mode.ROUND_ROBIN.value))
    if mode is Mode.SAMPLED:
        return pairing.sampled(subs, int(spec["opponents"]), random.Random(int(spec["seed"])))
    return pairing.round_robin(subs)


def launch(
    store: Store,
    queue: JobQueue,
    name: str,
    spec: dict,
    *,
    schedule: str | None = None,
    next_run_at: float | None = None,
    parent_id: int | None = None,
) -> Launched:
    """Create a run and enqueue its matches."""
    pairs = plan(store, spec)
    tid = store.create_tournament(
        name, spec, pairs, schedule=schedule, next_run_at=next_run_at, parent_id=parent_id
    )
    return Launched(id=tid, matches_total=len(pairs), queued=hand_out(store, queue, store.pending_matches(tid)))


def hand_out(store: Store, queue: JobQueue, match_ids: list[int]) -> bool:
    """Enqueue matches and record their jobs; False (matches stay as they are) if Redis is down."""
    if not match_ids:
        return True
    try:
        jobs = queue.enqueue(match_ids)
    except RedisError as exc:
        log.warning("could not enqueue %d matches, the scheduler will retry: %s", len(match_ids), exc)
        return False
    store.mark_queued(jobs)
    return True
