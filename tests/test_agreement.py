"""Krippendorff's alpha (leaderboard.agreement): hand-worked golden figures, evalica as an
independent reference, and a seeded bootstrap."""
from __future__ import annotations

import numpy as np
import pytest

from leaderboard.agreement import alpha_of, alpha_of_types, krippendorff_alpha, unit_types, value_counts
from tests.required import require_module


def test_two_raters_three_units_by_hand() -> None:
    # units: (A, A), (A, B), (B, B). Observed disagreement 2 (the one split unit, m=2);
    # pooled counts A=3, B=3, n=6: expected (36 - 18)/5; alpha = 1 - 5·2/18 = 4/9.
    assert krippendorff_alpha([["A", "A", "B"], ["A", "B", "B"]]).alpha == pytest.approx(4 / 9)


def test_missing_values_and_lone_units_by_hand() -> None:
    # Unit 3 has one value and is dropped. Units: (A, A, TIE) m=3, (B, B) m=2.
    # Observed: (9 - 5)/2 = 2 for the first, 0 for the second. Counts A=2, B=2, TIE=1, n=5:
    # expected sum 25 - 9 = 16; alpha = 1 - 4·2/16 = 0.5.
    result = krippendorff_alpha([["A", "B", "TIE"], ["A", "B", None], ["TIE", None, None]])
    assert (result.units, result.values) == (2, 5)
    assert result.alpha == pytest.approx(0.5)
    assert np.isnan(result.low) and np.isnan(result.high)


def test_perfect_agreement_is_one_and_one_category_is_not_measurable() -> None:
    assert krippendorff_alpha([["A", "B", "TIE"], ["A", "B", "TIE"]]).alpha == 1.0
    assert np.isnan(alpha_of(value_counts([["A", "A"], ["A", "A"]])))


def test_matches_evalica_on_random_verdicts() -> None:
    evalica = require_module("evalica", "references")
    import pandas as pd
    rng = np.random.default_rng(4)
    truth = rng.choice(["A", "B", "TIE"], 200)
    raters = []
    for noise in (0.2, 0.4, 0.6):
        row = np.where(rng.random(200) < noise, rng.choice(["A", "B", "TIE"], 200), truth).astype(object)
        row[rng.random(200) < 0.15] = None
        raters.append(list(row))
    ours = krippendorff_alpha(raters).alpha
    theirs = evalica.alpha(pd.DataFrame(raters), distance="nominal").alpha
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_bootstrap_is_seeded_and_brackets_the_point() -> None:
    ratings = [["A", "B", "TIE", "A", "B", "A", "B", "TIE"] * 10, ["A", "B", "A", "A", "B", "B", "B", "TIE"] * 10]
    one = krippendorff_alpha(ratings, np.random.default_rng(2), rounds=200)
    assert one == krippendorff_alpha(ratings, np.random.default_rng(2), rounds=200)
    assert one.low < one.alpha < one.high
    # By hand: 20 split units of two values, each an observed disagreement of (4 - 2)/1 = 2;
    # pooled A=60, B=70, TIE=30, n=160: alpha = 1 - 159·40/(160² - 60² - 70² - 30²).
    assert one.alpha == pytest.approx(1 - 159 * 40 / (160**2 - 60**2 - 70**2 - 30**2))


def noisy_raters(seed: int, raters: int = 3, units: int = 300) -> list[list[str | None]]:
    """Raters that give the unit's value 60% of the time, else one at random or (1 in 4) none."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(["A", "B", "TIE"], units, p=[0.45, 0.35, 0.2])
    noise = ["A", "B", "TIE", None]
    return [[str(t) if rng.random() < 0.6 else noise[rng.integers(4)] for t in truth] for _ in range(raters)]


def test_alpha_of_types_is_the_unit_bootstrap_at_the_cost_of_types() -> None:
    ratings = noisy_raters(4)
    direct = krippendorff_alpha(ratings, np.random.default_rng(0), rounds=4000)
    types, frequencies = unit_types(value_counts(ratings))
    assert len(types) < 20 < direct.units  # a few types stand for every unit
    typed = alpha_of_types(types, frequencies, np.random.default_rng(0), rounds=4000)
    assert typed.alpha == pytest.approx(direct.alpha, abs=1e-12)
    assert (typed.units, typed.values) == (direct.units, direct.values)
    # the same bootstrap distribution drawn another way: the percentiles agree to Monte Carlo error
    assert typed.low == pytest.approx(direct.low, abs=0.01) and typed.high == pytest.approx(direct.high, abs=0.01)
    again = alpha_of_types(types, frequencies, np.random.default_rng(0), rounds=4000)
    assert (again.low, again.high) == (typed.low, typed.high)


def test_mirrored_units_count_twice() -> None:
    # units (A, A) and (A, TIE): mirrored, also (B, B) and (B, TIE); A=3, B=3, TIE=2, n=8:
    # expected 64 - 22 = 42, observed 2 + 2; alpha = 1 - 7·4/42 = 1/3
    counts = np.array([[2.0, 0.0, 0.0], [1.0, 0.0, 1.0]])
    found = alpha_of_types(counts, np.array([1, 1]), mirror=(1, 0, 2))
    assert found.alpha == pytest.approx(1 / 3)
    doubled = krippendorff_alpha([["A", "A", "B", "B"], ["A", "TIE", "B", "TIE"]])
    assert found.alpha == pytest.approx(doubled.alpha) and (found.units, found.values) == (2, 4)
