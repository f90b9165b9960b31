"""Colours: the scales the charts fill with, and a text colour readable on any of them.

Cell text must meet WCAG AA (4.5:1) against its cell, whatever the value: rather than trust a
scale's middle to be light enough, the text colour is worked out from the cell's luminance.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

BLACK, WHITE = "#000000", "#ffffff"
INK = "#222222"  # labels and axes, on the page's white background (15.9:1)
# Line and label colours of the history chart: tab10's hues, darkened where needed so that each,
# as label text on white, meets 4.5:1 (tests/test_charts.py checks).
PALETTE = ("#1f77b4", "#c45100", "#2a7d2a", "#d62728", "#7b4fa6", "#8c564b", "#b8327f", "#5f5f5f",
           "#6b6b00", "#0e7c86")


def parse_hex(colour: str) -> tuple[int, int, int]:
    """"#rrggbb" as three 0-255 channels."""
    if len(colour) != 7 or colour[0] != "#":
        raise ValueError(f"not a #rrggbb colour: {colour!r}")
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def relative_luminance(colour: str) -> float:
    """WCAG 2's relative luminance of "#rrggbb": 0 for black, 1 for white."""
    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = map(linear, parse_hex(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(one: str, other: str) -> float:
    """WCAG 2's contrast ratio of two colours, 1 (none) to 21 (black on white)."""
    light, dark = sorted((relative_luminance(one), relative_luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


@functools.lru_cache(maxsize=1024)  # a heatmap asks the same few fills hundreds of times
def pick_text_colour(background: str) -> str:
    """Black or white, whichever contrasts more with `background`: one of them always reaches
    4.58:1 or more, so text drawn in it on that background meets WCAG AA."""
    return BLACK if contrast_ratio(background, BLACK) >= contrast_ratio(background, WHITE) else WHITE


@dataclass(frozen=True)
class Ramp:
    """A colour scale over [0, 1]: evenly spaced stops, linear in between (sRGB)."""

    stops: tuple[str, ...]

    @functools.lru_cache(maxsize=4096)  # noqa: B019  (the ramps are module constants: kept for good)
    def __call__(self, t: float) -> str:
        t = min(max(t, 0.0), 1.0) * (len(self.stops) - 1)
        i = min(int(t), len(self.stops) - 2)
        low, high, f = parse_hex(self.stops[i]), parse_hex(self.stops[i + 1]), t - i
        return "#" + "".join(f"{round(a + (b - a) * f):02x}" for a, b in zip(low, high))


# ColorBrewer's RdBu (red: the row player lost, blue: it won; near white at 50%) and Blues.
DIVERGING = Ramp(("#b2182b", "#ef8a62", "#f7f7f7", "#67a9cf", "#2166ac"))
SEQUENTIAL = Ramp(("#f7fbff", "#c6dbef", "#6baed6", "#2171b5", "#08306b"))
