"""Rating maths: online Elo, and Bradley-Terry with closed-form and bootstrap intervals.

Ratings are views over judgements, recomputed on request, so the fits work on aggregated pair
counts (`leaderboard.battles.PairCounts`: n×n matrices), never one row per battle: 100 players
and a million battles cost one pass to count plus a few Newton steps on a 100×100 system. The
same counts come from a `BattleTable` (all at once) or a `Tally` (battle by battle).

Conventions. A battle is a `Battle` or an `(a, b, winner[, question_id[, weight]])` tuple,
winner "A" (a won), "B" or "TIE" (a `Winner` or its string). A tie is half a win each way.
Players are indexed 0..n-1 in name order inside. Bradley-Terry ratings are on the Elo scale:
rating = mean + scale·log_base(strength), the geometric-mean player at `mean`, so the ratings
average to `mean`. Seed-style Elo (the project's first leaderboard) is `online_elo(k=32)`.

Exceptions: `ConvergenceError` (a `RuntimeError`) when a Bradley-Terry fit has no finite
maximum or does not converge; `ValueError` for malformed battles (unknown winner, a player
against itself, a negative weight) and bad arguments.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .battles import (  # noqa: F401  (re-exported: the rating API speaks in these terms)
    BattleLike,
    BattleTable,
    Columns,
    PairCounts,
    Row,
    pair_counts,
    pair_sums,
    points_matrix,
    unpack,
)
from .battles import battle_table as battle_table  # re-exported (`as`: explicitly, for mypy)
from .columns import coded_points, table_of
from .fit import (
    DEFAULT_RIDGE,
    Method,
    Pairs,
    covariance,
    elo_scale,
    fisher_variances,
    fit_log_strengths,
    fit_pairs,
    half_widths,
)
from .fit import ConvergenceError as ConvergenceError  # re-exported
from .sparse_fit import chosen, fit_sparse, pairs_of, sparse_variances
from .widths import KeptWidths

Battles = Iterable[BattleLike] | BattleTable | Columns | PairCounts

def apply_elo(
    ratings: dict[str, float], rows: Iterable[Row], *, k: float, initial: float, base: float, scale: float
) -> None:
    """Apply validated battles to `ratings` in order, in place: the one Elo update rule.

    Each battle moves both sides by k·weight·(score - expected), tie = ½ point; a new player
    starts at `initial`. `online_elo` and `Tally` both run through here, so they cannot drift.
    """
    for a, b, score, weight, _ in rows:
        ra = ratings.setdefault(a, initial)
        rb = ratings.setdefault(b, initial)
        expected = 1.0 / (1.0 + base ** ((rb - ra) / scale))
        delta = k * weight * (score - expected)
        ratings[a] = ra + delta
        ratings[b] = rb - delta


def online_elo(
    battles: Iterable[BattleLike] | BattleTable | Columns,
    *,
    k: float = 32.0,
    initial: float = 1000.0,
    base: float = 10.0,
    scale: float = 400.0,
) -> dict[str, float]:
    """Classic online Elo, battles applied in the given order (order matters, by design).

    Returns the final ratings by player name. `k=32` is the seed-style Elo. The battles are
    indexed once (`battle_table`) and the sequential loop runs over plain ints and floats, the
    same arithmetic as `apply_elo`, so both give the same ratings to the last bit.
    """
    table = table_of(battles, questions=False)
    ratings = [float(initial)] * len(table.players)
    for i, j, score, weight in zip(table.a.tolist(), table.b.tolist(), table.score.tolist(), table.weight.tolist()):
        ra, rb = ratings[i], ratings[j]
        delta = k * weight * (score - 1.0 / (1.0 + base ** ((rb - ra) / scale)))
        ratings[i] = ra + delta
        ratings[j] = rb - delta
    return dict(zip(table.players, ratings))


# ---------------------------------------------------------------- Bradley-Terry


def _points(battles: Battles) -> tuple[list[str], np.ndarray]:
    """Players and the points matrix, by the cheapest route for the input."""
    if isinstance(battles, PairCounts):
        return battles.players, battles.points
    coded = coded_points(battles)
    if coded is not None:
        return coded
    table = table_of(battles, questions=False)  # a fit resamples nothing: question ids unread
    return table.players, points_matrix(table)


def bradley_terry(
    battles: Battles,
    *,
    ridge: float = DEFAULT_RIDGE,
    base: float = 10.0,
    scale: float = 400.0,
    mean: float = 1000.0,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> dict[str, float]:
    """Bradley-Terry maximum (penalised) likelihood ratings on the Elo scale, by player.

    `ridge` is the L2 penalty on the natural-log strengths; ridge=0 is the plain MLE and raises
    `ConvergenceError` when it does not exist (e.g. an unbeaten player). `tol` bounds the last
    Newton step in natural-log units. Strength back from a rating: base**((r - mean)/scale).
    """
    players, points = _points(battles)
    theta = _fit(points, ridge=ridge, tol=tol, max_iter=max_iter, start=None)
    return dict(zip(players, (mean + theta * elo_scale(base, scale)).tolist()))


def _fit(points: np.ndarray, *, ridge: float, tol: float, max_iter: int, start: np.ndarray | None) -> np.ndarray:
    """The players' log-strengths: the dense fit, or above `sparse_fit.SPARSE_ABOVE` players
    (ridge > 0) the sparse one, the same optimum in O(pairs) per step instead of O(n²)."""
    if chosen(len(points)) == "sparse" and ridge > 0:
        return fit_sparse(pairs_of(points), ridge=ridge, tol=tol, max_iter=max_iter, start=start)
    return fit_log_strengths(points, ridge=ridge, tol=tol, max_iter=max_iter, start=start)


def bradley_terry_intervals(
    battles: Battles,
    *,
    ridge: float = DEFAULT_RIDGE,
    confidence: float = 0.95,
    base: float = 10.0,
    scale: float = 400.0,
    mean: float = 1000.0,
    method: Method = "fisher",
    tol: float = 1e-10,
    max_iter: int = 100,
    start: Mapping[str, float] | None = None,
    widths: KeptWidths | None = None,
) -> dict[str, tuple[float, float, float]]:
    """(rating, low, high) per player: Bradley-Terry with closed-form normal intervals.

    One fit and one n×n inverse, cheap enough for every leaderboard request; above
    `sparse_fit.SPARSE_ABOVE` players the sparse fit and its estimated (never narrower, at most
    a few per cent wider, as measured) Fisher widths instead, and `widths` is not used. The interval is
    for a player's rating relative to the field's mean (the sum-to-zero constraint). `start`
    (earlier ratings by player, on the same scale) warm-starts the fit: a board refitted after a
    few new judgements then needs a step or two instead of a full descent; the optimum is the same.
    `widths` (Fisher only): the variances a growing board kept, reused until enough changed
    (`leaderboard.widths`).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if method == "fisher":  # the points suffice: the other pair sums are the sandwich's
        players, points = _points(battles)
    else:
        counts = pair_counts(battles)
        players, points = counts.players, counts.points
    initial = None
    if start is not None and players:
        initial = np.array([(start.get(p, mean) - mean) / elo_scale(base, scale) for p in players])
        initial -= initial.mean()
    theta = _fit(points, ridge=ridge, tol=tol, max_iter=max_iter, start=initial)
    if not players:
        return {}
    if method == "fisher" and chosen(len(players)) == "sparse":  # estimated, conservative: see sparse_fit
        spread = sparse_variances(pairs_of(points), theta, ridge=ridge)
    elif method == "fisher" and widths is not None:
        spread = widths.variances_for(players, points, theta, ridge=ridge)
    elif method == "fisher":
        spread = fisher_variances(points, theta, ridge=ridge)
    else:
        spread = covariance(counts, theta, ridge=ridge, method=method)
    half = half_widths(spread, confidence, base, scale)
    rating = mean + theta * elo_scale(base, scale)
    return {
        player: (float(r), float(r - h), float(r + h))
        for player, r, h in zip(players, rating, half)
    }


# ---------------------------------------------------------------- bootstrap


def question_points(table: BattleTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cell, group, points): points per (question group, ordered pair cell i·n+j), summed.

    The bootstrap's whole data: one entry per cell a question touched, so a round costs one
    bincount over these instead of one over every battle.
    """
    n = len(table.players)
    cell = np.concatenate([table.a * n + table.b, table.b * n + table.a])
    group = np.concatenate([table.group, table.group]).astype(np.int64)
    value = np.concatenate([table.weight * table.score, table.weight * (1.0 - table.score)])
    keep = value != 0
    unique, inverse = np.unique(group[keep] * (n * n) + cell[keep], return_inverse=True)
    return unique % (n * n), unique // (n * n), np.bincount(inverse, weights=value[keep])


def pair_slots(pairs: Pairs, cell: np.ndarray) -> np.ndarray:
    """Where each ordered cell a·n+b (points a took from b) lands among the pairs' sums: slot k
    when a is pair k's i (its `won`), k + pairs when a is its j; every cell must belong to a pair."""
    n = pairs.size
    index = np.zeros(n * n, dtype=np.intp)
    index[pairs.i * n + pairs.j] = np.arange(len(pairs.i))
    index[pairs.j * n + pairs.i] = np.arange(len(pairs.i)) + len(pairs.i)
    return index[cell]  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def bootstrap_intervals(
    battles: Sequence[BattleLike] | BattleTable,
    rng: np.random.Generator,
    *,
    rounds: int = 100,
    confidence: float = 0.95,
    ridge: float = DEFAULT_RIDGE,
    base: float = 10.0,
    scale: float = 400.0,
    mean: float = 1000.0,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> dict[str, tuple[float, float]]:
    """(low, high) percentile intervals per player from refitting on resampled questions.

    Questions, not battles, are drawn with replacement: judgements on one question share its
    difficulty and quirks, so resampling them one by one would understate the spread. A
    resample is a multinomial count per question applied as weights to the per-question pair
    points, so a round is one bincount over (question, pair) cells and one warm-started fit.
    A player absent from a resample is left out of that round. The resample is summed straight
    into the full data's `Pairs` (`pair_slots`), and each round's Newton starts from the full fit.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    table = battle_table(battles)
    n = len(table.players)
    if n == 0:
        return {}
    cell, group, value = question_points(table)
    points = points_matrix(table)
    pairs = Pairs.of(points)
    full = fit_log_strengths(points, ridge=ridge, tol=tol, max_iter=max_iter)
    slot = pair_slots(pairs, cell)
    count, edges = table.groups, len(pairs.i)
    draws = rng.multinomial(count, np.full(count, 1.0 / count), size=rounds)
    samples = np.full((rounds, n), np.nan)
    for r in range(rounds):
        sums = np.bincount(slot, weights=value * draws[r, group], minlength=2 * edges)
        games = sums[:edges] + sums[edges:]
        present = (np.bincount(pairs.i, games, n) + np.bincount(pairs.j, games, n)) > 0
        if present.all() and ridge > 0:  # the usual round: the full data's pairs, refilled
            theta = fit_pairs(Pairs(n, pairs.i, pairs.j, games, sums[:edges]),
                              ridge=ridge, tol=tol, max_iter=max_iter, start=full)
        else:  # a player drew no battle (fit the others alone), or ridge=0 (check Ford's condition)
            points = np.bincount(cell, weights=value * draws[r, group], minlength=n * n).reshape(n, n)
            start = full[present] - full[present].mean()
            theta = fit_log_strengths(
                points[np.ix_(present, present)], ridge=ridge, tol=tol, max_iter=max_iter, start=start
            )
        samples[r, present] = mean + theta * elo_scale(base, scale)
    alpha = (1.0 - confidence) / 2.0
    if not np.isnan(samples).any():  # every player in every round: all quantiles at once
        low, high = np.quantile(samples, [alpha, 1.0 - alpha], axis=0)
        return {player: (float(lo), float(hi)) for player, lo, hi in zip(table.players, low, high)}
    result: dict[str, tuple[float, float]] = {}
    for j, player in enumerate(table.players):
        column = samples[:, j][~np.isnan(samples[:, j])]
        if column.size == 0:
            result[player] = (math.nan, math.nan)
        else:
            low, high = np.quantile(column, [alpha, 1.0 - alpha])
            result[player] = (float(low), float(high))
    return result
