"""Judge health for GET /api/judges and the page from one result, current on every request.

Why: `leaderboard.health` has no running tally, so judge health is computed from every stored
judgement at once (`Store.judge_health`), which takes seconds at a million. The API and the page
therefore share one result per app, keyed the way the boards are (`service.boards`): by the
store's revision (the `resolved` counter, one indexed row; a judgement moves it when its match is
resolved with it) together with the per-judge count of matches failed with an unreadable verdict
(`Store.parse_failures`), which fail without moving the revision. Each request reads both first:
when neither moved since the last computation that result is served, else it is recomputed, so a
request made after a judgement lands always sees it. Recomputing is single-flight: requests that
arrive together at a new revision wait for one computation rather than each reading everything.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from leaderboard.health import JudgeHealth
from service.store import Store


@dataclass(frozen=True)
class HealthAt:
    """Every judge's health over the judgements up to `revision` (at least), with the parse-failed
    match counts it was keyed on."""

    judges: tuple[JudgeHealth, ...]
    revision: int
    failures: Mapping[str, int]

    def covers(self, revision: int, failures: Mapping[str, int]) -> bool:
        """True when this result is current for a request that read `revision` and `failures`."""
        return self.revision >= revision and self.failures == failures

    def of(self, judge: str | None = None) -> list[JudgeHealth]:
        """Every judge, or only `judge` (empty when unknown): the same figures `Store.judge_health(judge)`
        computes, since a judge's figures depend only on its own records and every human vote."""
        return [h for h in self.judges if judge is None or h.judge == judge]


class JudgeHealthCache:
    """The latest judge health of one store; `computations` counts the full computations (each
    reads every judgement), so a test can tell a served result from a recomputed one."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.computations = 0
        self._latest: HealthAt | None = None  # replaced whole; reading a reference needs no lock
        self._computing = threading.Lock()

    def current(self) -> HealthAt:
        """Every judge's health, including every judgement resolved and every match failed before
        this call; recomputed only when one of them moved since the last computation."""
        revision = self.store.revision()
        failures = self.store.parse_failures()
        latest = self._latest
        if latest is not None and latest.covers(revision, failures):
            return latest
        with self._computing:
            latest = self._latest  # a request that held the lock may have computed it meanwhile
            if latest is not None and latest.covers(revision, failures):
                return latest
            self.computations += 1
            fresh = HealthAt(tuple(self.store.judge_health()), revision, failures)
            self._latest = fresh
            return fresh
