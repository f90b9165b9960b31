"""AlpacaEval's length-controlled win rate: what a model's win rate against a baseline would be
if its outputs were as long as the baseline's.

A judge that prefers longer answers inflates the plain win rate of a verbose model. AlpacaEval 2
(metrics/glm_winrate.py, `length_controlled_v1`) fits, per model, a logistic GLM of the judge's
preference x ∈ [0, 1] (1 = the model's output is preferred) on three terms, no intercept:

    logit P(model preferred on instruction i) = w_length·tanh(Δ_i / sd(Δ)) + w_difficulty·d_i + w_model

with Δ_i = baseline length − model length (characters; sd over the model's instructions) and d_i
the instruction's difficulty, fitted once across many models (`fit_instruction_difficulty`).
The LC win rate is 100·mean_i σ(w_model + w_difficulty·d_i): the length term zeroed. Against
another model m' than the fitted baseline, each weight is the difference of the two models'.

AlpacaEval fits with an L1 penalty (its C chosen by 5-fold cross-validation) and, in v1, adds the
baseline's own verbose and concise runs at weight 0.1 each so that the length term does not soak
up quality; those runs are inputs of `fit_length_controlled` (`anchors`) when available. Fits are
Newton's method on a tiny convex problem (three weights; the L1 part by coordinate descent), the
difficulties by block Newton (each instruction, then each model's pair of weights), so memory is
linear in the preferences. Pure numpy; no randomness.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_L1 = 0.05  # 1/C: AlpacaEval's cross-validation picks C among 10^-4..10^4; on 805 prompts it is weak
DIFFICULTY_RIDGE = 1.0  # the joint fit's pull of each instruction's difficulty towards 0 (identifies it)
ANCHOR_WEIGHT = 0.1  # AlpacaEval v1: λ = 0.2 shared by the baseline's two length-gamed runs


@dataclass(frozen=True)
class GlmWeights:
    """One model's GLM weights against the fitted baseline (whose weights are all 0)."""

    length: float
    difficulty: float
    model: float


NO_WEIGHTS = GlmWeights(0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Run:
    """One model's judged instructions against the baseline.

    preferences: the model's share x ∈ [0, 1] per instruction (NaN: no verdict, left out);
    instructions: an index into the difficulty vector; lengths in characters.
    """

    preferences: tuple[float, ...]
    instructions: tuple[int, ...]
    model_lengths: tuple[float, ...]
    baseline_lengths: tuple[float, ...]


@dataclass(frozen=True)
class LengthControlled:
    """A model's length-controlled win rate (percent) and AlpacaEval's standard error of it (the
    standard error of the mean of the per-instruction predictions), with the fitted weights."""

    lc_win_rate: float
    lc_standard_error: float
    weights: GlmWeights
    n: int


def alpaca_share(preference: float) -> float:
    """AlpacaEval's stored preference (1 = baseline, 2 = model, 0 or 1.5 = draw) as the model's share."""
    value = float(preference)
    return 0.5 if value == 0 else value - 1.0


def length_feature(model_lengths: Sequence[float], baseline_lengths: Sequence[float]) -> np.ndarray:
    """tanh of the baseline-minus-model length gap in standard deviations (0 where they never differ)."""
    delta = np.asarray(baseline_lengths, dtype=float) - np.asarray(model_lengths, dtype=float)
    sd = float(delta.std(ddof=1)) if delta.size > 1 else 0.0
    return np.tanh(delta / sd) if sd > 0 else np.zeros_like(delta)


def predicted_preferences(weights: GlmWeights, difficulty: np.ndarray, baseline: GlmWeights = NO_WEIGHTS) -> np.ndarray:
    """σ(Δw_model + Δw_difficulty·d_i) per instruction: the model's predicted share at equal length."""
    slope = weights.difficulty - baseline.difficulty
    logit = (weights.model - baseline.model) + slope * np.asarray(difficulty, dtype=float)
    return np.exp(-np.logaddexp(0.0, -logit))


def lc_win_rate(weights: GlmWeights, difficulty: np.ndarray, baseline: GlmWeights = NO_WEIGHTS) -> tuple[float, float]:
    """(LC win rate, its standard error), percent, from weights (published or fitted)."""
    p = predicted_preferences(weights, difficulty, baseline)
    if p.size == 0:
        return math.nan, math.nan
    error = 100.0 * float(p.std(ddof=1)) / math.sqrt(p.size) if p.size > 1 else math.nan
    return 100.0 * float(p.mean()), error


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def _cross_entropy(X: np.ndarray, y: np.ndarray, weight: np.ndarray, w: np.ndarray) -> float:
    eta = X @ w
    return float(np.sum(weight * (np.logaddexp(0.0, eta) - y * eta)))


def fit_l1_logistic(X: np.ndarray, y: np.ndarray, weight: np.ndarray, l1: float = DEFAULT_L1,
                    max_steps: int = 100) -> np.ndarray:
    """argmin_w Σ weight·CE(y, σ(Xw)) + l1·|w|₁ for continuous y ∈ [0, 1] (liblinear's objective
    with C = 1/l1): proximal Newton, the inner L1 step by coordinate descent, with backtracking."""
    w = np.zeros(X.shape[1])

    def objective(v: np.ndarray) -> float:
        return _cross_entropy(X, y, weight, v) + l1 * float(np.abs(v).sum())

    current = objective(w)
    for _ in range(max_steps):
        p = _sigmoid(X @ w)
        g = X.T @ (weight * (p - y))
        H = (X * (weight * p * (1 - p))[:, None]).T @ X + 1e-12 * np.eye(X.shape[1])
        target = w.copy()
        for _sweep in range(50):  # minimise g·(v-w) + ½(v-w)ᵀH(v-w) + l1|v|₁ over v
            for j in range(X.shape[1]):
                rest = g[j] + H[j] @ (target - w) - H[j, j] * (target[j] - w[j])
                z = H[j, j] * w[j] - rest
                target[j] = np.sign(z) * max(abs(z) - l1, 0.0) / H[j, j]
        step, t = target - w, 1.0
        while t > 1e-8:
            trial = objective(w + t * step)
            if trial <= current + 1e-12:
                break
            t /= 2
        else:
            return w
        w, current = w + t * step, trial
        if np.max(np.abs(t * step)) < 1e-10:
            break
    return w


def _arrays(run: Run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shares, instruction indices, length feature) of a run's valid verdicts."""
    x = np.asarray(run.preferences, dtype=float)
    keep = np.isfinite(x) & (x >= 0) & (x <= 1)
    feature = length_feature(np.asarray(run.model_lengths, float)[keep], np.asarray(run.baseline_lengths, float)[keep])
    return x[keep], np.asarray(run.instructions, dtype=int)[keep], feature


def fit_length_controlled(run: Run, difficulty: np.ndarray, *, anchors: Sequence[Run] = (),
                          l1: float = DEFAULT_L1) -> LengthControlled:
    """Fit one model's GLM and predict its LC win rate over the run's instructions.

    anchors: the baseline's own length-gamed runs (AlpacaEval v1's verbose and concise outputs of
    the baseline), fitted with w_model's column at 0 and weight ANCHOR_WEIGHT.
    """
    difficulty = np.asarray(difficulty, dtype=float)
    y, idx, feature = _arrays(run)
    if y.size == 0:
        return LengthControlled(math.nan, math.nan, NO_WEIGHTS, 0)
    blocks = [(np.column_stack([feature, difficulty[idx], np.ones_like(y)]), y, np.ones_like(y))]
    for anchor in anchors:
        ay, aidx, afeature = _arrays(anchor)
        blocks.append((np.column_stack([afeature, difficulty[aidx], np.zeros_like(ay)]), ay,
                       np.full_like(ay, ANCHOR_WEIGHT)))
    X, target, weight = (np.concatenate(parts) for parts in zip(*blocks))
    w = fit_l1_logistic(X, target, weight, l1)
    weights = GlmWeights(length=float(w[0]), difficulty=float(w[1]), model=float(w[2]))
    rate, error = lc_win_rate(weights, difficulty[idx])
    return LengthControlled(rate, error, weights, int(y.size))


def fit_instruction_difficulty(runs: Sequence[Run], n_instructions: int, *, ridge: float = DIFFICULTY_RIDGE,
                               max_rounds: int = 500, tolerance: float = 1e-8) -> np.ndarray:
    """Each instruction's difficulty, fitted jointly across models as AlpacaEval's notebook does:
    logit = w_length(m)·tanh(Δ/sd) + w_model(m) + d_i, ridge on d (which fixes its level).

    Block Newton: one exact Newton step per instruction, then per model's (length, model) pair,
    until no parameter moves by more than `tolerance`. Instructions no run judged stay at 0.
    """
    parts = [_arrays(run) for run in runs]
    parts = [p for p in parts if p[0].size]
    d = np.zeros(n_instructions)
    if not parts:
        return d
    y = np.concatenate([p[0] for p in parts])
    idx = np.concatenate([p[1] for p in parts])
    t = np.concatenate([p[2] for p in parts])
    m = np.concatenate([np.full(p[0].size, k) for k, p in enumerate(parts)])
    slope, bias = np.zeros(len(parts)), np.zeros(len(parts))
    for _ in range(max_rounds):
        p = _sigmoid(slope[m] * t + bias[m] + d[idx])
        r, h = p - y, p * (1 - p)
        d_step = (np.bincount(idx, r, n_instructions) + ridge * d) / (np.bincount(idx, h, n_instructions) + ridge)
        d = d - d_step
        p = _sigmoid(slope[m] * t + bias[m] + d[idx])
        r, h = p - y, p * (1 - p)
        k = len(parts)
        g_s, g_b = np.bincount(m, r * t, k), np.bincount(m, r, k)
        h_ss = np.bincount(m, h * t * t, k) + 1e-9
        h_sb = np.bincount(m, h * t, k)
        h_bb = np.bincount(m, h, k) + 1e-9
        det = h_ss * h_bb - h_sb ** 2
        s_step, b_step = (h_bb * g_s - h_sb * g_b) / det, (h_ss * g_b - h_sb * g_s) / det
        slope, bias = slope - s_step, bias - b_step
        if max(np.abs(d_step).max(), np.abs(s_step).max(), np.abs(b_step).max()) < tolerance:
            break
    return d
