"""Battles as numbers: the one conversion from Python objects, and the pair counts every view needs.

A battle is a `Battle` or a tuple `(a, b, winner[, question_id[, weight]])`, winner "A" (a won),
"B" or "TIE" (a `Winner` or its string); a tie is half a point each way. `battle_table` indexes
battles once (players in name order); `pair_counts` folds them into n×n matrices, so a fit, its
intervals and the standings cost O(players²) after one counting pass, whatever the battle count.
`leaderboard.tally.Tally` keeps the same matrices up to date battle by battle.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .battle_table import BattleLike as BattleLike  # re-exported (`as`: explicitly, for mypy)
from .battle_table import BattleTable as BattleTable  # re-exported
from .battle_table import Columns as Columns  # re-exported
from .battle_table import Row as Row  # re-exported
from .battle_table import unpack as unpack  # re-exported
from .columns import table_of

CHANNELS = 6
"""The layers of a pair-count stack: see `channel_values`."""
POINTS, W2, W2S, W2SS, WINS, TIES = range(CHANNELS)


def battle_table(battles: Iterable[BattleLike] | BattleTable | Columns) -> BattleTable:
    """Index the battles once, so counting and refitting never touch Python objects again.

    A `BattleTable` passes through, so a caller running several views builds it once. Columns
    (a DataFrame, or a mapping of arrays, named `model_a`, `model_b`, `winner`[, `question_id`]
    [, `weight`], as Chatbot Arena's battle files are) and Python objects are converted in bulk
    by `leaderboard.columns`.
    """
    if isinstance(battles, BattleTable):
        return battles
    return table_of(battles)


def pair_sums(table: BattleTable, values_a: np.ndarray, values_b: np.ndarray) -> np.ndarray:
    """n×n matrix M with values_a added at [a, b] and values_b at [b, a], per battle."""
    n = len(table.players)
    flat = np.bincount(table.a * n + table.b, weights=values_a, minlength=n * n)
    flat += np.bincount(table.b * n + table.a, weights=values_b, minlength=n * n)
    return flat.reshape(n, n)


def points_matrix(table: BattleTable, weight: np.ndarray | None = None) -> np.ndarray:
    """W[i, j]: weighted points i took from j (a win 1, a tie ½): the Bradley-Terry data.

    One key per battle and two counts: S[a, b] the points a took in the battles keyed (a, b), G
    their weight; what b took there is G - S, so W = S + (G - S)ᵀ. Unweighted battles count G
    without weights (half the time of a weighted count): 8.3 → 3.8 ms at 1M battles."""
    n = len(table.players)
    key = table.a * n + table.b
    w = table.weight if weight is None else weight
    if weight is None and not (w != 1.0).any():
        games = np.bincount(key, minlength=n * n).astype(float)
        took = np.bincount(key, weights=table.score, minlength=n * n)
    else:
        games = np.bincount(key, weights=w, minlength=n * n)
        took = np.bincount(key, weights=w * table.score, minlength=n * n)
    took, games = took.reshape(n, n), games.reshape(n, n)
    return took + (games - took).T


def channel_values(score: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per battle, what it adds to each channel at [a, b] and at [b, a] (two CHANNELS×m arrays).

    POINTS: weighted points (the fit). W2, W2S, W2SS: squared weight times 1, the side's score
    and its square (the sandwich covariance). WINS, TIES: plain judgement counts (standings).
    """
    other = 1.0 - score
    w2 = weight * weight
    won, lost, tied = (score == 1.0) * 1.0, (score == 0.0) * 1.0, (score == 0.5) * 1.0
    at_ab = np.stack([weight * score, w2, w2 * score, w2 * score * score, won, tied])
    at_ba = np.stack([weight * other, w2, w2 * other, w2 * other * other, lost, tied])
    return at_ab, at_ba


def accumulate(stack: np.ndarray, a: np.ndarray, b: np.ndarray, score: np.ndarray, weight: np.ndarray) -> None:
    """Add battles (indices into the stack's players) to a CHANNELS×cap×cap stack, in place."""
    cap = stack.shape[1]
    at_ab, at_ba = channel_values(score, weight)
    layer = np.arange(CHANNELS)[:, None] * (cap * cap)
    index = np.concatenate([(layer + a * cap + b).ravel(), (layer + b * cap + a).ravel()])
    values = np.concatenate([at_ab.ravel(), at_ba.ravel()])
    if index.size * 8 < stack.size:  # a few battles: touch only their cells
        np.add.at(stack.reshape(-1), index, values)
    else:
        stack += np.bincount(index, weights=values, minlength=stack.size).reshape(stack.shape)


@dataclass(frozen=True)
class PairCounts:
    """Everything the board needs from a set of battles, per ordered pair of players (name order).

    `points[i, j]`: weighted points i took from j. `w2`, `w2s`, `w2ss`: sums over their battles of
    weight², weight²·(i's score), weight²·(i's score)². `wins[i, j]`: judgements i won against j;
    `ties[i, j]` (symmetric): their ties. Standings count judgements; the fit uses weights.
    """

    players: list[str]
    points: np.ndarray
    w2: np.ndarray
    w2s: np.ndarray
    w2ss: np.ndarray
    wins: np.ndarray
    ties: np.ndarray

    @classmethod
    def from_stack(cls, players: list[str], stack: np.ndarray) -> PairCounts:
        """From a CHANNELS×n×n stack whose rows and columns follow `players`."""
        counts = [stack[c] for c in range(CHANNELS)]
        wins, ties = (np.rint(counts[c]).astype(np.int64) for c in (WINS, TIES))
        return cls(players, counts[POINTS], counts[W2], counts[W2S], counts[W2SS], wins, ties)

    @classmethod
    def empty(cls) -> PairCounts:
        """No players, no battles."""
        return cls.from_stack([], np.zeros((CHANNELS, 0, 0)))

    @functools.cached_property
    def games(self) -> np.ndarray:
        """Judgements between i and j (symmetric, int); computed once: a board reads it several
        times (components, bounds, standings)."""
        return self.wins + self.wins.T + self.ties  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result

    def take(self, index: np.ndarray) -> PairCounts:
        """The counts among the players at `index` (ascending, so they stay in name order)."""
        cells = np.ix_(index, index)
        return PairCounts([self.players[i] for i in index], *(matrix[cells] for matrix in (
            self.points, self.w2, self.w2s, self.w2ss, self.wins, self.ties)))


def pair_counts(battles: Iterable[BattleLike] | BattleTable | Columns | PairCounts) -> PairCounts:
    """The pair counts of a set of battles (a `PairCounts` passes through)."""
    if isinstance(battles, PairCounts):
        return battles
    table = battle_table(battles)
    n = len(table.players)
    stack = np.zeros((CHANNELS, n, n))
    accumulate(stack, table.a, table.b, table.score, table.weight)
    return PairCounts.from_stack(table.players, stack)
