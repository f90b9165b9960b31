"""Judge health for GET /api/judges and the pages from one running tally per app.

Why: computed from scratch, judge health reads every stored judgement (seconds at a million), and
a tournament adds judgements all the time. So the cache keeps a `leaderboard.judge_health_tally`: each
refresh reads only the judgements stored since the last one (`Store.health_records_since`, by
id) and adds them; only the first reads everything. A result is keyed the way the boards are
(`service.usecases.boards`): by the store's revision (the `resolved` counter, one indexed row; a judgement
moves it when its match is resolved with it) together with the per-judge count of matches failed
with an unreadable verdict (`Store.parse_failures`), which fail without moving the revision.

Two ways to ask:
- `current()` (GET /api/judges, which promises current figures) reads both first: when neither
  moved since the last result, that result is served, else the cache refreshes and the caller
  waits for it, so a request made after a judgement lands always sees it.
- `soon()` (the pages) never waits for a refresh once there is a result: it serves the latest
  one, whose `revision` says how old it is, and starts a refresh in a background thread when it
  is stale; only the very first computation is waited for, and only up to `wait_s`.
Refreshing is single-flight: one at a time per app, whoever asks; callers of `current()` that
arrive during one wait for it rather than each reading the judgements again.

A result also depends on the human reference set (`?humans=`): one result is kept for every human
judge (the page's and the default), and a few more (`REFERENCE_SETS`, the least recently computed
first out) for chosen sets, each under the same rule. All of them come from the one tally. A
result scoped to one turn of multi-turn questions (`?turn=`) comes from a tally of that turn's
judgements, kept the same way beside the overall one (`TURNS` of them, the least recently used
first out), with that turn's count of parse-failed matches.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from leaderboard.judge_alpha import JudgeAlpha
from leaderboard.judge_health import JudgeHealth, VoterAgreement
from leaderboard.judge_health_tally import HealthTally
from service.store import Store
from service.usecases.refreshes import Refreshes

REFERENCE_SETS = 8  # results kept for chosen human reference sets or turns, besides the default one
TURNS = 4  # tallies kept for single turns, besides the overall one
CHUNK = 100_000  # judgements read per query while catching up, to bound memory on a cold start
Humans = frozenset[str] | None  # a human reference set; None: every human judge
Key = tuple[int | None, Humans]  # a result's turn (None: every turn) and reference set


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
    judge_alphas: tuple[JudgeAlpha, ...] = ()

    def covers(self, revision: int, failures: Mapping[str, int]) -> bool:
        """True when this result is current for a request that read `revision` and `failures`."""
        return self.revision >= revision and self.failures == failures

    def of(self, judge: str | None = None) -> list[JudgeHealth]:
        """Every judge, or only `judge` (empty when unknown): the same figures `Store.judge_health(judge,
        humans)` computes, since a judge's figures depend only on its own records and the reference
        set's votes."""
        return [h for h in self.judges if judge is None or h.judge == judge]

    def alphas_of(self, judge: str | None = None) -> list[JudgeAlpha]:
        """Krippendorff's alpha between every two judges that are not human, or only those
        `judge` is one of."""
        return [a for a in self.judge_alphas if judge is None or judge in (a.judge, a.other)]


def reference_key(humans: Collection[str] | None) -> Humans:
    """The cache key of a reference set."""
    return None if humans is None else frozenset(humans)


@dataclass
class _Tallied:
    """A running tally and the judgement id it holds every judgement (of its turn) up to."""

    tally: HealthTally = field(default_factory=HealthTally)
    read_upto: int = 0


class JudgeHealthCache:
    """The latest judge health of one store; `computations` counts the refreshes (each reads the
    judgements stored since the one before, every judgement the first time), so a test can tell
    a served result from a refreshed one."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.computations = 0
        # by (turn, reference set); entries are replaced whole, so reading one needs no lock
        self._latest: OrderedDict[Key, HealthAt] = OrderedDict()
        self._computing = threading.Lock()  # held by the one refresh at a time, with the tallies
        self._tallies: OrderedDict[int | None, _Tallied] = OrderedDict({None: _Tallied()})  # by turn
        self._refreshes = Refreshes("judge-health")  # the pages' background refreshes, by reference set

    def current(self, humans: Collection[str] | None = None, *, turn: int | None = None) -> HealthAt:
        """Every judge's health against the votes of `humans` (every human judge when None), over
        the judgements on `turn` (every turn when None), including every judgement resolved and
        every match failed before this call; refreshed only when one of them moved since the last
        result for that turn and reference set."""
        key = (turn, reference_key(humans))
        revision, failures = self.store.revision(), self.store.parse_failures(turn=turn)
        latest = self._latest.get(key)
        if latest is not None and latest.covers(revision, failures):
            return latest
        return self._refresh(key, revision, failures)

    def soon(self, wait_s: float = 1.0, humans: Collection[str] | None = None) -> HealthAt | None:
        """The latest health against `humans` at once, current or not (its `revision` says up to
        where), refreshed in the background when it is stale. Before the first result there is
        nothing to serve: that computation is waited for up to `wait_s`, then None (the page says
        it is being computed). Why: a page must not wait seconds for judge health while a
        tournament writes; GET /api/judges, which promises current figures, asks `current()`."""
        key: Key = (None, reference_key(humans))
        revision, failures = self.store.revision(), self.store.parse_failures()
        return self._refreshes.soon(
            key, lambda: self._latest.get(key), lambda latest: latest.covers(revision, failures),
            lambda: self._refresh(key, self.store.revision(), self.store.parse_failures()), wait_s)

    def _refresh(self, key: Key, revision: int, failures: Mapping[str, int]) -> HealthAt:
        """The result for `key` covering `revision` and `failures` (read before the judgements,
        so the result holds at least what they count): the one a refresh that held the lock
        meanwhile made, else the tally brought up to date and reported."""
        with self._computing:
            latest = self._latest.get(key)
            if latest is not None and latest.covers(revision, failures):
                return latest
            self.computations += 1
            turn, humans = key
            report = self._caught_up(turn).report(failures, humans)
            fresh = HealthAt(report.judges, report.humans, report.voters, revision, failures, report.judge_alphas)
            self._keep(key, fresh)
            return fresh

    def _caught_up(self, turn: int | None) -> HealthTally:
        """The tally of `turn`'s judgements (every turn's when None), with the judgements stored
        since it last read added (under the lock); on any error it starts over rather than half-add."""
        tallied = self._tallies.get(turn)
        if tallied is None:
            tallied = self._tallies[turn] = _Tallied()
            singles = [t for t in self._tallies if t is not None]
            for stale in singles[:-TURNS]:
                del self._tallies[stale]
        self._tallies.move_to_end(turn)
        try:
            while True:
                records, upto = self.store.health_records_since(tallied.read_upto, limit=CHUNK, turn=turn)
                tallied.tally.add(records)
                tallied.read_upto = upto
                if len(records) < CHUNK:
                    return tallied.tally
        except BaseException:
            self._tallies[turn] = _Tallied()
            raise

    def _keep(self, key: Key, fresh: HealthAt) -> None:
        """Keep `fresh` for `key` (under the lock); beyond REFERENCE_SETS chosen sets or turns,
        drop the least recent."""
        self._latest[key] = fresh
        self._latest.move_to_end(key)
        chosen = [k for k in self._latest if k != (None, None)]
        for stale in chosen[:-REFERENCE_SETS]:
            del self._latest[stale]
