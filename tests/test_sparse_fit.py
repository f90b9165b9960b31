"""The sparse Bradley-Terry fit gives the dense fit's ratings, and its widths stay within their bound."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboard.battles import CHANNELS, PairCounts
from leaderboard.fit import DEFAULT_RIDGE, ConvergenceError, elo_scale, fisher_variances, fit_log_strengths
from leaderboard.ratings import bradley_terry, bradley_terry_intervals
from leaderboard.sparse_fit import SAFETY, SPARSE_ABOVE, WIDTH_BOUND, chosen, fit_sparse, pairs_of, sparse_variances

ELO = elo_scale(10.0, 400.0)


def tournament(rng: np.random.Generator, n: int, degree: int, games: int, tie_rate: float) -> np.ndarray:
    """A points matrix: a ring (so connected) plus random pairs, ties half a point each way."""
    truth = rng.normal(0.0, 1.0, n)
    a = np.concatenate([np.arange(n), np.repeat(np.arange(n), degree)])
    b = np.concatenate([(np.arange(n) + 1) % n, rng.integers(0, n, n * degree)])
    keep = a != b
    a, b = a[keep], b[keep]
    points = np.zeros((n, n))
    for x, y in zip(a.tolist(), b.tolist()):
        p = 1.0 / (1.0 + np.exp(truth[y] - truth[x]))
        ties = rng.binomial(games, tie_rate)
        wins = rng.binomial(games - ties, p)
        points[x, y] += wins + ties / 2
        points[y, x] += games - ties - wins + ties / 2
    return points


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 60), degree=st.integers(0, 8),
       games=st.integers(1, 20), tie_rate=st.sampled_from([0.0, 0.2, 1.0]))
def test_sparse_equals_dense(seed: int, n: int, degree: int, games: int, tie_rate: float) -> None:
    points = tournament(np.random.default_rng(seed), n, degree, games, tie_rate)
    dense = fit_log_strengths(points)
    sparse = fit_sparse(pairs_of(points))
    assert np.max(np.abs(dense - sparse)) * ELO < 0.01
    assert abs(sparse.mean()) < 1e-9


def test_unbeaten_player_is_finite_and_matches() -> None:
    points = tournament(np.random.default_rng(1), 30, 3, 10, 0.1)
    points[:, 0] = 0.0  # player 0 never loses
    points[0, points[0] == 0] = 0.0
    points[0, 1] += 1.0  # still connected through player 1
    sparse = fit_sparse(pairs_of(points))
    assert np.all(np.isfinite(sparse))
    assert np.max(np.abs(fit_log_strengths(points) - sparse)) * ELO < 0.01


def test_disconnected_groups_fit_as_the_dense_code_does() -> None:
    """Two groups that never met: the ridge and the centring place them, in both fits alike."""
    rng = np.random.default_rng(2)
    left, right = tournament(rng, 10, 2, 5, 0.2), tournament(rng, 12, 2, 5, 0.2)
    points = np.zeros((22, 22))
    points[:10, :10], points[10:, 10:] = left, right
    assert np.max(np.abs(fit_log_strengths(points) - fit_sparse(pairs_of(points)))) * ELO < 0.01


def test_no_pairs_and_bad_ridge() -> None:
    assert fit_sparse(pairs_of(np.zeros((0, 0)))).size == 0
    assert np.all(fit_sparse(pairs_of(np.zeros((3, 3)))) == 0.0)  # nobody played: everyone at the mean
    with pytest.raises(ValueError):
        fit_sparse(pairs_of(np.ones((2, 2))), ridge=-1.0)


def test_newton_that_cannot_converge_raises() -> None:
    points = tournament(np.random.default_rng(3), 20, 3, 10, 0.2)
    with pytest.raises(ConvergenceError):
        fit_sparse(pairs_of(points), max_iter=1, start=np.full(20, 5.0) * np.arange(20))


def test_choice_is_by_player_count() -> None:
    assert chosen(SPARSE_ABOVE) == "dense"
    assert chosen(SPARSE_ABOVE + 1) == "sparse"
    assert chosen(0) == "dense"


@pytest.mark.parametrize("n, degree", [(150, 3), (300, 30)])
def test_widths_never_narrower_and_within_bound(n: int, degree: int) -> None:
    points = tournament(np.random.default_rng(n), n, degree, 30, 0.2)
    theta = fit_log_strengths(points)
    exact = fisher_variances(points, theta, ridge=DEFAULT_RIDGE)
    estimate = sparse_variances(pairs_of(points), theta, ridge=DEFAULT_RIDGE)
    gap = np.sqrt(estimate / exact) - 1.0
    assert gap.min() > -1e-3
    assert gap.max() < WIDTH_BOUND
    assert SAFETY >= 1.0


def test_board_entry_point_takes_sparse_above_threshold() -> None:
    """Above SPARSE_ABOVE the board's fit is the sparse one: same ratings as the dense fit,
    widths within the bound (the dense fit is run here directly for the comparison)."""
    n = SPARSE_ABOVE + 100
    rng = np.random.default_rng(4)
    points = tournament(rng, n, 15, 20, 0.2)
    players = [f"p{k:05d}" for k in range(n)]
    stack = np.zeros((CHANNELS, n, n))
    stack[0] = points
    counts = PairCounts.from_stack(players, stack)
    fitted = bradley_terry_intervals(counts)
    theta = fit_log_strengths(points)
    dense = 1000.0 + theta * ELO
    assert max(abs(fitted[p][0] - r) for p, r in zip(players, dense)) < 0.01
    plain = bradley_terry(counts)
    assert max(abs(plain[p] - r) for p, r in zip(players, dense)) < 0.01
    exact = 1.96 * ELO * np.sqrt(fisher_variances(points, theta, ridge=DEFAULT_RIDGE))
    width = np.array([(fitted[p][2] - fitted[p][1]) / 2 for p in players])
    gap = width / exact - 1.0
    assert gap.min() > -1e-3 and gap.max() < WIDTH_BOUND
