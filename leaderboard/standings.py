"""Round-robin standings: plain counts of what happened, no model behind them.

They sit beside the fitted ratings because counts are what people check a rating against: who
won how often, and against whom. Standings count judgements (rows); battle weights only affect
the fitted ratings.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .battles import BattleLike, BattleTable, PairCounts, pair_counts, unpack


@dataclass(frozen=True)
class Record:
    """One player's results: a win is 1 point, a tie ½."""

    player: str
    wins: int
    losses: int
    ties: int

    @property
    def matches(self) -> int:
        return self.wins + self.losses + self.ties

    @property
    def points(self) -> float:
        return self.wins + 0.5 * self.ties

    @property
    def win_rate(self) -> float:
        """(wins + ½ ties) / matches; 0.0 for a player with no matches."""
        return self.points / self.matches if self.matches else 0.0


@dataclass(frozen=True)
class Standings:
    """Per-player records and the head-to-head matrices.

    `players` (name order) indexes both matrices. `count_matrix[i, j]`: matches between i and j
    (symmetric, int). `win_rate_matrix[i, j]`: (wins + ½ ties) of i against j over their
    matches, NaN where they never met (the diagonal included), so row i reads "how i fared
    against each opponent" and `win_rate_matrix[i, j] + win_rate_matrix[j, i] == 1`.
    """

    players: list[str]
    records: dict[str, Record]
    count_matrix: np.ndarray
    win_rate_matrix: np.ndarray

    def ranked(self) -> list[Record]:
        """Records best first: win rate, then points, then name."""
        return sorted(self.records.values(), key=lambda r: (-r.win_rate, -r.points, r.player))

    def average_win_rate(self) -> dict[str, float]:
        """Mean of a player's head-to-head win rates over the opponents it met.

        Unlike `Record.win_rate` it weighs every opponent equally, so a player is not flattered
        by having met a weak opponent many times.
        """
        result: dict[str, float] = {}
        for i, player in enumerate(self.players):
            row = self.win_rate_matrix[i]
            met = ~np.isnan(row)
            result[player] = float(row[met].mean()) if met.any() else 0.0
        return result


def standings(battles: Iterable[BattleLike] | BattleTable | PairCounts) -> Standings:
    """Wins, losses, ties and the head-to-head matrices of a set of battles, by counting."""
    counts = pair_counts(battles)
    wins, ties, games = counts.wins, counts.ties, counts.games
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(games > 0, (wins + 0.5 * ties) / games, np.nan)
    return Standings(players=counts.players, records=records_of(counts), count_matrix=games, win_rate_matrix=rates)


def records_of(counts: PairCounts) -> dict[str, Record]:
    """Each player's record from pair counts, without the head-to-head matrices (a live board
    needs only these, at every new judgement)."""
    wins, ties = counts.wins, counts.ties
    return {
        player: Record(player=player, wins=won, losses=lost, ties=tied)
        for player, won, lost, tied in zip(counts.players, wins.sum(axis=1).tolist(),
                                           wins.sum(axis=0).tolist(), ties.sum(axis=1).tolist())
    }


def round_robin_ranking(battles: Iterable[BattleLike]) -> list[str]:
    """Seed-style ranking: most wins first, then most ties, then name.

    The project's first leaderboard ranked this way (its Elo was `online_elo(k=32)`); kept so
    old boards can be reproduced. Counts judgements, ignoring weights, like `standings`.
    """
    wins: dict[str, int] = {}
    ties: dict[str, int] = {}
    for a, b, score, _, _ in map(unpack, battles):
        for player in (a, b):
            wins.setdefault(player, 0)
            ties.setdefault(player, 0)
        if score == 0.5:
            ties[a] += 1
            ties[b] += 1
        else:
            wins[a if score == 1.0 else b] += 1
    return sorted(wins, key=lambda p: (-wins[p], -ties[p], p))
