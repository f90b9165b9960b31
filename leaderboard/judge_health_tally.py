"""Judge health kept current one judgement at a time.

Why: computing judge health from scratch reads every judgement (seconds at a million), and a
tournament adds judgements all the time. Every figure of a judge but its human agreement is a
share of counts summed over its records (`leaderboard.judge_health.Counts`), so those counts are kept
per judge and each new record is added once. Human agreement compares a judge's verdicts with
the human votes on the same pair, and a vote may come after the verdicts it is compared with:
so every record leaves its pair and verdict in compact arrays (13 bytes each), and the records
on a pair some human voted on are kept whole, those before the first vote found in the arrays
when it lands. A report then reads only the counts and the kept records, and equals
`leaderboard.judge_health.health_report` over every record added (tests/test_health_tally.py).

Krippendorff's alpha against the humans is computed from the same kept records at each
report; alpha between judges from `leaderboard.judge_alpha.SharedPairs`, which keeps the
verdicts of judges that are not human sorted by pair (13 bytes more each) and, per couple of
judges, the unit types their shared pairs make, re-counting only the pairs new records touch.

The reference set of a report must be human judges (`is_human`): their records are the ones
kept whole, and agreement is with human votes.
"""
from __future__ import annotations

from array import array
from collections.abc import Collection, Iterable, Mapping

import numpy as np

from .judge_alpha import OUTCOMES, JudgeAlpha, SharedPairs
from .judge_health import Counts, HealthReport, JudgementRecord, assemble_report, is_human, pair_verdict

SPAN = 2**31  # submission ids are below it (the store's 32-bit integers): a pair is lo * SPAN + hi
CODES = {w: code for code, w in enumerate(OUTCOMES)}


class HealthTally:
    """Every judge's health counts and the records the human figures read, added to as
    judgements land. Not thread-safe: its owner serialises `add` and `report`."""

    def __init__(self) -> None:
        self.records = 0
        self._counts: dict[str, Counts] = {}
        self._judges: list[str] = []
        self._judge_index: dict[str, int] = {}
        # one entry per record added: its unordered pair, judge and verdict relative to the pair's lower id
        self._pairs = array("q")
        self._who = array("i")
        self._verdicts = array("b")
        self._voted: dict[int, list[JudgementRecord]] = {}  # pair -> every record on it, for pairs humans voted on
        self._shared = SharedPairs()  # the judges' (not human) verdicts by pair, for alpha between judges

    def add(self, records: Iterable[JudgementRecord]) -> None:
        """Count `records`, each once."""
        first_votes: set[int] = set()
        start = len(self._pairs)
        for r in records:
            counts = self._counts.get(r.judge)
            if counts is None:
                counts = self._counts[r.judge] = Counts()
                self._judge_index[r.judge] = len(self._judges)
                self._judges.append(r.judge)
            counts.add(r)
            (low, high), verdict = pair_verdict(r)
            pair = low * SPAN + high
            self._pairs.append(pair)
            self._who.append(self._judge_index[r.judge])
            self._verdicts.append(CODES[verdict])
            kept = self._voted.get(pair)
            if kept is not None:
                kept.append(self._record(len(self._pairs) - 1))
            elif is_human(r.judge):
                first_votes.add(pair)
        self.records = len(self._pairs)
        self._share(start)
        if first_votes:
            self._keep(first_votes)

    def report(self, parse_failures: Mapping[str, int] | None = None,
               humans: Collection[str] | None = None) -> HealthReport:
        """`health_report` over every record added, against the votes of `humans` (human judges;
        every human judge when None). ValueError for a reference judge that is not human."""
        if humans is not None:
            strangers = sorted(name for name in humans if not is_human(name))
            if strangers:
                raise ValueError(f"a reference set holds human judges only, not {', '.join(strangers)}")
        compared = (r for kept in self._voted.values() for r in kept)
        return assemble_report(self._counts, compared, parse_failures, None, humans, self.judge_alphas())

    def judge_alphas(self) -> tuple[JudgeAlpha, ...]:
        """Alpha between every two judges that are not human, on the pairs both judged."""
        return self._shared.figures(self._judges)

    def _share(self, start: int) -> None:
        """Hand the records from `start` on, those of judges that are not human, to `_shared`."""
        pairs = np.frombuffer(self._pairs, dtype=np.int64)[start:].copy()
        who = np.frombuffer(self._who, dtype=np.int32)[start:].copy()
        codes = np.frombuffer(self._verdicts, dtype=np.int8)[start:].copy()
        machine = np.array([not is_human(name) for name in self._judges], dtype=bool)
        keep = machine[who]
        self._shared.add(pairs[keep], who[keep], codes[keep])

    def _keep(self, pairs: set[int]) -> None:
        """Keep whole every record so far on `pairs`, which humans voted on for the first time."""
        found = np.frombuffer(self._pairs, dtype=np.int64)
        hits = np.flatnonzero(np.isin(found, np.fromiter(pairs, dtype=np.int64, count=len(pairs)))).tolist()
        del found  # the array cannot grow while a view of it is alive
        for pair in pairs:
            self._voted[pair] = []
        for index in hits:
            self._voted[self._pairs[index]].append(self._record(index))

    def _record(self, index: int) -> JudgementRecord:
        """The record at `index` as the human figures read it: judge, pair and verdict."""
        low, high = divmod(self._pairs[index], SPAN)
        return JudgementRecord(judge=self._judges[self._who[index]], a_id=low, b_id=high,
                               outcome=OUTCOMES[self._verdicts[index]], calls=())
