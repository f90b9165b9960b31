"""The Bradley-Terry engine on pair matrices: damped Newton, centring, closed-form covariance.

Everything here takes n×n pair sums (`PairCounts` or its `points`), never battles, so the same
code serves player ratings (a unit per player), the bootstrap's resamples and the additive
model/scenario effects (a unit per system, log-strength = design · parameters). Parameters are
natural-log strengths; `elo_scale` converts. Exceptions: `ConvergenceError` (a `RuntimeError`)
when there is no finite maximum or Newton does not converge; ValueError for bad arguments.
"""
from __future__ import annotations

import math
from statistics import NormalDist
from typing import Literal

import numpy as np

from .battles import PairCounts

DEFAULT_RIDGE = 0.01
"""L2 penalty on the natural-log strengths: a weak prior (sd 10 nats, about 1700 Elo points)
that keeps unbeaten players finite and barely moves anyone who has both won and lost."""

Method = Literal["fisher", "sandwich"]


class ConvergenceError(RuntimeError):
    """A Bradley-Terry fit has no finite maximum or did not converge in `max_iter` steps.

    With ridge=0 the maximum exists only when every split of the players into two groups has
    points won in both directions (Ford's condition: the win graph is strongly connected);
    an unbeaten or winless player breaks it, and the fit raises before iterating.
    """


def strongly_connected(adjacency: np.ndarray) -> bool:
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


def centring(groups: np.ndarray) -> np.ndarray:
    """C = Σ_g 1_g·1_gᵀ/|g|: βᵀCβ/2 pins each group's free shift at a zero mean.

    A Bradley-Terry likelihood only sees differences, so each group of parameters that can
    shift together (all players; all models; all scenarios) needs one constraint.
    """
    sizes = np.bincount(groups)
    return (groups[:, None] == groups[None, :]) / sizes[groups][:, None]


def _nll(theta: np.ndarray, points: np.ndarray) -> float:
    """Negative log-likelihood of the points given the log-strengths of the units."""
    return float(np.sum(points * np.logaddexp(0.0, theta[None, :] - theta[:, None])))


def _unit_hessian(theta: np.ndarray, games: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Hessian of the NLL in the units' log-strengths, P) where P[i, j] = P(i beats j)."""
    prob = 0.5 * (1.0 + np.tanh(0.5 * (theta[:, None] - theta[None, :])))
    info = games * prob * prob.T
    return np.diag(info.sum(axis=1)) - info, prob


def spd_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """matrix⁻¹·rhs (rhs a vector or a matrix) for a symmetric positive definite matrix.

    Cholesky, then forward and back substitution row by row. Not `np.linalg.solve`/`inv`: on
    this 2-core machine, busy with other processes, OpenBLAS's threaded LU on a 100×100 system
    took 0.1 ms in a tight loop but ~100 ms when called between other work (its threads wake
    up), while the Cholesky factor and 2n dot products stay under a millisecond either way.
    Raises ConvergenceError if the matrix is not positive definite.
    """
    try:
        lower = np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError as exc:
        raise ConvergenceError(f"Bradley-Terry Hessian is not positive definite: {exc}") from exc
    n = len(matrix)
    y = np.empty(rhs.shape)
    for i in range(n):
        y[i] = (rhs[i] - lower[i, :i] @ y[:i]) / lower[i, i]
    upper = np.ascontiguousarray(lower.T)
    x = np.empty(rhs.shape)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - upper[i, i + 1:] @ x[i + 1:]) / upper[i, i]
    return x


def _project(matrix: np.ndarray, design: np.ndarray | None) -> np.ndarray:
    """Xᵀ M X (M itself when X is the identity)."""
    return matrix if design is None else design.T @ matrix @ design


def fit_log_strengths(
    points: np.ndarray,
    *,
    ridge: float = DEFAULT_RIDGE,
    tol: float = 1e-10,
    max_iter: int = 100,
    design: np.ndarray | None = None,
    groups: np.ndarray | None = None,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """Natural-log parameters β, by damped Newton on the penalised likelihood.

    Unit i (a player, or a system) has log-strength θ = Xβ (X = `design`, the identity when
    None); `points[i, j]` are the points i took from j. Each group of β (`groups`, one group
    when None) is centred to mean 0. Newton rather than MM: the objective is convex with a cheap
    Hessian, so a handful of steps reach 1e-10, where MM needs hundreds of sweeps on lopsided
    data. `start` warm-starts it (a bootstrap round starts from the full fit).
    """
    if ridge < 0:
        raise ValueError(f"ridge must be >= 0, got {ridge}")
    size = len(points) if design is None else design.shape[1]
    if size == 0:
        return np.zeros(0)
    if ridge == 0 and design is None and not strongly_connected(points > 0):
        raise ConvergenceError(
            "no finite Bradley-Terry maximum with ridge=0: some group of players never lost "
            "(or never won) against the rest; use ridge > 0"
        )
    groups = np.zeros(size, dtype=np.intp) if groups is None else groups
    penalty = centring(groups) + ridge * np.eye(size)
    games, won = points + points.T, points.sum(axis=1)

    def theta_of(beta: np.ndarray) -> np.ndarray:
        return beta if design is None else design @ beta

    def objective(beta: np.ndarray) -> float:
        return _nll(theta_of(beta), points) + 0.5 * float(beta @ penalty @ beta)

    beta = np.zeros(size) if start is None else np.array(start, dtype=float)
    value = objective(beta)
    for _ in range(max_iter):
        unit_hess, prob = _unit_hessian(theta_of(beta), games)
        unit_grad = (games * prob).sum(axis=1) - won
        grad = (unit_grad if design is None else design.T @ unit_grad) + penalty @ beta
        step = spd_solve(_project(unit_hess, design) + penalty, grad)
        if not np.all(np.isfinite(step)):
            raise ConvergenceError("Bradley-Terry Newton step is not finite")
        if np.max(np.abs(step)) < tol:
            beta = beta - step
            return beta - centring(groups) @ beta
        decrement = float(grad @ step)
        t = 1.0
        if decrement > 0.5:  # far from the optimum: backtrack until the objective drops enough
            while objective(beta - t * step) > value - 0.25 * t * decrement:
                t *= 0.5
                if t < 1e-12:
                    raise ConvergenceError("Bradley-Terry line search failed")
        beta = beta - t * step
        value = objective(beta)
    raise ConvergenceError(f"Bradley-Terry fit did not converge in {max_iter} Newton steps")


def covariance(
    counts: PairCounts,
    beta: np.ndarray,
    *,
    ridge: float,
    method: Method = "fisher",
    design: np.ndarray | None = None,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """Covariance of the centred parameters β fitted by `fit_log_strengths` on `counts`.

    `fisher`: the inverse penalised Hessian restricted to the centring constraints. `sandwich`:
    H⁻¹JH⁻¹ with J the observed spread of the per-battle scores, which credits ties with being
    less noisy than a coin flip, so it is narrower when ties are common.
    """
    if method not in ("fisher", "sandwich"):
        raise ValueError(f"unknown interval method {method!r}: expected 'fisher' or 'sandwich'")
    size = len(beta)
    centre = centring(np.zeros(size, dtype=np.intp) if groups is None else groups)
    theta = beta if design is None else design @ beta
    unit_hess, prob = _unit_hessian(theta, counts.points + counts.points.T)
    inverse = spd_solve(_project(unit_hess, design) + ridge * np.eye(size) + centre, np.eye(size))
    if method == "fisher":
        return inverse - centre / (1.0 + ridge)
    spread = counts.w2ss - 2.0 * prob * counts.w2s + prob**2 * counts.w2
    outer = np.diag(spread.sum(axis=1)) - spread
    return inverse @ _project(outer, design) @ inverse


def elo_scale(base: float, scale: float) -> float:
    """Elo points per natural-log unit of strength."""
    return scale / math.log(base)


def half_widths(cov: np.ndarray, confidence: float, base: float, scale: float) -> np.ndarray:
    """Normal-interval half-widths on the Elo scale from a covariance in natural-log units."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return z * elo_scale(base, scale) * np.sqrt(np.clip(np.diag(cov), 0, None))
