"""A board with ties modelled: the plain board's players, rated by Davidson's tie model.

`GET /api/leaderboard?ties=davidson` serves it. The plain board (ties half a win each way) fixes
who plays, the components of the comparison graph and which of them the verdicts bound
(`leaderboard.bounds`: a tie counts both ways under either model, so the two agree on it); each
component is then fitted on its own pair counts by `leaderboard.ties.davidson_intervals`, so it
has its own tie parameter ν, as it has its own ratings. Rows keep the plain rating beside the
Davidson one, so a reader sees what the tie model changed.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .battles import PairCounts
from .style_board import refitted_rows
from .ties import davidson_intervals
from .types import Rating


@dataclass(frozen=True)
class TieParameter:
    """One component's Davidson ν with its 95% interval, and ν / (2 + ν): the chance that two
    equally strong players tie."""

    component: int
    nu: float
    low: float
    high: float

    @property
    def tie_probability_equal(self) -> float:
        return self.nu / (2.0 + self.nu)


@dataclass(frozen=True)
class TiedBoard:
    """Rows as on the plain board, rating and interval from the Davidson fit (adding
    `plain_rating`, `plain_ci_low`, `plain_ci_high`), best first within each component; and each
    component's tie parameter, largest component first."""

    rows: list[Rating]
    tie_parameters: list[TieParameter]


def tied_board(plain: Sequence[Rating], counts: PairCounts) -> TiedBoard:
    """The Davidson version of `plain`, the board fitted on `counts` (its pair counts).

    Raises ValueError when the counts hold weighted battles (Davidson counts judgements).
    """
    members: dict[int, list[str]] = {}
    bounded: dict[int, bool] = {}
    for r in plain:
        piece = r.component
        members.setdefault(piece, []).append(r.player)
        bounded[piece] = r.bounded
    index = {player: i for i, player in enumerate(counts.players)}
    fitted: dict[str, tuple[float, float, float]] = {}
    parameters: list[TieParameter] = []
    nan = float("nan")
    for piece in sorted(members):
        fit = davidson_intervals(counts.take(np.array(sorted(index[p] for p in members[piece]), dtype=np.intp)))
        for player, (rating, low, high) in fit.ratings.items():
            fitted[player] = (rating, low, high) if bounded[piece] else (rating, nan, nan)
        parameters.append(TieParameter(piece, *fit.tie_parameter))
    return TiedBoard(refitted_rows(plain, fitted), parameters)
