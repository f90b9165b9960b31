"""The leaderboard: one row per player joining the fitted rating, its interval, live Elo and counts.

Bradley-Terry orders the board because it is order-free (the same judgements give the same
board however they arrived); online Elo rides along as the live, order-dependent number.
`build_board` counts through a `Tally`, the same aggregate a service keeps up to date
incrementally, so a board built from scratch and one built battle by battle are the same.
"""
from __future__ import annotations

from collections.abc import Iterable

from .battles import BattleLike
from .tally import Tally
from .types import Rating


def build_board(battles: Iterable[BattleLike], *, k: float = 32.0) -> list[Rating]:
    """Rows best first (rating descending, then player name); no battles, no rows.

    rating/ci_low/ci_high: Bradley-Terry with the default ridge and a 95% closed-form interval;
    elo: online Elo with factor `k`, battles in the given order; wins/losses/ties/matches:
    counted judgements. `extra` holds `rank`, `rank_low`, `rank_high`, `points`, `win_rate`.
    """
    tally = Tally(k=k)
    tally.add(battles)
    return tally.board()
