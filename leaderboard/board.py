"""The leaderboard: one row per player joining the fitted rating, its interval, live Elo and counts.

Bradley-Terry orders the board because it is order-free (the same judgements give the same
board however they arrived); online Elo rides along as the live, order-dependent number.
"""
from __future__ import annotations

from collections.abc import Sequence

from .ratings import battle_table, bradley_terry_intervals, online_elo
from .standings import standings
from .types import Battle, Rating


def build_board(battles: Sequence[Battle], *, k: float = 32.0) -> list[Rating]:
    """Rows best first (rating descending, then player name); no battles, no rows.

    rating/ci_low/ci_high: Bradley-Terry with the default ridge and a 95% closed-form interval;
    elo: online Elo with factor `k`, battles in the given order; wins/losses/ties/matches:
    counted judgements. `extra` holds `points` and `win_rate`.
    """
    battles = list(battles)
    if not battles:
        return []
    table = battle_table(battles)  # counted once, shared by the fit and the standings
    fitted = bradley_terry_intervals(table, confidence=0.95)
    elo = online_elo(battles, k=k)
    records = standings(table).records
    rows = [
        Rating(
            player=player,
            rating=rating,
            ci_low=low,
            ci_high=high,
            elo=elo[player],
            wins=records[player].wins,
            losses=records[player].losses,
            ties=records[player].ties,
            matches=records[player].matches,
            extra={"points": records[player].points, "win_rate": records[player].win_rate},
        )
        for player, (rating, low, high) in fitted.items()
    ]
    # Rounded so that float noise between equal ratings cannot beat the name order.
    return sorted(rows, key=lambda row: (-round(row.rating, 9), row.player))
