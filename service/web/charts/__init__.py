"""The page's charts, drawn on the server as inline SVG: pure functions of typed data, no I/O.

Each `draw_*` returns a `Chart`: `svg` (markup, every name escaped; "" when there is nothing to
draw, and the Chart is then falsy), `summary` (one plain-text sentence, also the SVG's <desc>)
and `table` (the same data as plain text, for a <details> table beside the chart). `summary` and
`table` are not escaped: the page escapes them like any text (Jinja2's autoescape does; insert
`svg` with `|safe`).

Every SVG has `role="img"`, `aria-labelledby` its <title> and `aria-describedby` its <desc>,
ids that all start with the caller's `id_prefix` (one per chart on a page), a viewBox, its
natural width and height, and the classes `chart chart-<kind>`: the page's stylesheet
(`svg.chart { max-width: 100%; height: auto }`) shrinks it to a phone's width. No inline style:
presentation attributes only (the Content-Security-Policy forbids inline style).

- `draw_heatmap(HeadToHead, Measure)`: the win-rate or judgement-count matrix
  (`HeadToHead.from_standings(standings(board.counts), order)`), cells optionally linked.
- `draw_intervals([Interval])`: ratings and 95% intervals on one axis (`read_intervals(board.rows)`).
- `draw_interval_bar(Interval, low=, high=)`: one table row's tiny bar; `fit_axis` gives the
  shared `low`/`high`.
- `draw_history([Run])`: a recurring tournament's ratings by run (`read_runs(store.snapshots(...))`).
"""
from service.web.charts.axis import Scale, Ticks, choose_ticks, spread_apart
from service.web.charts.chart import EMPTY, Chart, Table, estimate_width, truncate
from service.web.charts.colour import contrast_ratio, pick_text_colour, relative_luminance
from service.web.charts.heatmap import HeadToHead, Measure, draw_heatmap
from service.web.charts.history import Run, draw_history, read_runs
from service.web.charts.interval import Interval, draw_interval_bar, draw_intervals, fit_axis, read_intervals

__all__ = [
    "EMPTY", "Chart", "HeadToHead", "Interval", "Measure", "Run", "Scale", "Table", "Ticks", "choose_ticks",
    "contrast_ratio", "draw_heatmap", "draw_history", "draw_interval_bar", "draw_intervals", "estimate_width",
    "fit_axis", "pick_text_colour", "read_intervals", "read_runs", "relative_luminance", "spread_apart",
    "truncate",
]
