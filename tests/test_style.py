"""Style control (leaderboard.style): the features of an output, the covariates, the joint fit.

Golden figures are hand-counted (features) or come from an independent reference: the same
likelihood fitted by scikit-learn's LogisticRegression on one row per battle, as Chatbot Arena's
style-control notebook sets it up. The planted simulation has a judge that prefers length: the
plain board ranks a verbose weaker model first; the controlled board recovers the true order.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from leaderboard.columns import from_columns
from leaderboard.style import (
    FEATURES,
    Style,
    StyleUnavailable,
    covariates,
    fit_style,
    standardise,
    style_control,
    style_of,
)
from tests.required import require_module

MARKDOWN = """# Title
Some **bold** words and __more bold__, not ** this.
## Section
- one
* two
  + nested
1. first
12. twelfth
```
# not a header inside code
- not a list
**not bold**
```
"""


def test_style_counts_markdown_outside_code_blocks() -> None:
    style = style_of(MARKDOWN)
    assert (style.headers, style.lists, style.bold) == (2, 5, 2)
    assert style.length == len(MARKDOWN)
    assert style_of("one two three", length=lambda t: len(t.split())).length == 3


def test_covariates_are_normalised_differences_standardised_over_battles() -> None:
    a = [Style(30, 1, 0, 0), Style(10, 0, 0, 0), Style(20, 0, 2, 0)]
    b = [Style(10, 0, 0, 0), Style(30, 0, 0, 0), Style(20, 1, 0, 0)]
    x = covariates(a, b)
    raw_length = np.array([20 / 41, -20 / 41, 0.0])
    assert x[:, 0] == pytest.approx(raw_length / raw_length.std())
    raw_headers = np.array([1 / 2, 0.0, -1 / 2])
    assert x[:, 1] == pytest.approx((raw_headers - raw_headers.mean()) / raw_headers.std())
    assert x[:, 3] == pytest.approx([0.0, 0.0, 0.0])  # no bold anywhere: a constant column stays 0
    assert standardise(np.array([[1.0], [3.0]]))[:, 0] == pytest.approx([-1.0, 1.0])


def test_battles_without_outputs_say_why_style_control_cannot_run() -> None:
    with pytest.raises(StyleUnavailable, match="2 of 3 battles have no outputs"):
        covariates([Style(1, 0, 0, 0), None, None], [Style(2, 0, 0, 0), Style(2, 0, 0, 0), None])


def planted(seed: int, battles: int = 6000) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Four models; the judge adds 0.8 nats per sd of the length covariate. The weakest two
    write the longest answers."""
    rng = np.random.default_rng(seed)
    truth = np.array([0.6, 0.3, 0.0, -0.9])  # natural-log strengths: m0 > m1 > m2 > m3
    verbosity = np.array([300.0, 200.0, 900.0, 1200.0])  # mean answer length per model
    a = rng.integers(0, 4, battles)
    b = (a + rng.integers(1, 4, battles)) % 4
    len_a = rng.gamma(8.0, verbosity[a] / 8.0)
    len_b = rng.gamma(8.0, verbosity[b] / 8.0)
    styles_a = [Style(x, 0, 0, 0) for x in len_a]
    styles_b = [Style(x, 0, 0, 0) for x in len_b]
    x = covariates(styles_a, styles_b)
    logit = truth[a] - truth[b] + 0.8 * x[:, 0]
    score = (rng.random(battles) < 1.0 / (1.0 + np.exp(-logit))).astype(float)
    score[rng.random(battles) < 0.1] = 0.5
    return [f"m{i}" for i in range(4)], a, b, score, x, truth


def test_planted_length_bias_the_controlled_board_recovers_the_true_order() -> None:
    names, a, b, score, x, truth = planted(seed=7)
    table = from_columns(np.array(names, dtype=object)[a], np.array(names, dtype=object)[b], score)
    board = style_control(table, x)
    true_order = [names[i] for i in np.argsort(-truth)]
    plain_order = [r.player for r in sorted(board.ratings, key=lambda r: -r.plain)]
    controlled_order = [r.player for r in board.ratings]
    assert plain_order != true_order  # the length-loving judge misleads the plain board
    assert plain_order[0] == "m2"
    assert controlled_order == true_order
    length = board.coefficients[0]
    assert length.name == "length"
    planted_elo = 0.8 * 400 / math.log(10)
    assert length.low < planted_elo < length.high  # the 95% interval covers the planted effect
    assert all(c.low < 0 < c.high for c in board.coefficients[1:3])  # constant columns: 0 ± ridge
    assert board.interval == "fisher"
    for r in board.ratings:
        assert r.low < r.rating < r.high and r.plain_low < r.plain < r.plain_high


def test_fit_matches_an_independent_logistic_regression() -> None:
    linear_model = require_module("sklearn.linear_model", "references")
    names, a, b, score, x, _ = planted(seed=3, battles=3000)
    x = x + np.random.default_rng(0).normal(0, 1, x.shape) * np.array([0, 1, 1, 0])  # two live extra columns
    ridge = 0.01
    table = from_columns(np.array(names, dtype=object)[a], np.array(names, dtype=object)[b], score)
    beta, _ = fit_style(table, x, ridge=ridge)
    # Reference: one row per battle, players ±1, covariates as they are; a tie is a win and a
    # loss at half weight each; the same L2 penalty on every coefficient (C = 1/ridge).
    m = len(a)
    design = np.zeros((m, 4 + x.shape[1]))
    design[np.arange(m), a] = 1.0
    design[np.arange(m), b] = -1.0
    design[:, 4:] = x
    rows = np.concatenate([design, design])
    y = np.concatenate([np.ones(m), np.zeros(m)])
    weight = np.concatenate([score, 1.0 - score])
    model = linear_model.LogisticRegression(fit_intercept=False, C=1.0 / ridge, tol=1e-12, max_iter=10_000)
    model.fit(rows, y, sample_weight=weight)
    reference = model.coef_[0]
    reference[:4] -= reference[:4].mean()
    elo = 400 / math.log(10)
    assert beta * elo == pytest.approx(reference * elo, abs=1e-3)  # within a thousandth of an Elo point


def test_bootstrap_intervals_are_seeded_and_cover_the_point() -> None:
    names, a, b, score, x, _ = planted(seed=5, battles=1500)
    question = [f"q{i % 300}" for i in range(len(a))]
    table = from_columns(np.array(names, dtype=object)[a], np.array(names, dtype=object)[b], score, question)
    one = style_control(table, x, rng=np.random.default_rng(1), rounds=30)
    two = style_control(table, x, rng=np.random.default_rng(1), rounds=30)
    assert one == two
    assert one.interval.startswith("bootstrap (30 rounds")
    for r in one.ratings:
        assert r.low < r.rating < r.high
    assert one.coefficients[0].low < one.coefficients[0].value < one.coefficients[0].high


def test_covariate_shape_is_checked() -> None:
    table = from_columns(["a", "b"], ["b", "a"], ["A", "B"])
    with pytest.raises(ValueError, match=f"battles × {len(FEATURES)}"):
        style_control(table, np.zeros((2, 3)))
