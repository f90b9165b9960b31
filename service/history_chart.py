"""An inline SVG line chart of a tournament's board history (one line per player)."""
from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT, PAD, LABEL = 640, 240, 28, 120
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


def history_svg(title: str, snapshots: Sequence[dict], *, players: int = 10) -> str:
    """`snapshots` as `Store.snapshots` returns them (oldest first); "" when there are none.
    The `players` best of the latest snapshot are drawn, each rating at each run."""
    if not snapshots:
        return ""
    latest = [r["player"] for r in snapshots[-1]["rows"] if r.get("rating") is not None][:players]
    series = {p: [(x, r["rating"]) for x, snap in enumerate(snapshots) for r in snap["rows"]
                  if r["player"] == p and r.get("rating") is not None] for p in latest}
    values = [v for points in series.values() for _, v in points] or [1000.0]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    steps = max(len(snapshots) - 1, 1)

    def xy(x: int, v: float) -> str:
        return f"{PAD + x * (WIDTH - LABEL - 2 * PAD) / steps:.1f},{HEIGHT - PAD - (v - low) * (HEIGHT - 2 * PAD) / span:.1f}"

    lines = []
    for n, (player, points) in enumerate(series.items()):
        colour = COLOURS[n % len(COLOURS)]
        if points:
            path = " ".join(xy(x, v) for x, v in points)
            end_x, end_y = xy(*points[-1]).split(",")
            lines.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>'
                         f'<text x="{float(end_x) + 6:.1f}" y="{end_y}" fill="{colour}" font-size="11">'
                         f"{escape(player)}</text>")
    axis = (f'<text x="2" y="{PAD - 8}" font-size="10">{high:.0f}</text>'
            f'<text x="2" y="{HEIGHT - 4}" font-size="10">{low:.0f}</text>')
    return (f'<figure><figcaption>{escape(title)}: rating by run ({len(snapshots)} runs)</figcaption>'
            f'<svg role="img" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'xmlns="http://www.w3.org/2000/svg">{axis}{"".join(lines)}</svg></figure>')
