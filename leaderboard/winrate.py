"""AlpacaEval's head-to-head metrics: a model's win rate against one baseline, from judge preferences.

AlpacaEval's judge scores each prompt as a preference in [1, 2]: 1 = the baseline's output is
better, 2 = the model's, 1.5 (or the legacy 0) = a draw; the weighted judges give any value in
between from log-probabilities. Reproducing its published leaderboards exactly is how we know our
counting agrees with theirs, so this follows AlpacaEval's definition (metrics/helpers.py,
`describe_head2head`) to the letter, including its quirks (draws are counted before invalid
values are dropped; the discrete rate rounds half to even).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Preference = float | int | str | None


@dataclass(frozen=True)
class WinRate:
    """Win rate (percent, a draw counting half) and standard error of a model against the baseline.

    n_wins / n_wins_base: prompts where the model / the baseline is preferred (x > ½ / x < ½);
    n_draws: preferences of exactly 1.5 or 0; n_total: valid preferences. discrete_win_rate:
    the same with every preference rounded to a plain win, loss or draw.
    """

    win_rate: float
    standard_error: float
    n_wins: int
    n_wins_base: int
    n_draws: int
    n_total: int
    discrete_win_rate: float


def _number(value: Preference) -> float:
    """A preference as a float; NaN for anything non-numeric (None, "", "n/a", a bool)."""
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _head_to_head(values: np.ndarray) -> tuple[float, float, int, int, int, int]:
    """(win rate, SE, wins, base wins, draws, total) of preferences, AlpacaEval's way.

    Draws (1.5 or 0) are counted first; then 0 → 1.5, values outside [1, 2] (NaN included) are
    dropped, and x = preference - 1 is averaged: win rate 100·mean(x), SE 100·sd(x, ddof=1)/√n.
    """
    draws = int(np.count_nonzero((values == 1.5) | (values == 0)))
    values = np.where(values == 0, 1.5, values)
    with np.errstate(invalid="ignore"):
        x = values[(values >= 1) & (values <= 2)] - 1.0
    n = x.size
    rate = 100.0 * float(x.mean()) if n else math.nan
    error = 100.0 * float(x.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    return rate, error, int(np.count_nonzero(x > 0.5)), int(np.count_nonzero(x < 0.5)), draws, n


def alpaca_metrics(preferences: Sequence[Preference]) -> WinRate:
    """AlpacaEval's leaderboard columns from one model's preferences against the baseline.

    Strings are parsed as numbers (a CSV cell), so a file's column can be passed as read.
    """
    values = np.array([_number(p) for p in preferences], dtype=float)
    rate, error, wins, base, draws, total = _head_to_head(values)
    # Discrete (AlpacaEval's zero-one rule): 1.5 → 0 (a draw), then round half to even.
    discrete = _head_to_head(np.round(np.where(values == 1.5, 0.0, values)))[0]
    return WinRate(
        win_rate=rate,
        standard_error=error,
        n_wins=wins,
        n_wins_base=base,
        n_draws=draws,
        n_total=total,
        discrete_win_rate=discrete,
    )
