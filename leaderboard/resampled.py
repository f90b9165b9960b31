"""A board's bootstrap intervals: questions resampled within each connected group, and marked
where the resamples cannot bound a rating or do not vary it.

Why not the plain percentiles of `ratings.bootstrap_intervals`: a board's rating is only as
good as the verdicts that bound it (`leaderboard.bounds`), and a resample can lose what bounded
it. Drop the one question on which an unbeaten-looking player lost and the resample says it is
better than everyone by an amount only the ridge sets; resample a group whose questions all gave
the same verdicts (one question, or a judge that answers every question alike) and every round
is the same fit, a zero-width interval the data cannot support. So each round checks Ford's
condition on the players it drew: when they all bound each other the round is an ordinary refit;
otherwise the largest set of them that still does (when it holds more than half of them) is
refitted alone and the rest count as unbounded in that round. A round's ratings keep the full
fit's mean over the players it rates, so a player a round did not draw (absent rounds are left
out, as in `bootstrap_intervals`) or could not bound does not shift everyone else. A player's
interval is the percentile interval over its rounds with its unbounded rounds placed, worst case,
in both tails: when they reach the percentile, the interval is `Missing.UNBOUNDED`. An interval
of no width is `Missing.NO_SPREAD`: the questions never disagree, so their resamples cannot
measure the spread (the closed-form interval can).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .battles import BattleLike, BattleTable, battle_table, pair_counts, points_matrix
from .components import components, split_table
from .fit import DEFAULT_RIDGE, Pairs, elo_scale, fit_log_strengths, fit_pairs, strongly_connected
from .ratings import pair_slots, question_points
from .types import Missing

NO_WIDTH = 1e-6  # Elo points: an interval narrower than this has no width


class Resampled(NamedTuple):
    """A player's bootstrap interval (low, high), or NaN bounds and why there is none."""

    low: float
    high: float
    missing: Missing | None = None


def board_bootstrap(
    battles: Sequence[BattleLike] | BattleTable,
    rng: np.random.Generator,
    *,
    rounds: int = 100,
    confidence: float = 0.95,
    ridge: float = DEFAULT_RIDGE,
    base: float = 10.0,
    scale: float = 400.0,
    mean: float = 1000.0,
) -> dict[str, Resampled]:
    """Each player's interval from `rounds` resamples of the questions of its connected group
    (groups in order, 1 first; each group the full verdicts bound draws on `rng`, so one seed
    gives one answer; a group they do not bound is `Missing.UNBOUNDED` without resampling)."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    table = battle_table(battles)
    found: dict[str, Resampled] = {}
    for part in split_table(table, components(pair_counts(table).games)):
        found.update(_group(part, rng, rounds=rounds, alpha=(1.0 - confidence) / 2.0, ridge=ridge,
                            points_per_nat=elo_scale(base, scale), mean=mean))
    return found


def _group(table: BattleTable, rng: np.random.Generator, *, rounds: int, alpha: float, ridge: float,
           points_per_nat: float, mean: float) -> dict[str, Resampled]:
    """`board_bootstrap` within one connected group."""
    n = len(table.players)
    points = points_matrix(table)
    if not strongly_connected(points > 0):
        return {player: Resampled(math.nan, math.nan, Missing.UNBOUNDED) for player in table.players}
    cell, group, value = question_points(table)
    pairs = Pairs.of(points)
    full = fit_log_strengths(points, ridge=ridge)
    slot = pair_slots(pairs, cell)
    edges = len(pairs.i)
    draws = rng.multinomial(table.groups, np.full(table.groups, 1.0 / table.groups), size=rounds)
    samples = np.full((rounds, n), np.nan)
    unbounded = np.zeros((rounds, n), dtype=bool)
    for r in range(rounds):
        sums = np.bincount(slot, weights=value * draws[r, group], minlength=2 * edges)
        won, lost = sums[:edges], sums[edges:]
        took = np.zeros((n, n), dtype=bool)
        took[pairs.i[won > 0], pairs.j[won > 0]] = True
        took[pairs.j[lost > 0], pairs.i[lost > 0]] = True
        present = took.any(axis=0) | took.any(axis=1)
        core = _majority_core(took, present)  # type: ignore[arg-type]  # numpy stubs: any(axis=) may be a scalar
        if core is None:
            unbounded[r, present] = True
            continue
        unbounded[r, present & ~core] = True
        if core.all():  # the usual round: every player drawn and bound
            theta = fit_pairs(Pairs(n, pairs.i, pairs.j, won + lost, won), ridge=ridge, start=full)
        else:  # refit the players that bound each other alone, at the full fit's mean over them
            drawn = np.bincount(cell, weights=value * draws[r, group], minlength=n * n).reshape(n, n)
            anchor = full[core].mean()
            theta = anchor + fit_log_strengths(drawn[np.ix_(core, core)], ridge=ridge, start=full[core] - anchor)
        samples[r, core] = mean + theta * points_per_nat
    return {player: _interval(samples[:, j], int(unbounded[:, j].sum()), alpha)
            for j, player in enumerate(table.players)}


def _majority_core(took: np.ndarray, present: np.ndarray) -> np.ndarray | None:
    """The players (a mask) of the strongly connected piece of `took` among `present` that holds
    more than half of them, or None when no piece does."""
    index = np.flatnonzero(present)
    sub = took[np.ix_(index, index)]
    if index.size >= 2 and strongly_connected(sub):
        return present.copy()
    left = np.ones(index.size, dtype=bool)
    for start in np.argsort(-(sub.sum(axis=0) + sub.sum(axis=1)), kind="stable"):
        if 2 * int(left.sum()) <= index.size:
            return None
        if not left[start]:
            continue
        piece = _reached(sub, start) & _reached(sub.T, start)
        if 2 * int(piece.sum()) > index.size and piece.sum() >= 2:
            core = np.zeros(len(present), dtype=bool)
            core[index[piece]] = True
            return core
        left &= ~piece
    return None


def _reached(edges: np.ndarray, start: int) -> np.ndarray:
    """The nodes a path along `edges` leads to from `start` (itself included)."""
    seen = np.zeros(len(edges), dtype=bool)
    seen[start] = True
    frontier = seen.copy()
    while frontier.any():
        frontier = edges[frontier].any(axis=0) & ~seen
        seen |= frontier
    return seen


def _interval(column: np.ndarray, unbounded: int, alpha: float) -> Resampled:
    """The percentile interval of one player's rounds (NaN: not drawn, left out), with its
    `unbounded` rounds placed in both tails (numpy's linear quantile when there are none)."""
    values = np.sort(column[~np.isnan(column)])
    total = values.size + unbounded
    if values.size == 0:
        return Resampled(math.nan, math.nan, Missing.UNBOUNDED)
    position = alpha * (total - 1) - unbounded  # into the values, with the unbounded rounds beyond them
    low, high = _at(values, position), _at(-values[::-1], position)  # the high tail read mirrored
    if low is None or high is None:
        return Resampled(math.nan, math.nan, Missing.UNBOUNDED)
    high = -high
    if high - low <= NO_WIDTH:
        return Resampled(math.nan, math.nan, Missing.NO_SPREAD)
    return Resampled(low, high)


def _at(values: np.ndarray, position: float) -> float | None:
    """The ascending `values` read at a fractional `position` by linear interpolation, as
    numpy's default quantile does; None when it falls before them (among the unbounded rounds)."""
    below = math.floor(position)
    if below < 0:
        return None
    above = min(below + 1, values.size - 1)
    return float(values[below] + (position - below) * (values[above] - values[below]))
