"""Rating maths: online Elo, and Bradley-Terry with closed-form and bootstrap intervals.

Ratings are views over judgements, recomputed on request, so the fits work on aggregated pair
counts (an n×n matrix built with `np.bincount`), never one row per battle: 100 players and a
million battles cost one pass to count plus a few Newton steps on a 100×100 system.

Conventions. A battle is a `Battle` or an `(a, b, winner)` tuple, winner "A" (a won), "B" or
"TIE" (a `Winner` or its string). A tie is half a win each way. Players are indexed 0..n-1 in
name order inside. Bradley-Terry ratings are on the Elo scale: rating = mean + scale·log_base
(strength), the geometric-mean player at `mean`, so the ratings average to `mean`.

Exceptions: `ConvergenceError` (a `RuntimeError`) when a Bradley-Terry fit has no finite
maximum or does not converge; `ValueError` for malformed battles (unknown winner, a player
against itself, a negative weight).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

from .types import Battle, Winner

BattleLike = Battle | tuple[str, str, Winner | str]

DEFAULT_RIDGE = 0.01
"""L2 penalty on the natural-log strengths: a weak prior (sd 10 nats, about 1700 Elo points)
that keeps unbeaten players finite and barely moves anyone who has both won and lost."""

_SCORE = {"A": 1.0, "B": 0.0, "TIE": 0.5}


class ConvergenceError(RuntimeError):
    """A Bradley-Terry fit has no finite maximum or did not converge in `max_iter` steps.

    With ridge=0 the maximum exists only when every split of the players into two groups has
    points won in both directions (Ford's condition: the win graph is strongly connected);
    an unbeaten or winless player breaks it, and the fit raises before iterating.
    """


@dataclass(frozen=True)
class BattleTable:
    """Battles as arrays: players in name order, a/b player indices, a's score (1, ½ or 0),
    weight. The one conversion from Python objects; everything after it is numpy."""

    players: list[str]
    a: np.ndarray
    b: np.ndarray
    score: np.ndarray
    weight: np.ndarray


def _unpack(item: BattleLike) -> tuple[str, str, float, float]:
    """(a, b, a's score, weight) of one battle, validated."""
    winner: Winner | str
    if isinstance(item, Battle):
        a, b, winner, weight = item.a, item.b, item.winner, item.weight
    else:
        a, b, winner = item
        weight = 1.0
    score = _SCORE.get(winner.value if isinstance(winner, Winner) else winner)
    if score is None:
        raise ValueError(f"unknown winner {winner!r}: expected 'A', 'B' or 'TIE'")
    if a == b:
        raise ValueError(f"a battle needs two different players, got {a!r} twice")
    if not weight >= 0:
        raise ValueError(f"battle weights must be >= 0, got {weight!r}")
    return a, b, score, weight


def battle_table(battles: Iterable[BattleLike] | BattleTable) -> BattleTable:
    """Index the battles once, so counting and refitting never touch Python objects again.

    A `BattleTable` passes through, so a caller running several views builds it once.
    """
    if isinstance(battles, BattleTable):
        return battles
    rows = [_unpack(item) for item in battles]
    players = sorted({row[0] for row in rows} | {row[1] for row in rows})
    index = {player: i for i, player in enumerate(players)}
    count = len(rows)
    return BattleTable(
        players=players,
        a=np.fromiter((index[row[0]] for row in rows), dtype=np.intp, count=count),
        b=np.fromiter((index[row[1]] for row in rows), dtype=np.intp, count=count),
        score=np.fromiter((row[2] for row in rows), dtype=float, count=count),
        weight=np.fromiter((row[3] for row in rows), dtype=float, count=count),
    )


def pair_sums(table: BattleTable, values_a: np.ndarray, values_b: np.ndarray) -> np.ndarray:
    """n×n matrix M with values_a added at [a, b] and values_b at [b, a], per battle."""
    n = len(table.players)
    flat = np.bincount(table.a * n + table.b, weights=values_a, minlength=n * n)
    flat += np.bincount(table.b * n + table.a, weights=values_b, minlength=n * n)
    return flat.reshape(n, n)


def points_matrix(table: BattleTable, weight: np.ndarray | None = None) -> np.ndarray:
    """W[i, j]: weighted points i took from j (a win 1, a tie ½): the Bradley-Terry data."""
    w = table.weight if weight is None else weight
    return pair_sums(table, w * table.score, w * (1.0 - table.score))


def online_elo(
    battles: Iterable[BattleLike],
    *,
    k: float = 32.0,
    initial: float = 1000.0,
    base: float = 10.0,
    scale: float = 400.0,
) -> dict[str, float]:
    """Classic online Elo, battles applied in the given order (order matters, by design).

    Each battle moves both sides by k·weight·(score - expected), tie = ½ point. Returns the
    final ratings by player name.
    """
    ratings: dict[str, float] = {}
    for item in battles:
        a, b, score, weight = _unpack(item)
        ra = ratings.setdefault(a, initial)
        rb = ratings.setdefault(b, initial)
        expected = 1.0 / (1.0 + base ** ((rb - ra) / scale))
        delta = k * weight * (score - expected)
        ratings[a] = ra + delta
        ratings[b] = rb - delta
    return dict(sorted(ratings.items()))


def _strongly_connected(adjacency: np.ndarray) -> bool:
    """Whether every node reaches every other along directed edges (Ford's condition)."""
    n = len(adjacency)

    def reaches_all(edges: np.ndarray) -> bool:
        seen = np.zeros(n, dtype=bool)
        seen[0] = True
        frontier = seen.copy()
        while frontier.any():
            frontier = edges[frontier].any(axis=0) & ~seen
            seen |= frontier
        return bool(seen.all())

    return reaches_all(adjacency) and reaches_all(adjacency.T)


def _objective(theta: np.ndarray, points: np.ndarray, ridge: float) -> float:
    """Penalised negative log-likelihood, plus (Σθ)²/2n, which pins the free shift at Σθ = 0."""
    diff = theta[:, None] - theta[None, :]
    nll = float(np.sum(points * np.logaddexp(0.0, -diff)))
    return nll + 0.5 * ridge * float(theta @ theta) + 0.5 * float(theta.sum()) ** 2 / len(theta)


def _hessian(theta: np.ndarray, games: np.ndarray, ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """(Hessian of the objective, P) where P[i, j] = P(i beats j)."""
    n = len(theta)
    prob = 0.5 * (1.0 + np.tanh(0.5 * (theta[:, None] - theta[None, :])))
    info = games * prob * prob.T
    hess = np.diag(info.sum(axis=1)) - info + ridge * np.eye(n) + 1.0 / n
    return hess, prob


def _fit_log_strengths(points: np.ndarray, ridge: float, tol: float, max_iter: int) -> np.ndarray:
    """Natural-log strengths summing to zero, by damped Newton on the penalised likelihood.

    Newton rather than MM: the objective is convex with a cheap n×n Hessian, so a handful of
    steps reach 1e-10, where MM needs hundreds of sweeps on lopsided data.
    """
    n = len(points)
    if ridge < 0:
        raise ValueError(f"ridge must be >= 0, got {ridge}")
    if n == 0:
        return np.zeros(0)
    if ridge == 0 and not _strongly_connected(points > 0):
        raise ConvergenceError(
            "no finite Bradley-Terry maximum with ridge=0: some group of players never lost "
            "(or never won) against the rest; use ridge > 0"
        )
    games = points + points.T
    won = points.sum(axis=1)
    theta = np.zeros(n)
    value = _objective(theta, points, ridge)
    for _ in range(max_iter):
        hess, prob = _hessian(theta, games, ridge)
        grad = (games * prob).sum(axis=1) - won + ridge * theta + theta.sum() / n
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError as exc:
            raise ConvergenceError(f"singular Bradley-Terry Hessian: {exc}") from exc
        if not np.all(np.isfinite(step)):
            raise ConvergenceError("Bradley-Terry Newton step is not finite")
        if np.max(np.abs(step)) < tol:
            theta = theta - step
            return theta - theta.mean()
        decrement = float(grad @ step)
        t = 1.0
        if decrement > 0.5:  # far from the optimum: backtrack until the objective drops enough
            while _objective(theta - t * step, points, ridge) > value - 0.25 * t * decrement:
                t *= 0.5
                if t < 1e-12:
                    raise ConvergenceError("Bradley-Terry line search failed")
        theta = theta - t * step
        value = _objective(theta, points, ridge)
    raise ConvergenceError(f"Bradley-Terry fit did not converge in {max_iter} Newton steps")


def _to_ratings(theta: np.ndarray, base: float, scale: float, mean: float) -> np.ndarray:
    """Natural-log strengths on the Elo scale."""
    return mean + theta * (scale / math.log(base))


def bradley_terry(
    battles: Iterable[BattleLike] | BattleTable,
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
    table = battle_table(battles)
    theta = _fit_log_strengths(points_matrix(table), ridge, tol, max_iter)
    return dict(zip(table.players, _to_ratings(theta, base, scale, mean).tolist()))


def _covariance(
    table: BattleTable, theta: np.ndarray, ridge: float, method: Literal["fisher", "sandwich"]
) -> np.ndarray:
    """Covariance of the sum-to-zero log-strengths.

    `fisher`: the inverse penalised Hessian restricted to Σθ = 0. `sandwich`: H⁻¹JH⁻¹ with J the
    observed spread of the per-battle scores, which credits ties with being less noisy than a
    coin flip, so it is narrower when ties are common.
    """
    n = len(theta)
    points = points_matrix(table)
    games = points + points.T
    hess, prob = _hessian(theta, games, ridge)
    inverse = np.linalg.inv(hess)
    if method == "fisher":
        return inverse - np.full((n, n), 1.0 / (n * (1.0 + ridge)))
    if method != "sandwich":
        raise ValueError(f"unknown interval method {method!r}: expected 'fisher' or 'sandwich'")
    w2, s = table.weight**2, table.score
    q0 = pair_sums(table, w2, w2)
    q1 = pair_sums(table, w2 * s, w2 * (1.0 - s))
    q2 = pair_sums(table, w2 * s * s, w2 * (1.0 - s) ** 2)
    spread = q2 - 2.0 * prob * q1 + prob**2 * q0
    outer = np.diag(spread.sum(axis=1)) - spread
    return inverse @ outer @ inverse


def bradley_terry_intervals(
    battles: Iterable[BattleLike] | BattleTable,
    *,
    ridge: float = DEFAULT_RIDGE,
    confidence: float = 0.95,
    base: float = 10.0,
    scale: float = 400.0,
    mean: float = 1000.0,
    method: Literal["fisher", "sandwich"] = "fisher",
    tol: float = 1e-10,
    max_iter: int = 100,
) -> dict[str, tuple[float, float, float]]:
    """(rating, low, high) per player: Bradley-Terry with closed-form normal intervals.

    One fit and one n×n inverse, cheap enough for every leaderboard request. The interval is
    for a player's rating relative to the field's mean (the sum-to-zero constraint).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    table = battle_table(battles)
    theta = _fit_log_strengths(points_matrix(table), ridge, tol, max_iter)
    if not table.players:
        return {}
    cov = _covariance(table, theta, ridge, method)
    factor = scale / math.log(base)
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * factor * np.sqrt(np.clip(np.diag(cov), 0, None))
    rating = _to_ratings(theta, base, scale, mean)
    return {
        player: (float(r), float(r - h), float(r + h))
        for player, r, h in zip(table.players, rating, half)
    }


def _question_groups(battles: Sequence[BattleLike]) -> np.ndarray:
    """Group index per battle (0..G-1): one per question id, a group of its own when there is none."""
    ids: dict[str, int] = {}
    groups: list[int] = []
    count = 0
    for item in battles:
        question = item.question_id if isinstance(item, Battle) else None
        if question is not None and question in ids:
            groups.append(ids[question])
            continue
        if question is not None:
            ids[question] = count
        groups.append(count)
        count += 1
    return np.asarray(groups, dtype=np.intp)


def bootstrap_intervals(
    battles: Sequence[BattleLike],
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
    resample is a multiplicity per question applied as battle weights, so each round is one
    bincount and one fit. A player absent from a resample is left out of that round.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    table = battle_table(battles)
    n = len(table.players)
    if n == 0:
        return {}
    groups = _question_groups(battles)
    group_count = int(groups.max()) + 1
    samples = np.full((rounds, n), np.nan)
    for r in range(rounds):
        draws = np.bincount(rng.integers(0, group_count, size=group_count), minlength=group_count)
        points = points_matrix(table, table.weight * draws[groups])
        present = (points + points.T).sum(axis=1) > 0
        theta = _fit_log_strengths(points[np.ix_(present, present)], ridge, tol, max_iter)
        samples[r, present] = _to_ratings(theta, base, scale, mean)
    alpha = (1.0 - confidence) / 2.0
    result: dict[str, tuple[float, float]] = {}
    for j, player in enumerate(table.players):
        column = samples[:, j][~np.isnan(samples[:, j])]
        if column.size == 0:
            result[player] = (math.nan, math.nan)
        else:
            low, high = np.quantile(column, [alpha, 1.0 - alpha])
            result[player] = (float(low), float(high))
    return result
