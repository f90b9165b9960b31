"""Which ratings the verdicts bound: Ford's condition, and the order it leaves when it fails.

A Bradley-Terry rating has a finite maximum only when, for every split of a group into two, each
side took points from the other (the win graph is strongly connected). When a player (or a set
of players) won every game against the rest, the data say it is better but not by how much: the
fit's ridge prior alone then sets the gap, with an interval thousands of Elo wide, and since
ratings are centred on the group's mean, every interval in the group widens with it. A board
then shows no interval for that group and ranks by what the verdicts do say: who is above whom
along chains of clean wins. (A tie gives points both ways, so ties keep a group bounded.)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fit import strongly_connected


@dataclass(frozen=True)
class Bounds:
    """Whether one group's ratings are bounded and, when not, each player's rank range from the
    win graph: `rank_low[i]` = 1 + the players above i, `rank_high[i]` = n - the players below i
    (above: a chain of clean wins leads from them to i, none back)."""

    bounded: bool
    rank_low: np.ndarray
    rank_high: np.ndarray


def bounds(points: np.ndarray) -> Bounds:
    """Bounds of one connected group from its n×n points matrix (`PairCounts.points`: wins plus
    half the ties of row against column)."""
    took = np.asarray(points) > 0  # took[i, j]: i took points from j
    n = len(took)
    if n <= 1 or strongly_connected(took):
        return Bounds(True, np.ones(n, dtype=np.intp), np.full(n, n, dtype=np.intp))
    reach = _closure(took)
    above = reach.T & ~reach  # above[i, j]: j reaches i, i does not reach j: j is above i
    below = reach & ~reach.T
    return Bounds(False, 1 + above.sum(axis=1), n - below.sum(axis=1))


def strong_components(took: np.ndarray) -> np.ndarray:
    """The strongly connected piece of each player (numbered 0 up in the order of their first
    player) from `took[i, j]`: i took points from j. Within a piece every rating is tied to every
    other by wins both ways; between pieces the verdicts only say which is above."""
    reach = _closure(np.asarray(took, dtype=bool))
    first = np.argmax(reach & reach.T, axis=1)  # each player's piece, named by its first member
    return np.unique(first, return_inverse=True)[1].reshape(-1).astype(np.intp)


def _closure(edges: np.ndarray) -> np.ndarray:
    """reach[i, j]: a path of one or more edges leads from i to j (i reaches itself too)."""
    reach = edges | np.eye(len(edges), dtype=bool)
    # Squaring doubles the path length covered: about log2(n) steps. In float32 (BLAS, and no
    # wrap-around: a uint8 product counted 256 paths as none and could loop forever).
    for _ in range(max(1, int(np.ceil(np.log2(max(len(edges), 2)))) + 1)):
        as_float = reach.astype(np.float32)
        wider = (as_float @ as_float) > 0
        if (wider == reach).all():
            break
        reach = wider
    return reach
