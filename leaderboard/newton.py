"""One damped Newton method for every fit of the package (Bradley-Terry, Davidson, style
control, anchored ratings, effects): each fit says what it minimises and how its derivatives
look, and `minimize` takes the steps, so a fix to the method reaches every fit at once.

A step solves H·s = g with `spd_solve` (every objective here is strictly convex once its
ridge or centring is added); far from the optimum (the Newton decrement gᵀs above
`search_above`) it backtracks until the objective drops by a quarter of what the step
promises (Armijo), and it stops when no coordinate of the step exceeds `tol`. Exceptions:
`ConvergenceError` (a `RuntimeError`).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

Objective = Callable[[np.ndarray], float]
Derivatives = Callable[[np.ndarray], "tuple[np.ndarray, np.ndarray]"]
"""x -> (gradient, Hessian) of the objective at x."""

FAR = 0.5
"""The Newton decrement above which a step may overshoot: below it a full step is taken (the
quadratic model is good there, and the objective's rounding would make a search stall)."""


class ConvergenceError(RuntimeError):
    """A Bradley-Terry fit has no finite maximum or did not converge in `max_iter` steps.

    With ridge=0 the maximum exists only when every split of the players into two groups has
    points won in both directions (Ford's condition: the win graph is strongly connected);
    an unbeaten or winless player breaks it, and the fit raises before iterating.
    """


def spd_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """matrix⁻¹·rhs (rhs a vector or a matrix) for a symmetric positive definite matrix.

    Cholesky, then forward and back substitution in blocks of `BLOCK_ROWS` rows (a small dense
    solve per diagonal block, a product for the rest). Not `np.linalg.solve`/`inv` on the whole
    matrix: on this 2-core machine, busy with other processes, OpenBLAS's threaded LU on a
    100×100 system took 0.1 ms in a tight loop but ~100 ms when called between other work (its
    threads wake up); the blocks stay under OpenBLAS's threading threshold, and blocking rather
    than a row-by-row loop takes a 400×400 solve for one right-hand side from 3.9 to 2.8 ms of
    CPU (one thread; an inverse stays ~15 ms). Raises ConvergenceError if the matrix is not
    positive definite.
    """
    try:
        lower = np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError as exc:
        raise ConvergenceError(f"Bradley-Terry Hessian is not positive definite: {exc}") from exc
    y = _forward(lower, np.asarray(rhs, dtype=float))
    # Lᵀx = y is a forward substitution once rows and columns are taken in reverse order.
    return _forward(np.ascontiguousarray(lower.T[::-1, ::-1]), y[::-1])[::-1]


BLOCK_ROWS = 64
"""Rows per block in `spd_solve`'s substitutions (64×64 LU: below OpenBLAS's threading size)."""


def _forward(lower: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """lower⁻¹·rhs for a lower-triangular `lower`, block by block."""
    y = np.empty(rhs.shape)
    for start in range(0, len(lower), BLOCK_ROWS):
        end = min(start + BLOCK_ROWS, len(lower))
        part = rhs[start:end] - lower[start:end, :start] @ y[:start] if start else rhs[start:end]
        y[start:end] = np.linalg.solve(lower[start:end, start:end], part)
    return y


def minimize(objective: Objective, derivatives: Derivatives, start: np.ndarray, *, tol: float,
             max_iter: int, what: str, search_above: float = FAR) -> np.ndarray:
    """The minimiser of a smooth strictly convex `objective` from `start` by damped Newton
    steps; `what` names the fit in its errors. The last full step is taken at the end, so the
    result is within about tol² of the optimum. `search_above`: line-search every step whose
    decrement is above it (`FAR`; a tiny value searches every step that can still descend)."""
    x = np.array(start, dtype=float)
    value = objective(x)
    for _ in range(max_iter):
        grad, hess = derivatives(x)
        step = spd_solve(hess, grad)
        if not np.all(np.isfinite(step)):
            raise ConvergenceError(f"{what} Newton step is not finite")
        if np.max(np.abs(step), initial=0.0) < tol:
            return x - step  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result
        decrement = float(grad @ step)
        t, trial = 1.0, x - step
        trial_value = objective(trial)
        if decrement > search_above:  # far from the optimum: backtrack until the objective drops enough
            while trial_value > value - 0.25 * t * decrement:
                t *= 0.5
                if t < 1e-12:
                    raise ConvergenceError(f"{what} line search failed")
                trial = x - t * step
                trial_value = objective(trial)
        x, value = trial, trial_value
    raise ConvergenceError(f"{what} fit did not converge in {max_iter} Newton steps")
