"""Bradley-Terry for big boards: work in the pairs that met, never in an n×n matrix.

Why: `fit.fit_pairs` builds its Newton Hessian as a dense n×n matrix and `fit.fisher_variances`
factorises one, so a fit costs O(n²) memory and O(n³) time: 1 s at 3,000 players, minutes at
10,000. Here the same model (ties half a point each way), the same ridge and the same centring
(the 11ᵀ/n term: ratings average to zero) are solved with the Hessian applied as a product over
the edge list (`np.bincount`), so a Newton step costs O(pairs) per conjugate-gradient iteration.
The optimum is the same one the dense fit finds (tests hold them to 0.01 Elo).

Intervals need the variances, diag(H⁻¹) less the centring's share. Their exact computation is
cubic, so `sparse_variances` estimates them: the first two terms of the Neumann series of the
weighted graph Laplacian (a player's own information, then its opponents' uncertainty), scaled
up by the largest ratio exact/estimate over `PROBES` players whose exact variance is solved by
conjugate gradients. See `sparse_variances` for the bound measured against the dense variances.

`chosen` says which fit a board of n players takes (`SPARSE_ABOVE`). Exceptions:
`ConvergenceError` when Newton or conjugate gradients do not converge.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np

from .fit import DEFAULT_RIDGE, ConvergenceError, Pairs

SPARSE_ABOVE = 1500
"""Players above which a board takes the sparse fit. Measured with bench/big_board.py on the
2-core EPYC (fit plus Fisher intervals, dense vs sparse; docs/benchmarks/big-boards.md): with
each player meeting ~60 others, 0.028 vs 0.045 s at 500 players, 0.10 vs 0.084 s at 1,000,
0.24 vs 0.12 s at 1,500, 2.2 vs 0.26 s at 3,000. Set above the sparse-graph crossover (500 to
1,000) so that boards where most pairs met, where the edge list is nearly n², keep the dense fit
up to where it still loses. At or below it a board is byte-for-byte the dense fit's."""

PROBES = 24
"""Players whose exact variance calibrates `sparse_variances` (each one conjugate-gradient solve)."""

SAFETY = 1.02
"""Extra margin on the calibrated variances (2%, so about 1% on a width): covers the players the
probes did not see, whose ratio exact/estimate was at most 1.3% above the probes' largest in
every measured board (docs/benchmarks/big-boards.md)."""


def chosen(players: int) -> Literal["dense", "sparse"]:
    """Which Bradley-Terry fit a board of `players` players takes."""
    return "sparse" if players > SPARSE_ABOVE else "dense"


def pairs_of(points: np.ndarray) -> Pairs:
    """The pairs that met, from an n×n points matrix, without `Pairs.of`'s n²/2 index arrays."""
    n = len(points)
    i, j = np.nonzero(np.triu(points + points.T, 1))
    won = points[i, j]
    return Pairs(n, i, j, won + points[j, i], won)


def _laplacian(pairs: Pairs, h: np.ndarray, ridge: float) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """(diagonal, product) of H = weighted Laplacian(h) + ridge·I + 11ᵀ/n, H applied as a function."""
    n, i, j = pairs.size, pairs.i, pairs.j
    degree = np.bincount(i, h, n) + np.bincount(j, h, n) + ridge

    def product(x: np.ndarray) -> np.ndarray:
        return degree * x - np.bincount(i, h * x[j], n) - np.bincount(j, h * x[i], n) + x.mean()  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result

    return degree + 1.0 / n, product


def _cg(apply: Callable[[np.ndarray], np.ndarray], rhs: np.ndarray, diagonal: np.ndarray, *, rtol: float,
        max_iter: int) -> np.ndarray:
    """H⁻¹·rhs by conjugate gradients preconditioned by H's diagonal (Jacobi)."""
    x = rhs / diagonal
    r = rhs - apply(x)
    limit = rtol * float(np.sqrt(rhs @ rhs))
    z = r / diagonal
    p, rz = z, float(r @ z)
    for _ in range(max_iter):
        if float(np.sqrt(r @ r)) <= limit:
            return x  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result
        q = apply(p)
        curvature = float(p @ q)
        if not curvature > 0:
            raise ConvergenceError("Bradley-Terry conjugate gradients lost positive curvature")
        alpha = rz / curvature
        x = x + alpha * p
        r = r - alpha * q
        z = r / diagonal
        rz, previous = float(r @ z), rz
        p = z + (rz / previous) * p
    raise ConvergenceError(f"Bradley-Terry conjugate gradients did not converge in {max_iter} iterations")


def _probabilities(beta: np.ndarray, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P(i beats j), d = βi - βj, e = exp(-|d|)) per pair, without overflow."""
    d = beta[i] - beta[j]
    e = np.exp(-np.abs(d))
    return np.where(d >= 0.0, 1.0, e) / (1.0 + e), d, e


def fit_sparse(
    pairs: Pairs,
    *,
    ridge: float = DEFAULT_RIDGE,
    tol: float = 1e-10,
    max_iter: int = 100,
    start: np.ndarray | None = None,
    cg_iter: int = 1000,
) -> np.ndarray:
    """Centred natural-log strengths: `fit.fit_pairs`'s damped Newton (same start, same Armijo
    search, same stop), each step solved by Jacobi-preconditioned CG on the edge list.

    The ridge=0 check (Ford's condition) is the caller's, as for `fit_pairs`.
    """
    if ridge < 0:
        raise ValueError(f"ridge must be >= 0, got {ridge}")
    n, i, j, g, w = pairs.size, pairs.i, pairs.j, pairs.games, pairs.won
    if n == 0:
        return np.zeros(0)

    def objective(beta: np.ndarray, d: np.ndarray, e: np.ndarray) -> float:
        softplus = np.maximum(d, 0.0) + np.log1p(e)
        return float(g @ softplus - w @ d) + 0.5 * (ridge * float(beta @ beta) + float(beta.sum()) ** 2 / n)

    if start is None:  # each player's log-odds of scoring against the field, as fit_pairs starts
        won = np.bincount(i, w, n) + np.bincount(j, g - w, n)
        played = np.bincount(i, g, n) + np.bincount(j, g, n)
        beta = np.log((won + 0.5) / (played - won + 0.5))
        beta -= beta.mean()
    else:
        beta = np.array(start, dtype=float)
    p, d, e = _probabilities(beta, i, j)
    previous = math.inf
    for _ in range(max_iter):
        r, h = g * p - w, g * p * (1.0 - p)
        grad = np.bincount(i, r, n) - np.bincount(j, r, n) + ridge * beta + beta.mean()
        diagonal, product = _laplacian(pairs, h, ridge)
        step = _cg(product, grad, diagonal, rtol=1e-12, max_iter=cg_iter)
        if not np.all(np.isfinite(step)):
            raise ConvergenceError("Bradley-Terry Newton step is not finite")
        size = float(np.max(np.abs(step)))
        if size < tol:
            beta = beta - step
            return beta - beta.mean()  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result
        decrement = float(grad @ step)
        t = 1.0
        trial = _probabilities(beta - step, i, j)
        if decrement > 0.5:
            value = objective(beta, d, e)
            while objective(beta - t * step, *trial[1:]) > value - 0.25 * t * decrement:
                t *= 0.5
                if t < 1e-12:
                    raise ConvergenceError("Bradley-Terry line search failed")
                trial = _probabilities(beta - t * step, i, j)
        beta = beta - t * step
        p, d, e = trial
        if t == 1.0 and size < previous < math.inf and size**3 < 0.01 * tol * previous**2:
            return beta - beta.mean()  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result
        previous = size if t == 1.0 else math.inf
    raise ConvergenceError(f"Bradley-Terry fit did not converge in {max_iter} Newton steps")


def sparse_variances(pairs: Pairs, beta: np.ndarray, *, ridge: float, probes: int = PROBES) -> np.ndarray:
    """Estimated `fit.fisher_variances` (diag of the centred inverse Fisher information), in O(pairs).

    H = D - A + 11ᵀ/n with D the information each player holds (plus ridge) and A its pairs'.
    The estimate is 1/Dᵢ + Σⱼ Aᵢⱼ²/(Dᵢ²Dⱼ) (two terms of H⁻¹'s Neumann series: a player's own
    games, then its opponents' uncertainty; D⁻¹ has no share in the common shift the centring
    takes off, so nothing is subtracted: measured, the estimate is then 0.2-0.6% above); then every
    player's is multiplied by the largest exact/estimate ratio among `probes` players spread
    over the range of degrees (each exact value one CG solve of H·x = eᵢ), times `SAFETY`. So it
    is exact or above for the probed players, and conservative elsewhere as far as measured:
    against the dense variances at 500 to 3,000 players it was never below them and at most a
    few per cent above (docs/benchmarks/big-boards.md; tests/test_sparse_fit.py holds the bound
    `WIDTH_BOUND` on widths).
    """
    n, i, j = pairs.size, pairs.i, pairs.j
    if n == 0:
        return np.zeros(0)
    p, _, _ = _probabilities(beta, i, j)
    h = pairs.games * p * (1.0 - p)
    diagonal, product = _laplacian(pairs, h, ridge)
    degree = diagonal - 1.0 / n
    field = 1.0 / (n * (1.0 + ridge))
    second = (np.bincount(i, h * h / degree[j], n) + np.bincount(j, h * h / degree[i], n)) / degree**2
    estimate = 1.0 / degree + second  # D⁻¹ never sees the shared shift, so nothing to take off
    order = np.argsort(degree, kind="stable")
    chosen_players = np.unique(order[np.linspace(0, n - 1, min(probes, n)).round().astype(np.intp)])
    ratio = 0.0
    for k in chosen_players.tolist():
        unit = np.zeros(n)
        unit[k] = 1.0
        exact = float(_cg(product, unit, diagonal, rtol=1e-8, max_iter=1000)[k]) - field
        ratio = max(ratio, exact / float(estimate[k]))
    return estimate * ratio * SAFETY


WIDTH_BOUND = 0.05
"""The widest relative gap allowed between a sparse interval width and the dense one (tested):
widths are never narrower than dense by more than 0.1% and never wider by more than this."""
