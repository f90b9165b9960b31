"""Rank intervals from rating intervals: best and worst place a player could hold."""
from __future__ import annotations

import math

import numpy as np

from leaderboard.ranks import rank_intervals


def test_rank_intervals_by_hand() -> None:
    intervals = {
        "a": (90.0, 110.0),   # clear of everyone
        "b": (60.0, 80.0),    # overlaps c
        "c": (50.0, 65.0),    # overlaps b and d
        "d": (40.0, 55.0),    # overlaps c
        "e": (0.0, 10.0),     # clear last
    }
    assert rank_intervals(intervals) == {
        "a": (1, 1),
        "b": (2, 3),  # only a surely ahead; d and e surely behind
        "c": (2, 4),
        "d": (3, 4),  # a and b surely ahead (their lows 90, 60 > 55); e behind
        "e": (5, 5),
    }


def test_touching_intervals_overlap_and_nan_means_anywhere() -> None:
    assert rank_intervals({"a": (1.0, 2.0), "b": (0.0, 1.0)}) == {"a": (1, 2), "b": (1, 2)}
    got = rank_intervals({"a": (5.0, 6.0), "b": (math.nan, math.nan), "c": (0.0, 1.0)})
    assert got == {"a": (1, 2), "b": (1, 3), "c": (2, 3)}
    assert rank_intervals({}) == {}


def test_rank_intervals_match_the_definition_on_random_intervals() -> None:
    rng = np.random.default_rng(4)
    centres = rng.normal(0, 50, 40)
    widths = rng.uniform(0, 40, 40)
    intervals = {f"p{i}": (c - w, c + w) for i, (c, w) in enumerate(zip(centres, widths))}
    got = rank_intervals(intervals)
    for p, (low, high) in intervals.items():
        best = 1 + sum(other[0] > high for other in intervals.values())
        worst = len(intervals) - sum(other[1] < low for other in intervals.values())
        assert got[p] == (best, worst)
        assert 1 <= best <= worst <= len(intervals)
