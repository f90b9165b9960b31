"""Rank intervals: which places a player could hold, given every player's rating interval.

A rank is only as sure as the intervals behind it: when two intervals overlap, either player
could be ahead, so a board shows a range of ranks instead of pretending to a strict order.
"""
from __future__ import annotations

import numpy as np


def rank_intervals(intervals: dict[str, tuple[float, float]]) -> dict[str, tuple[int, int]]:
    """(best, worst) 1-based rank per player from (low, high) rating intervals.

    best = 1 + the number of players whose low is above this player's high (they are surely
    ahead); worst = n - the number of players whose high is below this player's low (they are
    surely behind). Strict comparisons: touching intervals overlap. A NaN bound compares false,
    so a player without an interval may hold any rank.
    """
    players = list(intervals)
    lows = np.array([intervals[p][0] for p in players], dtype=float)
    highs = np.array([intervals[p][1] for p in players], dtype=float)
    n = len(players)
    sorted_lows = np.sort(lows[~np.isnan(lows)])
    sorted_highs = np.sort(highs[~np.isnan(highs)])
    # Players with low > high_i: all lows right of high_i; NaN highs give 0 surely-ahead.
    ahead = np.where(np.isnan(highs), 0, sorted_lows.size - np.searchsorted(sorted_lows, highs, side="right"))
    behind = np.where(np.isnan(lows), 0, np.searchsorted(sorted_highs, lows, side="left"))
    return {p: (1 + int(a), n - int(b)) for p, a, b in zip(players, ahead, behind)}
