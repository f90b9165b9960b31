"""The running aggregate behind a leaderboard, updated battle by battle.

A board is a fit over pair counts plus live Elo, so a service can keep one `Tally` per view and
feed it only the judgements that arrived since the last request: memory O(players²), an update
O(new battles), a board O(players³) whatever the number of battles so far. `build_board` runs
through a Tally too, so the incremental board and the from-scratch board cannot drift.
"""
from __future__ import annotations

import copy as _copy
import math
from collections.abc import Iterable, Mapping

import numpy as np

from .battles import CHANNELS, BattleLike, PairCounts, accumulate, unpack
from .bounds import bounds
from .components import components
from .ranks import rank_intervals
from .ratings import apply_elo, bradley_terry_intervals
from .standings import records_of
from .types import Rating
from .widths import KeptWidths

ELO_INITIAL, BASE, SCALE = 1000.0, 10.0, 400.0


class Tally:
    """Online Elo, W/L/T counts and the Bradley-Terry pair sums of every battle added so far.

    `board()` equals `build_board(all battles added, k=k)`. New players may appear in any
    `add`; an `add` with a malformed battle raises ValueError and changes nothing.
    """

    def __init__(self, *, k: float = 32.0) -> None:
        self.k = k
        self._elo: dict[str, float] = {}
        self._index: dict[str, int] = {}  # player → row in the stack: name order (rows past them are zero)
        self._stack = np.zeros((CHANNELS, 0, 0))
        self._battles = 0
        self._fitted: dict[str, float] | None = None  # the last board's ratings: the next fit's start
        self._widths = KeptWidths()  # the last board's interval variances: kept while little changed

    @property
    def battles(self) -> int:
        """How many battles have been added."""
        return self._battles

    @property
    def players(self) -> list[str]:
        """Players seen so far, in name order."""
        return list(self._index)

    def add(self, battles: Iterable[BattleLike]) -> None:
        """Count battles, in order (the order matters to Elo only)."""
        rows = [unpack(item) for item in battles]  # validate all before touching any state
        if not rows:
            return
        apply_elo(self._elo, rows, k=self.k, initial=ELO_INITIAL, base=BASE, scale=SCALE)
        new = {p for a, b, *_ in rows for p in (a, b)} - self._index.keys()
        if new:
            self._place(new)
        index = self._index
        accumulate(
            self._stack,
            np.fromiter((index[row[0]] for row in rows), dtype=np.intp, count=len(rows)),
            np.fromiter((index[row[1]] for row in rows), dtype=np.intp, count=len(rows)),
            np.fromiter((row[2] for row in rows), dtype=float, count=len(rows)),
            np.fromiter((row[3] for row in rows), dtype=float, count=len(rows)),
        )
        self._battles += len(rows)

    def _place(self, new: set[str]) -> None:
        """Give new players rows, keeping every row in name order, so that `counts` is a slice
        rather than a gather (at 400 players 0.4 ms instead of 7: the live board reads it at
        every new judgement). Capacity doubles, so growth stays amortised O(1); re-sorting the
        rows costs O(players²) only when a player first appears."""
        old = list(self._index)
        names = sorted([*old, *new])
        index = {p: i for i, p in enumerate(names)}
        capacity = self._stack.shape[1]
        size = capacity if len(names) <= capacity else max(len(names), 2 * capacity, 8)
        placed = np.zeros((CHANNELS, size, size))
        at = np.array([index[p] for p in old], dtype=np.intp)
        placed[:, at[:, None], at] = self._stack[:, :len(old), :len(old)]
        self._stack, self._index = placed, index

    def counts(self) -> PairCounts:
        """The pair counts so far, players in name order."""
        n = len(self._index)
        return PairCounts.from_stack(list(self._index), self._stack[:, :n, :n].copy())

    def elo(self) -> dict[str, float]:
        """Online Elo so far, by player name (as `online_elo` returns it)."""
        return dict(sorted(self._elo.items()))

    def board(self, counts: PairCounts | None = None) -> list[Rating]:
        """The leaderboard rows, best first; see `leaderboard.board.build_board`. `counts`: this
        tally's `counts()`, when the caller already holds them (a board served with its matrix)."""
        rows = board_from_counts(self.counts() if counts is None else counts, self._elo, start=self._fitted,
                                 widths=self._widths)
        self._fitted = {row.player: row.rating for row in rows}
        return rows

    def copy(self) -> Tally:
        """An independent copy (O(players²)): fork a board without recounting."""
        twin = _copy.copy(self)
        twin._elo = dict(self._elo)
        twin._index = dict(self._index)
        twin._stack = self._stack.copy()
        twin._fitted = None if self._fitted is None else dict(self._fitted)
        twin._widths = self._widths.copy()
        return twin


def board_from_counts(
    counts: PairCounts, elo: dict[str, float], *, start: Mapping[str, float] | None = None,
    widths: KeptWidths | None = None,
) -> list[Rating]:
    """Rows by component (1 = the largest, see `leaderboard.components`), best first within one
    (rating descending, then name), from pair counts and live Elo.

    Each component is fitted on its own: rating/ci_low/ci_high are Bradley-Terry with the
    default ridge and a 95% closed-form (Fisher) interval, the component's mean player at 1000,
    so ratings compare within a component only. Also filled in: `component`, `rank` (1-based position
    within the component), `rank_low`/`rank_high` (best and worst rank there the intervals allow,
    see `leaderboard.ranks`), `bounded`, `points` (wins + ½ ties) and `win_rate`.

    A component whose verdicts do not bound its ratings (someone won every game against the
    rest: `leaderboard.bounds`) gets no interval (NaN, null in the API) and `bounded` False; its
    ranks and rank ranges come from who beat whom, and its ratings (set partly by the ridge)
    only order it.

    `widths`: a growing board's kept interval variances (`leaderboard.widths`), used for a board
    of one component (a board in pieces recomputes them).
    """
    if not counts.players:
        return []
    labels = components(counts.games)
    if labels.max() == 1:  # the usual case: one piece, no copies
        return _component_rows(counts, elo, start, 1, widths)
    rows: list[Rating] = []
    for piece in range(1, int(labels.max()) + 1):
        rows += _component_rows(counts.take(np.flatnonzero(labels == piece)), elo, start, piece)
    return rows


def _component_rows(
    counts: PairCounts, elo: dict[str, float], start: Mapping[str, float] | None, component: int,
    widths: KeptWidths | None = None,
) -> list[Rating]:
    """The rows of one connected component, best first."""
    fitted = bradley_terry_intervals(counts, confidence=0.95, start=start, widths=widths)
    records = records_of(counts)
    found = bounds(counts.points)
    if found.bounded:
        ranks = rank_intervals({p: (low, high) for p, (_, low, high) in fitted.items()})
    else:  # the ridge alone would set the gaps: no interval, ranks from who beat whom
        ranks = {p: (int(lo), int(hi)) for p, lo, hi in zip(counts.players, found.rank_low, found.rank_high)}
        fitted = {p: (rating, math.nan, math.nan) for p, (rating, _, _) in fitted.items()}
    # Rounded so that float noise between equal ratings cannot beat the name order; an unbounded
    # group keeps the order its clean wins impose first.
    order = sorted(fitted, key=lambda p: (ranks[p][0] if not found.bounded else 0, -round(fitted[p][0], 9), p))
    rows: list[Rating] = []
    for position, player in enumerate(order, start=1):
        rating, low, high = fitted[player]
        record = records[player]
        rows.append(
            Rating(
                player=player,
                rating=rating,
                ci_low=low,
                ci_high=high,
                elo=elo[player],
                wins=record.wins,
                losses=record.losses,
                ties=record.ties,
                matches=record.matches,
                component=component,
                bounded=found.bounded,
                rank=position,
                rank_low=ranks[player][0],
                rank_high=ranks[player][1],
                points=record.points,
                win_rate=record.win_rate,
            )
        )
    return rows
