"""The Bradley-Terry engine itself (leaderboard.fit), beyond what its callers show.

The players' route (`fit_pairs`: pairs that met, conjugate gradients, the early stop) must land
on the optimum of the general damped Newton (forced here by an identity design), dense or
sparse, warm-started or not, and when CG stalls and the Cholesky takes over; `spd_solve`'s
blocked substitutions must solve across block edges; `fisher_variances` must be the diagonal
of the Fisher covariance; a bootstrap round that loses a player must equal refitting the
others alone.
"""
from __future__ import annotations

import numpy as np
import pytest

from leaderboard.battles import pair_counts
from leaderboard.fit import (
    ConvergenceError,
    Pairs,
    _cg,
    covariance,
    fisher_variances,
    fit_log_strengths,
    fit_pairs,
    spd_solve,
)
from leaderboard.ratings import bootstrap_intervals, bradley_terry
from leaderboard.types import Battle, Winner


def points_of(rng: np.random.Generator, n: int, m: int, *, spread: float = 1.0, chain: bool = False) -> np.ndarray:
    """n×n points from m random battles (a chain a→a+1 when `chain`), 20% ties."""
    truth = rng.normal(0.0, spread, n)
    a = rng.integers(0, n, m)
    b = (a + 1) % n if chain else (a + rng.integers(1, n, m)) % n
    p = 1.0 / (1.0 + np.exp(truth[b] - truth[a]))
    score = np.where(rng.random(m) < 0.2, 0.5, (rng.random(m) < p).astype(float))
    return (np.bincount(a * n + b, score, n * n) + np.bincount(b * n + a, 1.0 - score, n * n)).reshape(n, n)


@pytest.mark.parametrize(("n", "m", "ridge", "chain"), [
    (2, 5, 0.01, False), (5, 40, 0.01, False), (30, 3000, 0.01, False), (120, 50_000, 0.01, False),
    (40, 200, 1e-4, True), (25, 5000, 0.0, False), (60, 30, 1.0, False),
])
def test_the_players_route_lands_on_the_general_newton_optimum(n: int, m: int, ridge: float, chain: bool) -> None:
    points = points_of(np.random.default_rng(n + m), n, m, chain=chain)
    general = fit_log_strengths(points, ridge=ridge, design=np.eye(n))
    assert fit_log_strengths(points, ridge=ridge) == pytest.approx(general, abs=1e-9)
    start = general + np.random.default_rng(1).normal(0.0, 0.3, n)
    assert fit_pairs(Pairs.of(points), ridge=ridge, start=start - start.mean()) == pytest.approx(general, abs=1e-9)


def test_a_stalled_conjugate_gradient_hands_over_to_the_cholesky() -> None:
    # A long chain with a tiny ridge: the Laplacian's condition number grows as n², so CG
    # cannot reach 1e-12 within its iterations and the step comes from `spd_solve` instead.
    n = 300
    points = points_of(np.random.default_rng(4), n, 20 * n, chain=True, spread=0.3)
    hess = np.diag(np.full(n, 2.0)) - np.eye(n, k=1) - np.eye(n, k=-1) + 1e-6 * np.eye(n) + 1.0 / n
    assert _cg(hess, np.arange(n, dtype=float), np.diag(hess).copy()) is None
    general = fit_log_strengths(points, ridge=1e-6, design=np.eye(n))
    assert fit_log_strengths(points, ridge=1e-6) == pytest.approx(general, abs=1e-8)


def test_the_players_route_refuses_what_the_general_one_refuses() -> None:
    points = np.array([[0.0, 3.0], [0.0, 0.0]])  # one player never lost: no finite MLE
    with pytest.raises(ConvergenceError, match="ridge=0"):
        fit_log_strengths(points, ridge=0.0)
    with pytest.raises(ValueError, match="ridge must be >= 0"):
        fit_pairs(Pairs.of(points), ridge=-1.0)
    assert fit_pairs(Pairs.of(np.zeros((0, 0)))).shape == (0,)


@pytest.mark.parametrize("n", [1, 3, 63, 64, 65, 130])
def test_spd_solve_solves_across_block_edges(n: int) -> None:
    rng = np.random.default_rng(n)
    root = rng.normal(size=(n, n))
    matrix = root @ root.T + n * np.eye(n)
    for rhs in (rng.normal(size=n), rng.normal(size=(n, 3)), np.eye(n)):
        assert spd_solve(matrix, rhs) == pytest.approx(np.linalg.solve(matrix, rhs), abs=1e-10)


def test_spd_solve_refuses_a_matrix_that_is_not_positive_definite() -> None:
    with pytest.raises(ConvergenceError, match="not positive definite"):
        spd_solve(np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones(2))


@pytest.mark.parametrize(("n", "m"), [(3, 40), (70, 4000), (150, 20_000)])
def test_fisher_variances_are_the_diagonal_of_the_fisher_covariance(n: int, m: int) -> None:
    rng = np.random.default_rng(m)
    names = [f"p{k:03d}" for k in range(n)]
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    battles = [(names[i], names[j], "A" if rng.random() < 0.6 else "B") for i, j in zip(a.tolist(), b.tolist())]
    counts = pair_counts(battles)
    beta = fit_log_strengths(counts.points)
    full = covariance(counts, beta, ridge=0.01, method="fisher")
    assert fisher_variances(counts.points, beta, ridge=0.01) == pytest.approx(np.diag(full), rel=1e-9, abs=1e-14)


def test_a_bootstrap_round_that_loses_a_player_refits_the_others_alone() -> None:
    # "z" plays in question q0 only: a round that does not draw q0 leaves it out and rates the
    # others among themselves, as a refit of the drawn battles alone would.
    rng = np.random.default_rng(6)
    players = ["a", "b", "c", "d"]
    battles = [Battle(players[i], players[(i + 1 + k) % 4], Winner.A if rng.random() < 0.5 else Winner.B, f"q{q}")
               for q in range(12) for i in range(4) for k in range(3)]
    battles += [Battle("z", "a", Winner.A, "q0"), Battle("b", "z", Winner.TIE, "q0")]
    rounds = 30
    got = bootstrap_intervals(battles, np.random.default_rng(9), rounds=rounds)
    draws = np.random.default_rng(9).multinomial(12, np.full(12, 1 / 12), size=rounds)
    assert (draws[:, 0] == 0).any() and (draws[:, 0] > 0).any()  # both kinds of round occur
    samples: dict[str, list[float]] = {p: [] for p in players + ["z"]}
    for r in range(rounds):
        drawn = [Battle(x.a, x.b, x.winner, weight=float(draws[r, int(x.question_id[1:])])) for x in battles]
        for p, rating in bradley_terry([x for x in drawn if x.weight > 0]).items():
            samples[p].append(rating)
    for p, values in samples.items():
        assert got[p] == pytest.approx(tuple(np.quantile(values, [0.025, 0.975])), abs=1e-6)


def test_a_bootstrap_with_ridge_zero_still_checks_fords_condition() -> None:
    battles = [Battle("a", "b", Winner.A, f"q{q}") for q in range(5)] + [Battle("b", "c", Winner.TIE, "q0")]
    with pytest.raises(ConvergenceError, match="ridge=0"):
        bootstrap_intervals(battles, np.random.default_rng(0), rounds=3, ridge=0.0)
