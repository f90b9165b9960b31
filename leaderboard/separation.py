"""Which contrasts of a Bradley-Terry model with a design the verdicts bound: Ford's condition
generalised to strengths that are sums of parameters (a system = its model + its scenario).

Why: for players alone, a rating is bounded exactly when the win graph is strongly connected
(`leaderboard.bounds`). With a design the question is which parameter directions d the
likelihood never penalises: those where every verdict's winner stays at or above its loser,
(Xd)_i ≥ (Xd)_j whenever i took points from j. Along such a direction the fit keeps improving
(separation) or stays flat (the design cannot tell two parameters apart), so only the ridge
prior stops it, and any contrast that moves along it (an effect) is the prior's number, not
the data's. Those directions form a convex cone; a contrast is bounded when it is constant on
the cone's linear span. The span is found exactly: inside a strongly connected piece of the
win graph every direction keeps strengths equal, and between pieces a small linear programme
(`_implicit_equalities`) finds the orderings no direction can make strict.
"""
from __future__ import annotations

import numpy as np

from .bounds import strong_components
from .fit import strongly_connected

TOL = 1e-9


def bounded_contrasts(points: np.ndarray, design: np.ndarray, contrasts: np.ndarray) -> np.ndarray:
    """Whether the verdicts bound each contrast (a row of `contrasts`, over the design's
    parameters), from the units' n×n `points` (i took points[i, j] from j; one connected group)
    and their n×p `design`."""
    free = free_directions(points, design)
    if free.shape[1] == 0:
        return np.ones(len(contrasts), dtype=bool)
    moved = np.abs(contrasts @ free).max(axis=1)
    return moved <= TOL * max(1.0, float(np.abs(contrasts).max(initial=0.0)))  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def free_directions(points: np.ndarray, design: np.ndarray) -> np.ndarray:
    """An orthonormal basis (p × r) of the span of the parameter directions along which the
    likelihood never falls (see the module's docstring)."""
    took = np.asarray(points) > 0
    n, p = design.shape
    labels = np.zeros(n, dtype=np.intp) if n <= 1 or strongly_connected(took) else strong_components(took)
    first = np.array([np.flatnonzero(labels == piece)[0] for piece in range(int(labels.max(initial=0)) + 1)])
    within = design - design[first[labels]]  # in a piece, every direction keeps strengths equal
    kept = null_space(within[np.any(within != 0, axis=1)], p)
    if len(first) == 1:
        return kept
    # Between pieces: piece a above piece b wherever a member of a took points from one of b.
    above = took & (labels[:, None] != labels[None, :])
    cells = np.unique(np.stack([labels[np.nonzero(above)[0]], labels[np.nonzero(above)[1]]], axis=1), axis=0)
    orders = (design[first[cells[:, 0]]] - design[first[cells[:, 1]]]) @ kept
    tight = _implicit_equalities(orders)
    return kept @ null_space(orders[tight], kept.shape[1])  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def null_space(matrix: np.ndarray, columns: int) -> np.ndarray:
    """An orthonormal basis (columns × r) of {y : matrix·y = 0}; all of R^columns for no rows."""
    if matrix.size == 0:
        return np.eye(columns)
    _, singular, vt = np.linalg.svd(matrix, full_matrices=True)
    rank = int((singular > TOL * max(1.0, float(singular.max(initial=0.0)))).sum())
    return vt[rank:].T


def _implicit_equalities(rows: np.ndarray) -> np.ndarray:
    """Which inequalities rows·y ≥ 0 every solution meets with equality. One linear programme:
    maximise Σ s_e subject to s_e ≤ rows_e·y and 0 ≤ s_e ≤ 1 (y free). An inequality some
    solution makes strict can reach s_e = 1 (scale that solution up), and sums of such solutions
    stay solutions, so the optimum sets s_e = 1 exactly for those and 0 for the rest."""
    norms = np.linalg.norm(rows, axis=1)
    tight = norms <= TOL
    live = np.flatnonzero(~tight)
    if live.size == 0 or rows.shape[1] == 0:
        return np.ones(len(rows), dtype=bool)
    g = rows[live] / norms[live, None]
    m, q = g.shape
    eye = np.eye(m)
    # Variables (u, w, s) ≥ 0 with y = u - w: s - g·(u - w) ≤ 0 and s ≤ 1.
    a = np.block([[-g, g, eye], [np.zeros((m, 2 * q)), eye]])
    b = np.concatenate([np.zeros(m), np.ones(m)])
    c = np.concatenate([np.zeros(2 * q), np.ones(m)])
    s = _simplex(a, b, c)[2 * q:]
    tight[live] = s < 0.5
    return tight  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def _simplex(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """x maximising c·x subject to a·x ≤ b, x ≥ 0, for b ≥ 0 (the origin is feasible) and a
    bounded optimum: the tableau simplex with Bland's rule, which cannot cycle on the many
    degenerate vertices these programmes have."""
    rows, cols = a.shape
    table = np.zeros((rows + 1, cols + rows + 1))
    table[:rows, :cols] = a
    table[:rows, cols:cols + rows] = np.eye(rows)
    table[:rows, -1] = b
    table[-1, :cols] = -c
    basis = np.arange(cols, cols + rows)
    while True:
        improving = np.flatnonzero(table[-1, :-1] < -TOL)
        if improving.size == 0:
            break
        enter = int(improving[0])
        column = table[:rows, enter]
        positive = np.flatnonzero(column > TOL)
        if positive.size == 0:
            raise ValueError("the linear programme is unbounded")
        ratios = table[positive, -1] / column[positive]
        ties = positive[ratios <= ratios.min() + TOL]
        leave = int(ties[np.argmin(basis[ties])])
        table[leave] /= table[leave, enter]
        others = np.arange(rows + 1) != leave
        table[others] -= np.outer(table[others, enter], table[leave])
        basis[leave] = enter
    x = np.zeros(cols + rows)
    x[basis] = table[:rows, -1]
    return x[:cols]
