"""Ties as a model: Davidson's fit against a hand-worked two-player case, an independent
likelihood and finite-difference information, Bradley-Terry when there are no ties, and the
default (`half`) path, which must stay exactly the published Bradley-Terry board."""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from leaderboard.fit import ConvergenceError
from leaderboard.ratings import bradley_terry_intervals
from leaderboard.ties import davidson_intervals, fit_with_ties
from leaderboard.types import Battle, Winner
from tests.flat import flat

Z95 = NormalDist().inv_cdf(0.975)
ELO = 400.0 / math.log(10.0)  # Elo points per natural-log unit of strength


def two_players(w: int, l: int, t: int, a: str = "a", b: str = "b") -> list[tuple[str, str, str]]:
    return [(a, b, "A")] * w + [(a, b, "B")] * l + [(a, b, "TIE")] * t


def davidson_log_likelihood(battles: list[tuple[str, str, str]], strength: dict[str, float], nu: float) -> float:
    """Σ ln P(outcome), straight from Davidson's formula, one battle at a time (no shared code)."""
    total = 0.0
    for a, b, winner in battles:
        pa, pb = strength[a], strength[b]
        tie = nu * math.sqrt(pa * pb)
        total += math.log({"A": pa, "B": pb, "TIE": tie}[winner] / (pa + pb + tie))
    return total


def random_board(seed: int) -> list[tuple[str, str, str]]:
    """Six players, 600 battles, Davidson outcomes with ν = 0.8 (about 30% ties among equals)."""
    rng = np.random.default_rng(seed)
    names = ["p0", "p1", "p2", "p3", "p4", "p5"]
    strength = np.exp(rng.normal(0.0, 0.7, 6))
    battles = []
    for _ in range(600):
        i, j = rng.choice(6, size=2, replace=False)
        tie = 0.8 * math.sqrt(strength[i] * strength[j])
        total = strength[i] + strength[j] + tie
        outcome = rng.choice(["A", "B", "TIE"], p=[strength[i] / total, strength[j] / total, tie / total])
        battles.append((names[i], names[j], str(outcome)))
    return battles


# ---------------------------------------------------------------- (1) two players, closed form


@pytest.mark.parametrize("w, l, t", [(6, 2, 4), (3, 5, 1), (10, 10, 7)])
def test_two_players_closed_form(w: int, l: int, t: int) -> None:
    # Two players: the three outcomes' probabilities are free (two parameters, three cells), so
    # the MLE matches the observed shares: π_a/π_b = P(win)/P(loss) = w/l, and
    # ν = P(tie)/√(P(win)·P(loss)) = (t/n)/√(w·l/n²) = t/√(w·l).
    # Ratings: a - b = 400·log10(w/l), centred on 1000. Intervals: the delta method on the
    # multinomial, Var(Σ c_k ln p̂_k) = (Σ c_k²/p_k - (Σ c_k)²)/n, gives
    # Var(θ_a - θ_b) = 1/w + 1/l (so Var(θ_a) = (1/w + 1/l)/4 after centring) and
    # Var(ln ν̂) = 1/(4w) + 1/(4l) + 1/t.
    fit = davidson_intervals(two_players(w, l, t), ridge=0)
    gap = 200.0 * math.log10(w / l)
    half = Z95 * ELO * math.sqrt(1 / w + 1 / l) / 2
    assert fit.ratings["a"] == pytest.approx((1000 + gap, 1000 + gap - half, 1000 + gap + half), abs=1e-7)
    assert fit.ratings["b"] == pytest.approx((1000 - gap, 1000 - gap - half, 1000 - gap + half), abs=1e-7)
    nu = t / math.sqrt(w * l)
    spread = Z95 * math.sqrt(1 / (4 * w) + 1 / (4 * l) + 1 / t)
    assert fit.tie_parameter == pytest.approx((nu, nu * math.exp(-spread), nu * math.exp(spread)), rel=1e-8)
    n = w + l + t
    assert fit.log_likelihood == pytest.approx(w * math.log(w / n) + l * math.log(l / n) + t * math.log(t / n), abs=1e-9)


def test_worked_numbers_for_six_two_four() -> None:
    # w=6, l=2, t=4: a - b = 400·log10(3) = 190.85, so a = 1095.42; ν = 4/√12 = 1.1547;
    # half-width 1.96·173.72·√((1/6 + 1/2)/4) = 139.00.
    fit = davidson_intervals(two_players(6, 2, 4), ridge=0)
    rating, _, high = fit.ratings["a"]
    assert rating == pytest.approx(1095.424, abs=1e-3)
    assert high - rating == pytest.approx(139.00, abs=1e-2)
    assert fit.tie_parameter[0] == pytest.approx(1.1547, abs=1e-4)


# ---------------------------------------------------------------- (2) symmetry


def test_swapping_names_mirrors_the_ratings() -> None:
    forward = davidson_intervals(two_players(6, 2, 4, a="a", b="b"))
    swapped = davidson_intervals(two_players(6, 2, 4, a="b", b="a"))
    # The names trade places in the fit's (name-ordered) index; the ratings follow the records.
    assert swapped.ratings["b"] == pytest.approx(forward.ratings["a"], abs=1e-8)
    assert swapped.ratings["a"] == pytest.approx(forward.ratings["b"], abs=1e-8)
    # Two players around a mean of 1000 mirror each other: b = 2000 - a, interval flipped.
    rating, low, high = forward.ratings["a"]
    assert forward.ratings["b"] == pytest.approx((2000 - rating, 2000 - high, 2000 - low), abs=1e-8)
    assert swapped.tie_parameter == pytest.approx(forward.tie_parameter, rel=1e-10)
    # Writing a battle from the other side (b, a, flipped winner) changes nothing.
    flipped = [Battle(b, a, Winner(w).flipped()) for a, b, w in two_players(6, 2, 4)]
    assert flat(davidson_intervals(flipped).ratings) == pytest.approx(flat(forward.ratings))


def test_renaming_players_permutes_the_ratings() -> None:
    battles = random_board(seed=2)
    rename = {"p0": "p5", "p1": "p3", "p2": "p4", "p3": "p0", "p4": "p1", "p5": "p2"}
    forward = davidson_intervals(battles)
    renamed = davidson_intervals([(rename[a], rename[b], w) for a, b, w in battles])
    for player, values in forward.ratings.items():
        assert renamed.ratings[rename[player]] == pytest.approx(values, abs=1e-8)
    assert renamed.tie_parameter == pytest.approx(forward.tie_parameter, rel=1e-10)


def test_equal_records_are_level() -> None:
    fit = davidson_intervals(two_players(5, 5, 3) + [("b", "c", "A"), ("c", "b", "A"), ("a", "c", "TIE")])
    assert {p: r[0] for p, r in fit.ratings.items()} == pytest.approx({"a": 1000.0, "b": 1000.0, "c": 1000.0})


# ---------------------------------------------------------------- (3) the fit is a maximum


def test_fit_maximises_an_independent_likelihood() -> None:
    battles = random_board(seed=7)
    fit = davidson_intervals(battles, ridge=0)
    players = sorted(fit.ratings)
    theta = np.array([(fit.ratings[p][0] - 1000.0) / ELO for p in players])
    lam = math.log(fit.tie_parameter[0])

    def loglik(x: np.ndarray) -> float:
        return davidson_log_likelihood(battles, dict(zip(players, np.exp(x[:-1]))), math.exp(x[-1]))

    x0 = np.append(theta, lam)
    assert loglik(x0) == pytest.approx(fit.log_likelihood, abs=1e-8)
    h = 1e-5
    basis = np.eye(len(x0))
    gradient = np.array([(loglik(x0 + h * e) - loglik(x0 - h * e)) / (2 * h) for e in basis])
    assert np.max(np.abs(gradient)) < 1e-5  # unpenalised MLE: the gradient vanishes
    rng = np.random.default_rng(1)
    for _ in range(20):
        assert loglik(x0 + rng.normal(0.0, 0.02, len(x0))) < fit.log_likelihood

    # Intervals from the finite-difference Hessian of the same independent likelihood, with the
    # sum-to-zero constraint added as in the fit (C = 11ᵀ/n on the log-strengths).
    size = len(x0)
    hess = np.empty((size, size))
    h = 1e-4
    for i in range(size):
        for j in range(size):
            ei, ej = h * basis[i], h * basis[j]
            hess[i, j] = -(loglik(x0 + ei + ej) - loglik(x0 + ei - ej) - loglik(x0 - ei + ej) + loglik(x0 - ei - ej)) / (4 * h * h)
    constraint = np.zeros((size, size))
    constraint[:-1, :-1] = 1.0 / len(players)
    cov = np.linalg.inv(hess + constraint) - constraint
    sd = np.sqrt(np.diag(cov))
    for k, player in enumerate(players):
        rating, _, high = fit.ratings[player]
        assert (high - rating) == pytest.approx(Z95 * ELO * sd[k], rel=1e-4)
    assert fit.tie_parameter[2] == pytest.approx(math.exp(lam + Z95 * sd[-1]), rel=1e-4)


def test_the_true_tie_parameter_is_recovered() -> None:
    # 600 battles drawn with ν = 0.8: the interval should cover it (it does for this seed;
    # a sign error in ν's gradient would put the estimate far off).
    nu, low, high = davidson_intervals(random_board(seed=3)).tie_parameter
    assert low < 0.8 < high
    assert 0.6 < nu < 1.0


# ---------------------------------------------------------------- (4) no ties: Bradley-Terry


def test_without_ties_it_is_bradley_terry() -> None:
    battles = [(a, b, w) for a, b, w in random_board(seed=11) if w != "TIE"]
    davidson = davidson_intervals(battles)
    bradley = bradley_terry_intervals(battles)
    assert davidson.tie_parameter[0] < 1e-3  # only the ridge on ln ν keeps it above zero
    for player, (rating, low, high) in bradley.items():
        d_rating, d_low, d_high = davidson.ratings[player]
        assert d_rating == pytest.approx(rating, abs=0.2)  # measured 0.03
        assert d_high - d_low == pytest.approx(high - low, abs=0.2)  # measured 0.01


def test_no_ties_and_no_ridge_has_no_maximum() -> None:
    with pytest.raises(ConvergenceError):
        davidson_intervals(two_players(3, 2, 0), ridge=0)
    with pytest.raises(ConvergenceError):
        davidson_intervals(two_players(3, 0, 2), ridge=0)  # b never won: a's strength runs off


def test_a_board_of_only_ties_keeps_a_finite_nu_with_the_ridge() -> None:
    fit = davidson_intervals(two_players(0, 0, 20))
    assert fit.ratings["a"][0] == pytest.approx(1000.0)
    assert 20.0 < fit.tie_parameter[0] < math.inf


# ---------------------------------------------------------------- (5) the default path


def test_half_is_exactly_bradley_terry() -> None:
    battles = random_board(seed=5)
    result = fit_with_ties(battles)
    assert result.tie_parameter is None
    assert result.ratings == bradley_terry_intervals(battles)
    assert fit_with_ties(battles, "half", ridge=0.5, confidence=0.9).ratings == bradley_terry_intervals(
        battles, ridge=0.5, confidence=0.9
    )


def test_davidson_path_and_bad_arguments() -> None:
    battles = random_board(seed=5)
    result = fit_with_ties(battles, "davidson")
    fit = davidson_intervals(battles)
    assert result.ratings == fit.ratings and result.tie_parameter == fit.tie_parameter
    with pytest.raises(ValueError, match="tie model"):
        fit_with_ties(battles, "thirds")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="weights"):
        davidson_intervals([Battle("a", "b", Winner.A, weight=2.0), Battle("a", "b", Winner.TIE)])
    with pytest.raises(ValueError):
        davidson_intervals(battles, confidence=1.0)
    empty = davidson_intervals([])
    assert empty.ratings == {} and all(math.isnan(v) for v in empty.tie_parameter)
