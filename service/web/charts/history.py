"""The history of a recurring tournament: each player's rating across its runs, one line each,
with a translucent band for the 95% interval where there is one.

A board says where players stand now; the history says whether that is news (a model that moved
after a new version) or noise (lines crossing inside each other's bands).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from service.web.charts.axis import Scale, choose_ticks, spread_apart
from service.web.charts.chart import (
    EMPTY,
    END,
    FONT_SIZE,
    GAP,
    GRID,
    TICK_FONT,
    Chart,
    Table,
    document,
    esc,
    estimate_width,
    label,
    num,
    truncate,
)
from service.web.charts.colour import INK, PALETTE
from service.web.charts.interval import Interval

PLOT_W, PLOT_H, DOT, BAND_OPACITY = 480, 200, 2.5, 0.15
LINE_GAP = FONT_SIZE + 2  # end labels at least this far apart


@dataclass(frozen=True)
class Run:
    """One finished run's board: `time` when it was snapshotted (Unix seconds), `rows` best first."""

    run: int
    time: float
    rows: tuple[Interval, ...]


def read_runs(snapshots: Iterable[Mapping]) -> list[Run]:
    """`Store.snapshots` (as GET /api/leaderboard/history serves them: {"run", "time", "rows"},
    oldest first) as runs; a row without a rating is left out."""
    return [
        Run(int(s["run"]), float(s["time"]), tuple(
            Interval(r["player"], r["rating"], r.get("ci_low"), r.get("ci_high"))
            for r in s["rows"] if r.get("rating") is not None))
        for s in snapshots
    ]


def date_labels(times: Sequence[float]) -> list[str]:
    """Run times as short UTC dates: "Mar 05", with the year when the runs span more than one,
    with the time when two runs share a day."""
    days = [datetime.fromtimestamp(t, timezone.utc) for t in times]
    fmt = "%Y-%m-%d" if len({d.year for d in days}) > 1 else "%b %d"
    if len({d.date() for d in days}) < len(days):
        fmt += " %H:%M"
    return [d.strftime(fmt) for d in days]


def band(points: Sequence[tuple[float, Interval]], y: Scale) -> str:
    """A path around the intervals of consecutive runs (a lone run's: a narrow box)."""
    xs = [x for x, _ in points] if len(points) > 1 else [points[0][0] - DOT, points[0][0] + DOT]
    items = [i for _, i in points] * (1 if len(points) > 1 else 2)
    upper = [f"{num(x)},{num(y(i.high))}" for x, i in zip(xs, items)]
    lower = [f"{num(x)},{num(y(i.low))}" for x, i in zip(reversed(xs), reversed(items))]
    return f'<path d="M{" L".join(upper + lower)} Z" stroke="none" fill-opacity="{BAND_OPACITY}"/>'


def bounded_runs(points: Sequence[tuple[int, float, Interval]]) -> list[list[tuple[float, Interval]]]:
    """The stretches of consecutive runs in which a player has an interval."""
    stretches: list[list[tuple[float, Interval]]] = []
    last = None
    for k, x, item in points:
        if item.bounded:
            if last is None or k != last + 1:
                stretches.append([])
            stretches[-1].append((x, item))
            last = k
        else:
            last = None
    return stretches


def draw_history(runs: Sequence[Run], *, id_prefix: str, title: str = "Ratings by run",
                 players: int = 10) -> Chart:
    """One line per player across the runs (evenly spaced, oldest left), for the `players` best
    of the latest run; each line labelled at its end, the labels nudged apart when lines end
    close together. EMPTY when there is no run or the latest has no rating."""
    chosen = [r.player for r in runs[-1].rows][:players] if runs else []
    if not chosen:
        return EMPTY
    n = len(runs)
    series = {p: [(k, item) for k, run in enumerate(runs) for item in run.rows if item.player == p] for p in chosen}
    values = [v for points in series.values() for _, i in points for v in (i.rating, i.low, i.high) if v is not None]
    ticks = choose_ticks(min(values), max(values))
    dates = date_labels([r.time for r in runs])
    date_w = max(estimate_width(d, TICK_FONT) for d in dates)
    tick_w = max(estimate_width(ticks.label(t), TICK_FONT) for t in ticks.values)
    left = max(tick_w + 2 * GAP, date_w / 2 + GAP)
    plot_h = max(PLOT_H, len(chosen) * LINE_GAP)
    top = GAP + FONT_SIZE / 2
    bottom = top + plot_h
    step = PLOT_W / (n - 1) if n > 1 else PLOT_W

    def x(k: int) -> float:
        return left + (k * step if n > 1 else PLOT_W / 2)

    y = Scale((ticks.low, ticks.high), (bottom, top))
    end_x = x(n - 1)
    label_x = end_x + 2 * GAP
    width = max(label_x + max(estimate_width(truncate(p)) for p in chosen), end_x + date_w / 2) + GAP
    height = bottom + 2 * TICK_FONT + 2 * GAP

    parts = [f'<line x1="{num(left)}" x2="{num(left + PLOT_W)}" y1="{num(y(t))}" y2="{num(y(t))}" stroke="{GRID}"/>'
             f'<text x="{num(left - GAP)}" y="{num(y(t))}"{END} font-size="{TICK_FONT}">{ticks.label(t)}</text>'
             for t in ticks.values]
    every = math.ceil((date_w + GAP) / step)  # label every run that leaves room, the latest always
    for k in range(n):
        parts.append(f'<line x1="{num(x(k))}" x2="{num(x(k))}" y1="{num(bottom)}" y2="{num(bottom + 4)}" '
                     f'stroke="{INK}"/>')
        if (n - 1 - k) % every == 0:
            parts.append(f'<text x="{num(x(k))}" y="{num(bottom + TICK_FONT + GAP)}" text-anchor="middle" '
                         f'font-size="{TICK_FONT}">{esc(dates[k])}</text>')
    parts.append(f'<line x1="{num(left)}" x2="{num(left + PLOT_W)}" y1="{num(bottom)}" y2="{num(bottom)}" '
                 f'stroke="{INK}"/>')

    ends = [y(series[p][-1][1].rating) for p in chosen]
    placed = spread_apart(ends, LINE_GAP, top, bottom)
    for rank, (player, end, at) in enumerate(zip(chosen, ends, placed)):
        colour = PALETTE[rank % len(PALETTE)]
        points = [(k, x(k), item) for k, item in series[player]]
        line = " ".join(f"{num(px)},{num(y(i.rating))}" for _, px, i in points)
        leader = (f'<line x1="{num(end_x + DOT)}" y1="{num(end)}" x2="{num(label_x - 2)}" y2="{num(at)}" '
                  f'stroke="{colour}"/>' if abs(at - end) > 1 else "")
        parts.append(
            f'<g class="series" fill="{colour}"><title>{esc(player)}</title>'
            + "".join(band(stretch, y) for stretch in bounded_runs(points))
            + f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{line}"/>'
            + "".join(f'<circle cx="{num(px)}" cy="{num(y(i.rating))}" r="{DOT}"/>' for _, px, i in points)
            + leader + label(player, label_x, at, ' dominant-baseline="central"') + "</g>")

    summary, table = describe(runs, chosen, dates)
    return Chart(document("history", width, height, id_prefix, title, summary, "".join(parts)), summary, table)


def describe(runs: Sequence[Run], chosen: Sequence[str], dates: Sequence[str]) -> tuple[str, Table]:
    """The one-sentence summary and the data table (a row per run, a column per player)."""
    latest = {i.player: i for i in runs[-1].rows}
    top = max(chosen, key=lambda p: latest[p].rating)
    when = f"on {dates[0]}" if len(runs) == 1 else f"from {dates[0]} to {dates[-1]}"
    summary = (f"Ratings of {len(chosen)} players over {len(runs)} run{'s' if len(runs) != 1 else ''} {when}; "
               f"{top} rates highest in the latest run ({latest[top].rating:.0f}).")

    def cell(run: Run, player: str) -> str:
        found = [i for i in run.rows if i.player == player]
        return found[0].describe() if found else "—"

    return summary, Table(("Run (UTC)", *chosen), tuple((date, *(cell(run, p) for p in chosen))
                                                       for date, run in zip(dates, runs)))
