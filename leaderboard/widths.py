"""Interval widths kept across the refits of a growing board, recomputed when enough changed.

Why: a live board refits Bradley-Terry at every new judgement (warm-started: a step or two), but
the Fisher variances behind its intervals cost a Cholesky factorisation and a triangular inverse,
7 ms of a 400-player board's 18, while one judgement among a million moves them by parts per
million. So a board keeps the variances it computed, with how much each player had played then,
and reuses them until some player's play (weighted judgements) has grown by `DRIFT` or the players
changed. A kept width is then a little off: the new games add information, and each decisive one
moves its players' ratings and so every p(1 - p) the information sums. On growing boards of 10
and 40 players with 2,000-4,000 judgements each, the widest gap between a kept width and a
recomputed one was 0.16% (`WIDEST_GAP` is what tests/test_widths.py holds it to): at a million
judgements over 400 players, 0.02 Elo of a ±11 Elo interval. Only the widths are kept: ratings,
counts and ranks are refitted at every revision.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .fit import fisher_variances

DRIFT = 5e-4  # growth of any player's play after which the variances are recomputed
WIDEST_GAP = 2e-3  # a kept width's relative gap to a recomputed one, as measured and tested


@dataclass
class KeptWidths:
    """The last Fisher variances of one board's fit and the play they were computed from.

    Mutable on purpose: a `Tally` owns one and each refit reads and may renew it. `computed`
    counts the renewals (a board's owner can tell reuse from recomputation)."""

    players: tuple[str, ...] = ()
    played: np.ndarray = field(default_factory=lambda: np.zeros(0))
    variances: np.ndarray = field(default_factory=lambda: np.zeros(0))
    computed: int = 0

    def variances_for(self, players: Sequence[str], points: np.ndarray, beta: np.ndarray, *, ridge: float) -> np.ndarray:
        """`fisher_variances(points, beta)`, or the kept ones when the same players have each
        played at most `DRIFT` more (and no less) since they were computed."""
        played = points.sum(axis=0) + points.sum(axis=1)
        if (tuple(players) == self.players and bool((played >= self.played).all())
                and bool((played <= self.played * (1.0 + DRIFT)).all())):
            return self.variances
        self.variances = fisher_variances(points, beta, ridge=ridge)
        self.players, self.played = tuple(players), played
        self.computed += 1
        return self.variances

    def copy(self) -> KeptWidths:
        """An independent copy (the arrays are never changed in place, so they are shared)."""
        return KeptWidths(self.players, self.played, self.variances, self.computed)
