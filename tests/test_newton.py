"""The one damped Newton method (leaderboard.newton) every fit uses.

Each fit only states its objective and derivatives, so the method is tested on objectives whose
answers are known independently: a function on which an undamped Newton step diverges, a
ridge-penalised logistic regression checked against scipy's BFGS and against finite differences
of its own objective, and the failures (a step that is not finite, too few iterations).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize as scipy_minimize

from leaderboard.fit import fit_log_strengths
from leaderboard.newton import ConvergenceError, minimize


def test_damping_converges_where_a_full_newton_step_diverges():
    """f(x) = sqrt(1 + x²): from x = 3 a full Newton step lands at -27 and runs away."""
    def objective(x: np.ndarray) -> float:
        return float(np.sqrt(1.0 + x[0] ** 2))

    def derivatives(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        root = np.sqrt(1.0 + x[0] ** 2)
        return np.array([x[0] / root]), np.array([[1.0 / root ** 3]])

    x = minimize(objective, derivatives, np.array([3.0]), tol=1e-10, max_iter=100, what="test")
    assert abs(x[0]) < 1e-8


def _logistic(seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(200, 5))
    truth = rng.normal(size=5)
    labels = (rng.random(200) < 1 / (1 + np.exp(-features @ truth))).astype(float)

    def objective(w: np.ndarray) -> float:
        z = features @ w
        return float(np.sum(np.logaddexp(0.0, z) - labels * z) + 0.5 * w @ w)

    def derivatives(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = 1 / (1 + np.exp(-(features @ w)))
        return features.T @ (p - labels) + w, (features.T * (p * (1 - p))) @ features + np.eye(5)

    return objective, derivatives


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_minimum_of_a_penalised_logistic_regression_matches_bfgs(seed):
    objective, derivatives = _logistic(seed)
    ours = minimize(objective, derivatives, np.full(5, 4.0), tol=1e-10, max_iter=100, what="test")
    theirs = scipy_minimize(objective, np.zeros(5), jac=lambda w: derivatives(w)[0], method="BFGS",
                            options={"gtol": 1e-10}).x
    np.testing.assert_allclose(ours, theirs, atol=1e-6)
    assert np.max(np.abs(derivatives(ours)[0])) < 1e-8


@pytest.mark.parametrize("seed", [0, 1])
def test_the_derivatives_it_is_given_are_the_objectives(seed):
    """A guard on the test objective itself (choix checks its gradients this way): central
    finite differences of the objective agree with the gradient and Hessian handed to Newton."""
    objective, derivatives = _logistic(seed)
    w, h = np.random.default_rng(seed).normal(size=5), 1e-5
    grad, hess = derivatives(w)
    unit = np.eye(5)
    numeric = np.array([(objective(w + h * e) - objective(w - h * e)) / (2 * h) for e in unit])
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)
    numeric_hess = np.array([(derivatives(w + h * e)[0] - derivatives(w - h * e)[0]) / (2 * h) for e in unit])
    np.testing.assert_allclose(hess, numeric_hess, rtol=1e-5, atol=1e-5)


def test_a_bradley_terry_fit_is_a_stationary_point_of_its_own_likelihood():
    """The dense route (a design) through `minimize`: the penalised log-likelihood, written out
    here independently, has a zero finite-difference gradient at the fitted strengths."""
    rng = np.random.default_rng(7)
    points = rng.integers(1, 9, size=(6, 6)).astype(float)
    np.fill_diagonal(points, 0)
    design, ridge = np.eye(6), 0.01
    beta = fit_log_strengths(points, design=design, ridge=ridge)

    def nll(b: np.ndarray) -> float:
        diff = b[:, None] - b[None, :]
        return float(np.sum(points * np.logaddexp(0.0, -diff)) + 0.5 * ridge * b @ b)

    h = 1e-6
    numeric = np.array([(nll(beta + h * e) - nll(beta - h * e)) / (2 * h) for e in np.eye(6)])
    assert np.max(np.abs(numeric)) < 1e-5
    assert abs(beta.mean()) < 1e-12


def test_a_step_that_is_not_finite_is_refused():
    with pytest.raises(ConvergenceError, match="test Newton step is not finite"):
        minimize(lambda x: 0.0, lambda x: (np.array([np.nan]), np.eye(1)), np.zeros(1), tol=1e-10,
                 max_iter=10, what="test")


def test_too_few_iterations_say_so():
    objective, derivatives = _logistic(0)
    with pytest.raises(ConvergenceError, match="test fit did not converge in 1 Newton steps"):
        minimize(objective, derivatives, np.full(5, 4.0), tol=1e-14, max_iter=1, what="test")
