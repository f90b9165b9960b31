"""Style control: Bradley-Terry with per-battle style covariates, ratings with style removed.

A judge (or a crowd) that prefers long or heavily formatted answers rewards style as well as
substance. Following Chatbot Arena's style control, each battle carries covariates: for length
and for markdown headers, list items and bold spans, the normalised difference
(a - b) / (a + b + 1) between the two outputs, then standardised over the battles (mean 0,
sd 1; a constant column stays 0). The fit is one joint likelihood:

    logit P(a beats b) = θ_a - θ_b + x·γ

ties half a win each way, as in the plain fit; ridge on θ (the plain fit's default) and on γ.
θ is each player's rating with the style effect removed; γ says how much one standard deviation
of each covariate is worth. Newton's method on the joint parameters (a few steps: the objective
is convex); 95% intervals from the inverse Hessian (Fisher), or a bootstrap over questions with
a passed-in generator. The covariates vary per battle, so unlike the plain fit this one cannot
run on pair counts: each Newton step is O(battles × covariates) in numpy.

Exceptions: `StyleUnavailable` (a ValueError) when battles have no outputs to measure (imported
verdicts carry only who won); `ConvergenceError` from leaderboard.fit.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from .battles import BattleLike, BattleTable, Columns, battle_table
from .fit import DEFAULT_RIDGE, elo_scale, half_widths
from .newton import minimize, spd_solve
from .ratings import bradley_terry_intervals

FEATURES = ("length", "headers", "lists", "bold")

_CODE_BLOCK = re.compile(r"```[^`]*```")
_HEADER = re.compile(r"^#{1,6}\s", re.MULTILINE)
_LIST = re.compile(r"^\s*(?:\d+\.|[-*+])\s", re.MULTILINE)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


class StyleUnavailable(ValueError):
    """Style control needs both outputs of every battle, and these battles lack some."""


@dataclass(frozen=True)
class Style:
    """What the covariates measure in one output."""

    length: float
    headers: int
    lists: int
    bold: int

    def vector(self) -> tuple[float, ...]:
        return (self.length, self.headers, self.lists, self.bold)


def style_of(text: str, *, length: Callable[[str], float] = len) -> Style:
    """The style of one output, as Chatbot Arena counts it: markdown inside ``` code blocks
    is not counted; `length` measures the whole text (characters by default; pass a token
    counter to measure tokens as the Arena does)."""
    prose = _CODE_BLOCK.sub("", text)
    return Style(float(length(text)), len(_HEADER.findall(prose)), len(_LIST.findall(prose)), len(_BOLD.findall(prose)))


def covariates(styles_a: Sequence[Style | None], styles_b: Sequence[Style | None]) -> np.ndarray:
    """Battles × 4 standardised covariates from the two sides' styles.

    Raises `StyleUnavailable` naming how many battles lack an output.
    """
    missing = sum(sa is None or sb is None for sa, sb in zip(styles_a, styles_b))
    if missing:
        raise StyleUnavailable(
            f"{missing} of {len(styles_a)} battles have no outputs (imported verdicts carry only who won), "
            "and style control measures the outputs themselves"
        )
    # `missing` is 0: no style is None
    va = np.array([s.vector() for s in cast(Sequence[Style], styles_a)], dtype=float).reshape(-1, len(FEATURES))
    vb = np.array([s.vector() for s in cast(Sequence[Style], styles_b)], dtype=float).reshape(-1, len(FEATURES))
    return standardise((va - vb) / (va + vb + 1.0))


def standardise(diff: np.ndarray) -> np.ndarray:
    """Columns to mean 0, sd 1 (population sd); a constant column becomes 0."""
    sd = diff.std(axis=0)
    return (diff - diff.mean(axis=0)) / np.where(sd > 0, sd, 1.0)  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


@dataclass(frozen=True)
class StyleRating:
    """One player: the rating with style removed and the plain rating, each with its interval."""

    player: str
    rating: float
    low: float
    high: float
    plain: float
    plain_low: float
    plain_high: float


@dataclass(frozen=True)
class Coefficient:
    """One covariate's effect, in Elo points per standard deviation of the covariate."""

    name: str
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class StyleBoard:
    """The style-controlled board: players by controlled rating, and the coefficients."""

    ratings: list[StyleRating]
    coefficients: list[Coefficient]
    interval: str


def fit_style(
    table: BattleTable,
    x: np.ndarray,
    *,
    ridge: float = DEFAULT_RIDGE,
    tol: float = 1e-10,
    max_iter: int = 100,
    weight: np.ndarray | None = None,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(β, penalised Hessian) in natural-log units: β = [θ (players, mean 0); γ (covariates)]."""
    n, k = len(table.players), x.shape[1]
    w = table.weight if weight is None else weight
    a, b, s = table.a, table.b, table.score
    size = n + k
    penalty = ridge * np.eye(size)
    penalty[:n, :n] += 1.0 / max(n, 1)  # the centring of θ: its shift is not identified

    def parts(beta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        theta, gamma = beta[:n], beta[n:]
        z = theta[a] - theta[b] + x @ gamma
        p = 0.5 * (1.0 + np.tanh(0.5 * z))
        nll = float(np.sum(w * (np.logaddexp(0.0, z) - s * z))) + 0.5 * float(beta @ penalty @ beta)
        r = w * (p - s)
        grad = np.concatenate([np.bincount(a, r, n) - np.bincount(b, r, n), x.T @ r]) + penalty @ beta
        h = w * p * (1.0 - p)
        pair = np.bincount(a * n + b, h, n * n).reshape(n, n)
        pair = pair + pair.T
        hess = np.empty((size, size))
        hess[:n, :n] = np.diag(pair.sum(axis=1)) - pair
        hx = h[:, None] * x
        cross = np.array([np.bincount(a, hx[:, j], n) - np.bincount(b, hx[:, j], n) for j in range(k)]).T.reshape(n, k)
        hess[:n, n:], hess[n:, :n], hess[n:, n:] = cross, cross.T, x.T @ hx
        return nll, grad, hess + penalty

    last: list[tuple[bytes, tuple[float, np.ndarray, np.ndarray]]] = []

    def at(beta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """`parts` once per point: Newton asks for the value at a point, then its derivatives."""
        key = beta.tobytes()
        if not last or last[0][0] != key:
            last[:] = [(key, parts(beta))]
        return last[0][1]

    beta = minimize(lambda beta: at(beta)[0], lambda beta: at(beta)[1:],
                    np.zeros(size) if start is None else np.asarray(start, dtype=float),
                    tol=tol, max_iter=max_iter, what="style-controlled", search_above=1e-12)
    beta[:n] -= beta[:n].mean()
    return beta, parts(beta)[2]


def style_control(
    battles: Iterable[BattleLike] | BattleTable | Columns,  # not PairCounts: `x` is per battle
    x: np.ndarray,
    *,
    names: Sequence[str] = FEATURES,
    ridge: float = DEFAULT_RIDGE,
    confidence: float = 0.95,
    base: float = 10.0,
    scale: float = 400.0,
    mean: float = 1000.0,
    rng: np.random.Generator | None = None,
    rounds: int = 100,
) -> StyleBoard:
    """The style-controlled board beside the plain one, on the Elo scale.

    `x` holds one row of covariates per battle, in the battles' order (`covariates`). Intervals
    are closed-form (Fisher) unless `rng` is given: then `rounds` bootstrap refits over
    resampled questions give percentile intervals for both the ratings and the coefficients.
    """
    table = battle_table(battles)
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or len(x) != len(table.a) or x.shape[1] != len(names):
        raise ValueError(f"covariates must be battles × {len(names)}, got {x.shape} for {len(table.a)} battles")
    n, unit = len(table.players), elo_scale(base, scale)
    beta, hess = fit_style(table, x, ridge=ridge)
    if rng is None:
        cov = spd_solve(hess, np.eye(n + x.shape[1]))
        cov[:n, :n] -= 1.0 / (n * (1.0 + ridge))  # drop the unidentified shift (see fit.covariance)
        half = half_widths(cov, confidence, base, scale)
        low, high = beta * unit - half, beta * unit + half
        interval = "fisher"
    else:
        low, high = _bootstrap(table, x, beta, rng, rounds=rounds, ridge=ridge, confidence=confidence, unit=unit)
        interval = f"bootstrap ({rounds} rounds over questions)"
    plain = bradley_terry_intervals(table, ridge=ridge, confidence=confidence, base=base, scale=scale, mean=mean)
    ratings = [
        StyleRating(p, mean + beta[i] * unit, mean + low[i], mean + high[i], *plain[p])
        for i, p in enumerate(table.players)
    ]
    ratings.sort(key=lambda r: -r.rating)
    coefficients = [
        Coefficient(name, beta[n + j] * unit, low[n + j], high[n + j]) for j, name in enumerate(names)
    ]
    return StyleBoard(ratings, coefficients, interval)


def _bootstrap(
    table: BattleTable, x: np.ndarray, beta: np.ndarray, rng: np.random.Generator, *,
    rounds: int, ridge: float, confidence: float, unit: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals (Elo units, relative to the mean) from refits on resampled questions."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    count = table.groups
    draws = rng.multinomial(count, np.full(count, 1.0 / count), size=rounds)
    samples = np.empty((rounds, len(beta)))
    for r in range(rounds):
        samples[r], _ = fit_style(table, x, ridge=ridge, weight=table.weight * draws[r, table.group], start=beta)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples * unit, [alpha, 1.0 - alpha], axis=0)
    return low, high
