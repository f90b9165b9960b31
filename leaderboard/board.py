"""The leaderboard: one row per player joining the fitted rating, its interval, live Elo and counts.

Bradley-Terry orders the board because it is order-free (the same judgements give the same
board however they arrived); online Elo rides along as the live, order-dependent number.
`build_board` counts through a `Tally`, the same aggregate a service keeps up to date
incrementally, so a board built from scratch and one built battle by battle are the same.
Players the verdicts never linked, directly or through others, are fitted and ranked apart
(`leaderboard.components`): a board is a list of components, each best first.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from .battles import BattleLike
from .ranks import rank_intervals
from .resampled import Resampled
from .tally import Tally
from .types import Rating


def build_board(battles: Iterable[BattleLike], *, k: float = 32.0) -> list[Rating]:
    """Rows by component (1 = the largest), best first within one (rating descending, then
    player name); no battles, no rows.

    rating/ci_low/ci_high: Bradley-Terry with the default ridge and a 95% closed-form interval,
    fitted per component; elo: online Elo with factor `k`, battles in the given order;
    wins/losses/ties/matches: counted judgements; `component`, `rank`, `rank_low`, `rank_high`
    (ranks within the component), `points`, `win_rate` filled in.
    """
    tally = Tally(k=k)
    tally.add(battles)
    return tally.board()


def with_intervals(
    rows: Iterable[Rating], intervals: Mapping[str, tuple[float, float] | Resampled],
) -> list[Rating]:
    """The rows with other (low, high) intervals (e.g. bootstrap ones) and the rank ranges those
    allow within each component; ratings, order and ranks stay. A player missing from
    `intervals` keeps none (NaN bounds: any rank in its component); a `Resampled` interval that
    is missing says why in `ci_missing` (a `Missing`). A component its verdicts do
    not bound (`bounded` False, see `leaderboard.bounds`) keeps no interval and the rank
    ranges its wins give: resampling cannot bound what the data leave open."""
    nan = float("nan")
    rows = [r if not r.bounded else
            dataclasses.replace(r, ci_low=intervals.get(r.player, (nan, nan))[0],
                                ci_high=intervals.get(r.player, (nan, nan))[1],
                                ci_missing=getattr(intervals.get(r.player), "missing", None))
            for r in rows]
    by_component: dict[int, dict[str, tuple[float, float]]] = {}
    for r in rows:
        if r.bounded:
            by_component.setdefault(r.component, {})[r.player] = (r.ci_low, r.ci_high)
    ranks = {component: rank_intervals(bounds) for component, bounds in by_component.items()}

    def ranked(r: Rating) -> Rating:
        low, high = ranks[r.component][r.player]
        return dataclasses.replace(r, rank_low=low, rank_high=high)

    return [ranked(r) if r.bounded else r for r in rows]
