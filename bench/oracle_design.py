"""The best allocation of comparisons for a field whose true ratings are known: a ceiling.

bench/pairing.py asks how many comparisons each pairing strategy needs before the fitted
order reaches Kendall tau 0.9. A fair question to put to its numbers is how much better any
strategy could do. This module answers it for one world with an optimal experimental design:
knowing the true ratings, the judge's tie rate and its position bias, choose the share of
comparisons each player pair gets so that the expected number of misordered pairs reaches the
target with the fewest comparisons. No strategy that has to learn the ratings from the
verdicts can beat it in expectation, so `uniform / oracle` bounds the ratio any adaptive rule
can reach in that world.

The model (normal approximation of the Bradley-Terry fit): judging players i, j w times adds
w·I(g_ij) to the information matrix, I the Fisher information of one both-order comparison at
the true gap g (`comparison_information`); the fitted difference θi - θj is then
N(g_ij, V_ij), V from the pseudo-inverse of that Laplacian; a pair ends misordered with
probability Φ(-|g_ij|/√V_ij). The shares are found by exponentiated gradient on that sum
(smooth in the shares, so it converges in a few hundred steps), then the budget that meets the
target with them by root finding, alternately.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

NATS_PER_ELO = math.log(10.0) / 400.0


def comparison_information(gap: np.ndarray, ties: float, bias: float) -> np.ndarray:
    """Fisher information about the gap (nats) in one consolidated both-order comparison.

    The simulated judge forms a tie opinion with probability `ties`, else a Bradley-Terry
    verdict; each of its two calls names the first slot with probability `bias`, and a
    disagreement is a tie. So i wins with probability k·p, k = (1-ties)(1-bias), and the
    score s (1, ½, 0) has mean ½(1-k) + k·p: information (k·p(1-p))² / Var(s). Ties and
    bias flatten it, lopsided pairs most.
    """
    p = 1.0 / (1.0 + np.exp(-gap))
    k = (1.0 - ties) * (1.0 - bias)
    mean = 0.5 * (1.0 - k) + k * p
    variance = k * p + 0.25 * (1.0 - k) - mean * mean
    return (k * p * (1.0 - p)) ** 2 / variance


@dataclass(frozen=True)
class Design:
    """Shares of the comparisons per player pair (i[e], j[e]) and the budget they need."""

    i: np.ndarray
    j: np.ndarray
    shares: np.ndarray
    budget: float


class Field:
    """A world's true gaps and per-comparison information, and the misorder count they imply."""

    def __init__(self, ratings: list[float], ties: float, bias: float) -> None:
        elo = np.asarray(ratings, dtype=float)
        self.n = elo.size
        self.gap = (elo[:, None] - elo[None, :]) * NATS_PER_ELO
        self.i, self.j = np.triu_indices(self.n, 1)
        self.info = comparison_information(self.gap[self.i, self.j], ties, bias)

    def laplacian(self, shares: np.ndarray, budget: float) -> np.ndarray:
        weights = np.zeros((self.n, self.n))
        weights[self.i, self.j] = shares * budget * self.info
        weights += weights.T
        return np.diag(weights.sum(axis=1)) - weights

    def misordered(self, shares: np.ndarray, budget: float) -> tuple[float, np.ndarray, np.ndarray]:
        """(expected misordered pairs, covariance, variance of every difference)."""
        cov = np.linalg.pinv(self.laplacian(shares, budget))
        diag = np.diag(cov)
        var = np.maximum(diag[:, None] + diag[None, :] - 2.0 * cov, 1e-12)
        gap = np.abs(self.gap[self.i, self.j])
        return float(norm.cdf(-gap / np.sqrt(var[self.i, self.j])).sum()), cov, var

    def budget_for(self, shares: np.ndarray, target: float) -> float:
        """Comparisons at which these shares bring the expected misorders down to `target`."""
        return float(brentq(lambda m: self.misordered(shares, m)[0] - target, 1.0, 1e8))

    def gradient(self, shares: np.ndarray, budget: float) -> np.ndarray:
        """d(expected misorders)/d(share) per pair: -m·I_e·u_eᵀ C L_w C u_e, where L_w is the
        Laplacian of dΦ/dV over all pairs (every pair's variance moves with every share)."""
        _, cov, var = self.misordered(shares, budget)
        gap = np.abs(self.gap)
        sd = np.sqrt(var)
        slope = norm.pdf(gap / sd) * gap / (2.0 * sd**3)
        np.fill_diagonal(slope, 0.0)
        middle = cov @ (np.diag(slope.sum(axis=1)) - slope) @ cov
        diag = np.diag(middle)
        spread = diag[:, None] + diag[None, :] - 2.0 * middle
        return -budget * self.info * spread[self.i, self.j]


def optimal_design(ratings: list[float], ties: float, bias: float, target: float, steps: int = 150, rounds: int = 4) -> Design:
    """The shares that reach `target` expected misordered pairs with the fewest comparisons.

    Starts from uniform shares; each round takes `steps` exponentiated-gradient steps at the
    current budget, then re-solves the budget for the new shares (the best shares depend on
    the budget: more comparisons make closer pairs worth separating).
    """
    field = Field(ratings, ties, bias)
    shares = np.full(field.i.size, 1.0 / field.i.size)
    budget = field.budget_for(shares, target)
    for _ in range(rounds):
        for _ in range(steps):
            grad = field.gradient(shares, budget)
            shares = shares * np.exp(-0.5 * grad / np.abs(grad).max())
            shares /= shares.sum()
        budget = field.budget_for(shares, target)
    return Design(field.i, field.j, shares, budget)
