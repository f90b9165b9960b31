"""Axes: round tick values, the linear map from data to drawing, and labels kept apart.

Ticks are round numbers (1, 2 or 5 times a power of ten) that cover the data, so a reader can
interpolate between them and no point sits beyond the last one.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

STEPS = (1.0, 2.0, 5.0, 10.0)


@dataclass(frozen=True)
class Ticks:
    """Round values from `values[0]` (at or below the data) to `values[-1]` (at or above)."""

    values: tuple[float, ...]
    step: float

    @property
    def low(self) -> float:
        return self.values[0]

    @property
    def high(self) -> float:
        return self.values[-1]

    def label(self, value: float) -> str:
        """`value` with as many decimals as the step needs (none for a step of 1 or more)."""
        return f"{value + 0.0:.{max(0, -math.floor(math.log10(self.step)))}f}"  # + 0.0: no "-0"


def choose_ticks(low: float, high: float, count: int = 5) -> Ticks:
    """About `count` round ticks covering [low, high]; a zero span is widened so it shows."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"ticks need finite bounds, not {low}..{high}")
    low, high = min(low, high), max(low, high)
    if high == low:
        pad = abs(low) * 0.05 or 1.0
        low, high = low - pad, high + pad
    raw = (high - low) / max(count - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in STEPS if m * power >= raw * (1 - 1e-9))
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    digits = max(0, -math.floor(math.log10(step)))
    return Ticks(tuple(round(k * step, digits) for k in range(first, last + 1)), step)


@dataclass(frozen=True)
class Scale:
    """The linear map of `domain` onto `span` (drawing units; a y span runs bottom to top)."""

    domain: tuple[float, float]
    span: tuple[float, float]

    def __call__(self, value: float) -> float:
        (d0, d1), (s0, s1) = self.domain, self.span
        return s0 + (value - d0) * (s1 - s0) / ((d1 - d0) or 1.0)


def spread_apart(positions: Sequence[float], gap: float, low: float, high: float) -> list[float]:
    """`positions` moved as little as this simple pass manages so that neighbours are at least
    `gap` apart and all lie within [low, high] (when they fit); the input order is kept.

    Line-end labels of lines that end close together would otherwise print over each other."""
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    placed = [min(max(positions[i], low), high) for i in order]
    for k in range(1, len(placed)):  # push down
        placed[k] = max(placed[k], placed[k - 1] + gap)
    if placed and placed[-1] > high:  # push back up from the bottom
        placed[-1] = high
        for k in range(len(placed) - 2, -1, -1):
            placed[k] = min(placed[k], placed[k + 1] - gap)
    result = [0.0] * len(positions)
    for i, value in zip(order, placed):
        result[i] = value
    return result

