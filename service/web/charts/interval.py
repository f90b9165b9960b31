"""Ratings with their 95% intervals: a plot of the whole board on one axis, and a tiny bar per
table row on the same shared axis.

Overlapping intervals are the honest answer to "is A really better than B?": the board's rank
column says who is ahead, these say by how much the verdicts can tell.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from leaderboard.types import Rating
from service.web.charts.axis import Scale, Ticks, choose_ticks
from service.web.charts.chart import EMPTY, END, GAP, GRID, TICK_FONT, Chart, Table, document, esc, estimate_width, label, num, truncate
from service.web.charts.colour import INK

ROW, PLOT, DOT = 20, 400, 4
MARK, FEW, TRACK = "#2166ac", "#767676", "#dddddd"
UNBOUNDED_NOTE = "hollow dot: no interval (its group's verdicts order the players but do not bound them)"


@dataclass(frozen=True)
class Interval:
    """One player's rating and 95% interval; `low`/`high` None where the verdicts bound none."""

    player: str
    rating: float
    low: float | None = None
    high: float | None = None
    matches: int = 0

    @property
    def bounded(self) -> bool:
        return self.low is not None and self.high is not None

    def describe(self) -> str:
        """"1034, 95% interval 1010–1058", or "1034, no interval"."""
        if not self.bounded:
            return f"{self.rating:.0f}, no interval"
        return f"{self.rating:.0f}, 95% interval {self.low:.0f}–{self.high:.0f}"


def read_intervals(rows: Iterable[Rating]) -> list[Interval]:
    """A board's rows (best first) as intervals: a row of an unbounded group (`bounded`
    False) or with a non-finite bound has none."""
    def bound(row: Rating, value: float) -> float | None:
        return value if row.bounded and math.isfinite(value) else None

    return [Interval(r.player, r.rating, bound(r, r.ci_low), bound(r, r.ci_high), r.matches) for r in rows]


def fit_axis(items: Iterable[Interval]) -> Ticks:
    """Round ticks covering every rating and bound: the axis the plot draws, and the `low` and
    `high` to give each row's `draw_interval_bar` so that a table's bars line up."""
    values = [v for i in items for v in (i.rating, i.low, i.high) if v is not None]
    if not values:
        raise ValueError("no ratings to fit an axis to")
    return choose_ticks(min(values), max(values))


def mark(item: Interval, x: Scale, y: float, dot: float, colour: str, dashed: bool = False) -> str:
    """The whisker (when there is an interval) and the point; a hollow point when there is none."""
    if not item.bounded:
        return (f'<circle cx="{num(x(item.rating))}" cy="{num(y)}" r="{dot}" fill="#ffffff" stroke="{colour}" '
                'stroke-width="1.5"/>')
    dash = ' stroke-dasharray="3 2"' if dashed else ""
    return (f'<line x1="{num(x(item.low))}" x2="{num(x(item.high))}" y1="{num(y)}" y2="{num(y)}" '
            f'stroke="{colour}" stroke-width="2"{dash}/><circle cx="{num(x(item.rating))}" cy="{num(y)}" '
            f'r="{dot}" fill="{colour}"/>')


def draw_intervals(items: Sequence[Interval], *, id_prefix: str, title: str = "Ratings with 95% intervals",
                   few_matches: int | None = None) -> Chart:
    """One row per player in the order given (`read_intervals` of a board: best first), on one
    axis with round ticks; EMPTY for no players. Players with fewer than `few_matches` matches
    are drawn grey and dashed: their intervals rest on little."""
    if not items:
        return EMPTY
    ticks = fit_axis(items)
    left = max(estimate_width(truncate(i.player)) for i in items) + 2 * GAP
    x = Scale((ticks.low, ticks.high), (left, left + PLOT))
    axis_y = GAP + len(items) * ROW
    notes = ([UNBOUNDED_NOTE] if any(not i.bounded for i in items) else []) + (
        [f"grey, dashed: fewer than {few_matches} matches"]
        if few_matches is not None and any(i.matches < few_matches for i in items) else [])
    right = estimate_width(ticks.label(ticks.high), TICK_FONT) / 2 + GAP
    width = max([left + PLOT + right, *(estimate_width(n) + 2 * GAP for n in notes)])
    height = axis_y + 40 + 16 * len(notes)

    parts = [f'<line x1="{num(x(t))}" x2="{num(x(t))}" y1="{GAP}" y2="{num(axis_y)}" stroke="{GRID}"/>'
             f'<text x="{num(x(t))}" y="{num(axis_y + 16)}" text-anchor="middle" font-size="{TICK_FONT}">'
             f"{ticks.label(t)}</text>" for t in ticks.values]
    parts.append(f'<line x1="{num(left)}" x2="{num(left + PLOT)}" y1="{num(axis_y)}" y2="{num(axis_y)}" '
                 f'stroke="{INK}"/><text x="{num(left + PLOT / 2)}" y="{num(axis_y + 32)}" '
                 'text-anchor="middle">Rating (95% interval)</text>')
    for row, item in enumerate(items):
        y = GAP + row * ROW + ROW / 2
        few = few_matches is not None and item.matches < few_matches
        parts.append(f'<g class="{"few" if few else "player"}"><title>{esc(tip(item))}</title>'
                     f"{label(item.player, left - GAP, y, END)}"
                     f"{mark(item, x, y, DOT, FEW if few else MARK, dashed=few)}</g>")
    parts += [f'<text x="{GAP}" y="{num(axis_y + 52 + 16 * k)}">{esc(n)}</text>' for k, n in enumerate(notes)]

    top = max(items, key=lambda i: i.rating)
    missing = sum(not i.bounded for i in items)
    summary = (f"Ratings of {len(items)} players with 95% intervals; {top.player} rates highest "
               f"({top.describe()})" + (f"; {missing} without an interval." if missing else "."))
    table = Table(("Player", "Rating", "95% low", "95% high", "Matches"), tuple(
        (i.player, f"{i.rating:.0f}", *(f"{v:.0f}" if v is not None else "—" for v in (i.low, i.high)),
         str(i.matches)) for i in items))
    return Chart(document("intervals", width, height, id_prefix, title, summary, "".join(parts)), summary, table)


def tip(item: Interval) -> str:
    """A player's rating, interval and matches, as one line of text."""
    return f"{item.player}: {item.describe()}; {item.matches} matches"


def draw_interval_bar(item: Interval, *, low: float, high: float, id_prefix: str, width: int = 120,
                      height: int = 14) -> Chart:
    """One table row's interval and point, tiny (it is repeated per row), on the axis [low, high]
    that all rows share (`fit_axis`); a bound beyond it is drawn at its edge."""
    x = Scale((low, high), (DOT, width - DOT))

    def clamp(value: float | None) -> float | None:
        return None if value is None else min(max(value, low), high)

    shown = Interval(item.player, clamp(item.rating), clamp(item.low), clamp(item.high), item.matches)
    y = height / 2
    body = (f'<line x1="0" x2="{width}" y1="{num(y)}" y2="{num(y)}" stroke="{TRACK}"/>'
            f"{mark(shown, x, y, DOT - 1, MARK)}")
    summary = tip(item)
    return Chart(document("bar", width, height, id_prefix, f"{item.player} rating", summary, body), summary,
                 Table(("Player", "Rating"), ((item.player, item.describe()),)))
