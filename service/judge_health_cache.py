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

A result also depends on the human reference set (`?humans=`): one result is kept for every human
judge (the page's and the default), and a few more (`REFERENCE_SETS`, the least recently computed
first out) for chosen sets, each under the same rule.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from leaderboard.health import JudgeHealth, VoterAgreement
from service.store import Store

REFERENCE_SETS = 8  # results kept for chosen human reference sets, besides the default one
Humans = frozenset[str] | None  # a human reference set; None: every human judge


@dataclass(frozen=True)
class HealthAt:
    """Every judge's health over the judgements up to `revision` (at least) against the votes of
    `humans` (the reference set, by name), the agreement between those votes, and the
    parse-failed match counts it was keyed on."""

    judges: tuple[JudgeHealth, ...]
    humans: tuple[str, ...]
    voters: VoterAgreement
    revision: int
    failures: Mapping[str, int]

    def covers(self, revision: int, failures: Mapping[str, int]) -> bool:
        """True when this result is current for a request that read `revision` and `failures`."""
        return self.revision >= revision and self.failures == failures

    def of(self, judge: str | None = None) -> list[JudgeHealth]:
        """Every judge, or only `judge` (empty when unknown): the same figures `Store.judge_health(judge,
        humans)` computes, since a judge's figures depend only on its own records and the reference
        set's votes."""
        return [h for h in self.judges if judge is None or h.judge == judge]


class JudgeHealthCache:
    """The latest judge health of one store; `computations` counts the full computations (each
    reads every judgement), so a test can tell a served result from a recomputed one."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.computations = 0
        # by reference set; entries are replaced whole, so reading one needs no lock
        self._latest: OrderedDict[Humans, HealthAt] = OrderedDict()
        self._computing = threading.Lock()

    def current(self, humans: Collection[str] | None = None) -> HealthAt:
        """Every judge's health against the votes of `humans` (every human judge when None),
        including every judgement resolved and every match failed before this call; recomputed
        only when one of them moved since the last computation for that reference set."""
        key: Humans = None if humans is None else frozenset(humans)
        revision = self.store.revision()
        failures = self.store.parse_failures()
        latest = self._latest.get(key)
        if latest is not None and latest.covers(revision, failures):
            return latest
        with self._computing:
            latest = self._latest.get(key)  # a request that held the lock may have computed it meanwhile
            if latest is not None and latest.covers(revision, failures):
                return latest
            self.computations += 1
            report = self.store.health_report(humans=key)
            fresh = HealthAt(report.judges, report.humans, report.voters, revision, failures)
            self._keep(key, fresh)
            return fresh

    def _keep(self, key: Humans, fresh: HealthAt) -> None:
        """Keep `fresh` for `key` (under the lock); beyond REFERENCE_SETS chosen sets, drop the least recent."""
        self._latest[key] = fresh
        self._latest.move_to_end(key)
        chosen = [k for k in self._latest if k is not None]
        for stale in chosen[:-REFERENCE_SETS]:
            del self._latest[stale]
