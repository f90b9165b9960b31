"""The judges with verdicts, kept current one resolve at a time: what a board's judge is chosen from.

Why: every board names its judge (`leaderboard.judges`), and choosing one needs each judge's
verdict count and newest tournament. Counting them over a million judgements costs a second, so
the overall roster is kept like the boards (`service.usecases.boards`): each call passes the revision it
read, and only matches resolved since the last call are summed and merged. A tournament's roster
dedupes over its runs, so it is read from scratch when the revision moves (a few kept by
tournament).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from leaderboard.judges import JudgeSummary, merge
from service.store import Store


@dataclass(frozen=True)
class Roster:
    """The judges with verdicts on one scope, as of `revision` (over a tournament, `seq`: its
    newest resolve seq when read, `Store.tournament_seq`)."""

    judges: tuple[JudgeSummary, ...]
    revision: int
    seq: int | None = None


class OverallRoster:
    """Every judge's counted verdicts and newest tournament, merged run after run. Thread-safe."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._seq = 0
        self._judges: dict[str, JudgeSummary] = {}
        self._roster = Roster((), 0)

    def at(self, revision: int) -> Roster:
        """The roster including every match resolved up to `revision` (or later)."""
        with self._lock:
            if revision > self._seq:
                more, seq = self.store.judge_summaries(after_seq=self._seq)
                self._judges = merge(self._judges, more)
                self._seq = seq
                self._roster = Roster(tuple(self._judges.values()), seq)
            return self._roster


def tournament_roster(store: Store, tournament_id: int) -> Roster:
    """The judges with verdicts in a tournament and its runs, read from scratch."""
    judges, revision = store.judge_summaries(tournament_id=tournament_id)
    return Roster(tuple(judges), revision)
