"""Ties as a model: Davidson's (1970) extension of Bradley-Terry, and the choice between the two.

The default board counts a tie as half a win each way (`leaderboard.ratings`), which keeps
published figures reproducible but treats a tie as two half-results, as noisy as a coin flip.
Davidson gives a tie its own probability, with one tie parameter ν for the whole board:

    P(i beats j) = π_i / D,   P(j beats i) = π_j / D,   P(tie) = ν·√(π_i·π_j) / D,
    D = π_i + π_j + ν·√(π_i·π_j).

With θ = ln π, d = (θ_i - θ_j)/2 and λ = ln ν, a pair's outcome is a log-linear model in
(d, λ) (features +1, -1, 0 for d; 0, 0, 1 for λ), so the negative log-likelihood is convex and
its Hessian is the expected (Fisher) information, equal to the observed information. With ν → 0
it is Bradley-Terry on the same scale: P(i beats j) → 1/(1 + e^(θ_j - θ_i)).

Conventions as in `leaderboard.ratings`: ratings = mean + scale·log_base(π), the log-strengths
centred to sum to zero, a ridge (L2 on the natural-log strengths, and on ln ν, so a board
without ties, or with nothing else, keeps a finite ν) and normal 95% intervals for the ratings
relative to the field's mean. ν's interval is normal on ln ν, so it stays positive.

Davidson counts judgements (`PairCounts.wins`, `.ties`); weighted battles are refused with a
ValueError, since their weighted wins and weighted ties cannot be told apart from the counts.
Exceptions otherwise as in `leaderboard.fit` (`ConvergenceError` when there is no finite maximum).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, get_args

import numpy as np

from .battles import PairCounts, pair_counts
from .fit import DEFAULT_RIDGE, ConvergenceError, centring, elo_scale, strongly_connected
from .newton import minimize, spd_solve
from .ratings import Battles, bradley_terry_intervals

Ties = Literal["half", "davidson"]
"""How a board counts a tie: `half` a win each way (Bradley-Terry, the default) or `davidson`."""


@dataclass(frozen=True)
class DavidsonFit:
    """A Davidson fit: (rating, low, high) per player, ν with its (ν, low, high) interval, and
    the log-likelihood of the judgements at the fit (unpenalised, no multinomial constant)."""

    ratings: dict[str, tuple[float, float, float]]
    tie_parameter: tuple[float, float, float]
    log_likelihood: float


@dataclass(frozen=True)
class TieFit:
    """What a board needs whichever tie model it uses: the same (rating, low, high) per player,
    and ν with its interval for `davidson` (None for `half`, which has no tie parameter)."""

    ratings: dict[str, tuple[float, float, float]]
    tie_parameter: tuple[float, float, float] | None


def _pair_terms(theta: np.ndarray, lam: float) -> tuple[np.ndarray, ...]:
    """(d, log D', p_win, p_loss, p_tie) per ordered pair, D' = e^d + e^-d + ν (D scaled by √(π_i π_j))."""
    d = 0.5 * (theta[:, None] - theta[None, :])
    log_denominator = np.logaddexp(np.logaddexp(d, -d), lam)
    return d, log_denominator, np.exp(d - log_denominator), np.exp(-d - log_denominator), np.exp(lam - log_denominator)


def _log_likelihood(theta: np.ndarray, lam: float, wins: np.ndarray, ties: np.ndarray) -> float:
    """Σ over judgements of ln P(outcome): each unordered pair once (ties are symmetric)."""
    d, log_denominator, *_ = _pair_terms(theta, lam)
    games = wins + wins.T + ties
    # Ordered pairs count each unordered pair twice: wins[i, j]·d_ij covers i's wins once,
    # while the tie and denominator terms appear at (i, j) and (j, i), hence the halves.
    return float(np.sum(wins * d) + 0.5 * lam * ties.sum() - 0.5 * np.sum(games * log_denominator))


def _gradient_hessian(theta: np.ndarray, lam: float, wins: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of the negative log-likelihood in (θ, λ), θ first, λ last.

    Per pair, with f = ln D': f_d = p_w - p_l, f_λ = p_t, f_dd = p_w + p_l - (p_w - p_l)²,
    f_λλ = p_t(1 - p_t), f_dλ = -(p_w - p_l)·p_t (the covariances of the features), and
    ∂d/∂θ_i = ½, ∂d/∂θ_j = -½.
    """
    n = len(theta)
    _, _, p_win, p_loss, p_tie = _pair_terms(theta, lam)
    games = (wins + wins.T + ties).astype(float)
    gap = p_win - p_loss
    grad = np.empty(n + 1)
    grad[:n] = 0.5 * ((games * gap).sum(axis=1) - (wins - wins.T).sum(axis=1))
    grad[n] = 0.5 * float((games * p_tie).sum() - ties.sum())
    info = 0.25 * games * (p_win + p_loss - gap * gap)
    cross = -games * gap * p_tie  # f_dλ per ordered pair; antisymmetric
    hess = np.empty((n + 1, n + 1))
    hess[:n, :n] = np.diag(info.sum(axis=1)) - info
    hess[:n, n] = hess[n, :n] = 0.5 * cross.sum(axis=1)
    hess[n, n] = 0.5 * float((games * p_tie * (1.0 - p_tie)).sum())
    return grad, hess


def _judgement_counts(counts: PairCounts) -> tuple[np.ndarray, np.ndarray]:
    """(wins, ties) as floats, after checking that every battle weighed 1."""
    wins, ties = counts.wins.astype(float), counts.ties.astype(float)
    if not np.allclose(counts.points, wins + 0.5 * ties, rtol=1e-9, atol=1e-9):
        raise ValueError("the Davidson fit counts judgements: battles with weights other than 1 are not supported")
    return wins, ties


def fit_davidson(
    wins: np.ndarray, ties: np.ndarray, *, ridge: float = DEFAULT_RIDGE, tol: float = 1e-10, max_iter: int = 100
) -> tuple[np.ndarray, float, np.ndarray]:
    """(θ centred, λ = ln ν, covariance of (θ, λ)) by damped Newton on the penalised likelihood.

    The covariance is the inverse penalised information restricted to Σθ = 0 (as
    `leaderboard.fit.covariance` does for Bradley-Terry). With ridge=0 a finite maximum needs
    every split of the players to have points both ways (a tie counts both ways) and some
    ties but not only ties; otherwise ConvergenceError before iterating.
    """
    if ridge < 0:
        raise ValueError(f"ridge must be >= 0, got {ridge}")
    n = len(wins)
    total_ties, total_games = float(ties.sum()) / 2.0, float(wins.sum() + ties.sum() / 2.0)
    if ridge == 0 and not (strongly_connected(wins + ties > 0) and 0 < total_ties < total_games):
        raise ConvergenceError(
            "no finite Davidson maximum with ridge=0: some group of players never lost (or never won) "
            "against the rest, or the board has no ties (or only ties); use ridge > 0"
        )
    constraint = np.zeros((n + 1, n + 1))
    constraint[:n, :n] = centring(np.zeros(n, dtype=np.intp))
    penalty = constraint + ridge * np.eye(n + 1)

    def objective(x: np.ndarray) -> float:
        return -_log_likelihood(x[:n], float(x[n]), wins, ties) + 0.5 * float(x @ penalty @ x)

    x = np.zeros(n + 1)
    x[n] = math.log(2.0 * (total_ties + 0.5) / (total_games - total_ties + 0.5))  # ν that fits the tie share at θ = 0
    def derivatives(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        grad, hess = _gradient_hessian(x[:n], float(x[n]), wins, ties)
        return grad + penalty @ x, hess + penalty

    x = minimize(objective, derivatives, x, tol=tol, max_iter=max_iter, what="Davidson")
    x[:n] -= x[:n].mean()
    _, hess = _gradient_hessian(x[:n], float(x[n]), wins, ties)
    cov = spd_solve(hess + penalty, np.eye(n + 1)) - constraint / (1.0 + ridge)
    return x[:n], float(x[n]), cov


def davidson_intervals(
    battles: Battles,
    *,
    ridge: float = DEFAULT_RIDGE,
    confidence: float = 0.95,
    base: float = 10.0,
    scale: float = 400.0,
    mean: float = 1000.0,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> DavidsonFit:
    """Davidson ratings with closed-form normal intervals, and ν with its interval.

    Same scale and centring as `bradley_terry_intervals`, so the two boards can be compared
    player by player. An empty board has no ratings and an undefined ν (nan).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    counts = pair_counts(battles)
    if not counts.players:
        return DavidsonFit({}, (math.nan, math.nan, math.nan), 0.0)
    wins, ties = _judgement_counts(counts)
    theta, lam, cov = fit_davidson(wins, ties, ridge=ridge, tol=tol, max_iter=max_iter)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    sd = np.sqrt(np.clip(np.diag(cov), 0, None))
    per_unit = elo_scale(base, scale)
    rating, half = mean + theta * per_unit, z * per_unit * sd[:-1]
    return DavidsonFit(
        ratings={p: (float(r), float(r - h), float(r + h)) for p, r, h in zip(counts.players, rating, half)},
        tie_parameter=(math.exp(lam), math.exp(lam - z * sd[-1]), math.exp(lam + z * sd[-1])),
        log_likelihood=_log_likelihood(theta, lam, wins, ties),
    )


def fit_with_ties(
    battles: Battles,
    ties: Ties = "half",
    *,
    ridge: float = DEFAULT_RIDGE,
    confidence: float = 0.95,
    base: float = 10.0,
    scale: float = 400.0,
    mean: float = 1000.0,
) -> TieFit:
    """(rating, low, high) per player under the chosen tie model, and ν for `davidson`.

    `half` is exactly `bradley_terry_intervals` (Fisher intervals), so published figures
    reproduce; `davidson` is `davidson_intervals`. One switch for a future `?ties=` option.
    """
    if ties == "half":
        board = bradley_terry_intervals(battles, ridge=ridge, confidence=confidence, base=base, scale=scale, mean=mean)
        return TieFit(board, None)
    if ties == "davidson":
        fit = davidson_intervals(battles, ridge=ridge, confidence=confidence, base=base, scale=scale, mean=mean)
        return TieFit(fit.ratings, fit.tie_parameter)
    raise ValueError(f"unknown tie model {ties!r}: expected one of {get_args(Ties)}")
