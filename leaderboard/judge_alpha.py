"""Krippendorff's alpha in judge health: each judge against the reference humans' votes, and
judges with each other, on the pairs both judged.

Why beside the agreement shares (`leaderboard.judge_health`): a share counts matches, so a judge that
says "A wins" to a crowd that mostly picks A looks good by frequency alone; alpha (nominal,
`leaderboard.agreement`) discounts the agreement those frequencies would give by chance.

A unit is one pair (two submissions); a value is a verdict relative to the pair's lower id (A,
B or TIE). Against the humans, a unit is a pair the judge judged and the reference set voted
on, with every verdict of the judge and every vote of the set on it (LLMFAO's crowd has several
votes per pair); between two judges, a pair both judged, with every verdict of either. So a
judge that copies each vote on pairs with one vote each gets alpha 1, and one that flips coins
about 0. Human judges are compared with the reference set, not in the judge-to-judge figures.

A pair has no first side: which one is "A" (here the lower submission id) is arbitrary, and
nominal alpha's chance term depends on how often each value occurs. So every pair counts twice,
as is and seen from its other side (A and B swapped): alpha is the same whichever side is "A",
and a verdict that one side won is one value whatever the side.

Intervals: a 95% percentile bootstrap over pairs, `ALPHA_ROUNDS` rounds drawn with a generator
seeded `ALPHA_SEED` for each figure, so the same verdicts always give the same interval. It is
computed from the distinct unit types (`agreement.alpha_of_types`): a handful, however many
pairs, so its cost does not grow with the verdicts; it is memoised on those types, so a running
tally's refresh pays for it only when a figure's types moved.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .agreement import Alpha, alpha_of_types, unit_types
from .types import Winner

ALPHA_SEED = 0
ALPHA_ROUNDS = 1000
OUTCOMES = (Winner.A, Winner.B, Winner.TIE)  # value codes 0, 1, 2
MIRROR = (1, 0, 2)  # the same verdicts seen from the pair's other side


@dataclass(frozen=True)
class JudgeAlpha:
    """Krippendorff's alpha between two judges (`judge` < `other` by name) over the `pairs` both
    judged, with its 95% bootstrap interval; None where it is not measurable (no shared pair, or
    a single verdict value throughout). `agreement`: the share of those pairs on which both name
    the same verdict (a tie agreeing only with a tie); `agreement_decided`: the same over the
    pairs where both name a winner; both over the pairs where each gave one verdict, None
    without any (a panel member with its panel, `panel/<name>`, is one such couple)."""

    judge: str
    other: str
    alpha: float | None
    ci_low: float | None
    ci_high: float | None
    pairs: int
    agreement: float | None = None
    agreement_decided: float | None = None
    ci_missing: str | None = None  # "no_spread": alpha is a number its resamples never vary (no interval)


def measured(value: float) -> float | None:
    """None for nan: nothing to measure (JSON has no nan)."""
    return None if math.isnan(value) else value


def seeded_alpha(counts: np.ndarray) -> Alpha:
    """Alpha with its seeded bootstrap interval from a units × (A, B, TIE) count matrix, each
    pair counted in both orientations (see the module docstring)."""
    counts = np.asarray(counts, dtype=float).reshape(-1, len(OUTCOMES))
    flip = counts[:, 1] > counts[:, 0]  # one orientation per pair: fewer types, the same alpha
    counts[flip] = counts[flip][:, MIRROR]
    types, frequencies = unit_types(counts)
    return _typed_alpha(tuple(map(tuple, types.tolist())), tuple(frequencies.tolist()))


@lru_cache(maxsize=256)
def _typed_alpha(types: tuple[tuple[float, ...], ...], frequencies: tuple[int, ...]) -> Alpha:
    """Memoised on the unit types: a refresh whose new verdicts left a figure's types as they
    were (most figures, most of the time) pays nothing for its bootstrap (about 10 ms)."""
    return alpha_of_types(np.array(types, dtype=float).reshape(-1, len(OUTCOMES)),
                          np.array(frequencies, dtype=np.int64), np.random.default_rng(ALPHA_SEED),
                          rounds=ALPHA_ROUNDS, mirror=MIRROR)


class VoteTable:
    """The reference set's votes as a pairs × (A, B, TIE) count matrix, made once per report
    and shared by every judge's `human_alpha`."""

    def __init__(self, votes: Mapping[tuple[int, int], Counter[Winner]]) -> None:
        self.rows = {pair: i for i, pair in enumerate(votes)}
        self.counts = np.array([[counted[w] for w in OUTCOMES] for counted in votes.values()],
                               dtype=float).reshape(-1, len(OUTCOMES))


def human_alpha(verdicts: Iterable[tuple[tuple[int, int], Winner]], table: VoteTable) -> Alpha:
    """A judge's alpha against the reference humans: `verdicts`, the judge's (pair, verdict
    relative to the pair's lower id), as `health.pair_verdict` gives them, and the set's votes."""
    codes = {w: code for code, w in enumerate(OUTCOMES)}
    cells = [(table.rows[pair], codes[verdict]) for pair, verdict in verdicts if pair in table.rows]
    mine = np.zeros_like(table.counts)
    if cells:
        np.add.at(mine, tuple(np.array(cells).T), 1.0)
    judged = (mine.sum(axis=1) > 0) & (table.counts.sum(axis=1) > 0)
    return seeded_alpha(mine[judged] + table.counts[judged])


def judge_alphas(verdicts: Iterable[tuple[str, tuple[int, int], Winner]]) -> tuple[JudgeAlpha, ...]:
    """Alpha between every two judges with a pair in common, sorted by name, from scratch:
    `verdicts` are (judge, pair, verdict relative to the pair's lower id), as
    `health.pair_verdict` gives them (`SharedPairs`, kept current verdict by verdict, gives the same)."""
    codes = {w: code for code, w in enumerate(OUTCOMES)}
    names: dict[str, int] = {}
    pairs: dict[tuple[int, int], int] = {}
    rows = [(pairs.setdefault(pair, len(pairs)), names.setdefault(judge, len(names)), codes[verdict])
            for judge, pair, verdict in verdicts]
    table = np.array(rows, dtype=np.int64).reshape(-1, 3)
    shared = SharedPairs()
    shared.add(table[:, 0], table[:, 1], table[:, 2])
    return shared.figures(list(names))


Couple = tuple[int, int]
Type = tuple[int, int, int]
BITS = 20  # a type's counts and a couple's judge indices are below 2**20 each, packed in an int64


class SharedPairs:
    """Judge-to-judge alpha kept current verdict by verdict: per couple of judges, how many of
    the pairs both judged have each unit type (the counts of A, B, TIE on the pair from either
    judge, one orientation per pair), which is all alpha and its bootstrap need.

    Why: the figures must not cost a pass over every verdict at each refresh. The verdicts are
    kept sorted by pair (13 bytes each); adding some re-counts only the pairs they touch (their
    old types out, their new ones in), a binary search and one array insert (a copy, about
    13 MB at a million verdicts) rather than a sort.
    """

    def __init__(self) -> None:
        self._pairs = np.zeros(0, dtype=np.int64)
        self._who = np.zeros(0, dtype=np.int32)
        self._codes = np.zeros(0, dtype=np.int8)
        self._types: dict[Couple, Counter[Type]] = {}

    def add(self, pairs: np.ndarray, who: np.ndarray, codes: np.ndarray) -> None:
        """Count new verdicts (same layout as `judge_alphas`)."""
        if not len(pairs):
            return
        pairs, who, codes = (np.asarray(pairs, dtype=np.int64), np.asarray(who, dtype=np.int32),
                             np.asarray(codes, dtype=np.int8))
        order = np.argsort(pairs, kind="stable")
        ordered = pairs[order]
        touched = ordered[np.r_[True, ordered[1:] != ordered[:-1]]]  # np.unique hashes: slower here
        self._tally(*self._on(touched), -1)
        at = np.searchsorted(self._pairs, ordered, side="right")
        self._pairs = np.insert(self._pairs, at, ordered)
        self._who = np.insert(self._who, at, who[order])
        self._codes = np.insert(self._codes, at, codes[order])
        self._tally(*self._on(touched), +1)

    def figures(self, names: Sequence[str]) -> tuple[JudgeAlpha, ...]:
        """Alpha with its seeded interval per couple of judges with a pair in common, by name."""
        out = []
        for (j, k), counted in self._types.items():
            kept = [(t, n) for t, n in counted.items() if n]
            if not kept:
                continue
            figure = _typed_alpha(*_canonical(kept))
            a, b = sorted((names[j], names[k]))
            out.append(JudgeAlpha(a, b, measured(figure.alpha), measured(figure.low), measured(figure.high),
                                  figure.units, *_agreement(kept), ci_missing=figure.missing))
        return tuple(sorted(out, key=lambda f: (f.judge, f.other)))

    def _on(self, touched: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The kept verdicts on the `touched` pairs (sorted)."""
        low = np.searchsorted(self._pairs, touched, side="left")
        high = np.searchsorted(self._pairs, touched, side="right")
        sizes = high - low
        index = np.repeat(low - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        return self._pairs[index], self._who[index], self._codes[index]

    def _tally(self, pairs: np.ndarray, who: np.ndarray, codes: np.ndarray, sign: int) -> None:
        """Add (`sign` +1) or take out (-1) the unit types these verdicts, every verdict on their
        pairs, make for each couple of judges on a pair."""
        if not len(pairs):
            return
        order = np.lexsort((who, pairs))
        pairs, who, codes = pairs[order], who[order], codes[order]
        new = np.r_[True, (pairs[1:] != pairs[:-1]) | (who[1:] != who[:-1])]
        counts = np.zeros((int(new.sum()), len(OUTCOMES)), dtype=np.int64)
        np.add.at(counts, (np.cumsum(new) - 1, codes.astype(np.intp)), 1)
        g_pair, g_who = pairs[new], who[new].astype(np.int64)
        keys: list[np.ndarray] = []
        for step in range(1, len(g_pair)):  # a pair's judges sit next to each other, each once
            first = np.flatnonzero(g_pair[:-step] == g_pair[step:])
            if not first.size:
                break
            unit = counts[first] + counts[first + step]
            flip = unit[:, 1] > unit[:, 0]  # one orientation per pair (alpha counts both anyway)
            unit[flip] = unit[flip][:, list(MIRROR)]
            couple = (g_who[first] << BITS) | g_who[first + step]
            kind = (unit[:, 0] << (2 * BITS)) | (unit[:, 1] << BITS) | unit[:, 2]
            keys.append(np.stack([couple, kind], axis=1))
        if not keys:
            return
        both = np.concatenate(keys)
        both = both[np.lexsort((both[:, 1], both[:, 0]))]
        starts = np.flatnonzero(np.r_[True, np.any(both[1:] != both[:-1], axis=1)])
        times = np.diff(np.r_[starts, len(both)])
        mask = (1 << BITS) - 1
        for (couple, kind), n in zip(both[starts].tolist(), times.tolist()):
            counted = self._types.setdefault((couple >> BITS, couple & mask), Counter())
            counted[(kind >> (2 * BITS), (kind >> BITS) & mask, kind & mask)] += sign * n


def _agreement(kept: list[tuple[Type, int]]) -> tuple[float | None, float | None]:
    """(agreement, agreement without ties) over the units of one verdict from each judge: a
    unit type (A, B, TIE counts) agrees when one value has both verdicts."""
    two = [(t, n) for t, n in kept if sum(t) == 2]
    return _same(two), _same([(t, n) for t, n in two if t[2] == 0])  # code 2: TIE


def _same(units: list[tuple[Type, int]]) -> float | None:
    total = sum(n for _, n in units)
    return sum(n for t, n in units if max(t) == 2) / total if total else None


def _canonical(kept: list[tuple[Type, int]]) -> tuple[tuple[tuple[float, ...], ...], tuple[int, ...]]:
    """Types and frequencies in a fixed order (the memo's key, and the bootstrap's draw order)."""
    kept.sort()
    return tuple(tuple(float(c) for c in t) for t, _ in kept), tuple(n for _, n in kept)
