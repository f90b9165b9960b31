"""What every chart returns, and the SVG plumbing they share: the accessible <svg> wrapper,
escaping, coordinates, and label widths worked out without a font at hand.

A chart is drawn on the server as inline SVG (no script, no inline style: the page's
Content-Security-Policy forbids both), so text widths are estimated from the characters; the
estimates err wide, which costs a few pixels of margin and never clips a label.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass

from service.web.charts.colour import INK

LABEL_CHARS = 24  # longer player names are cut to this, with an ellipsis (the full one in a <title>)
FONT_SIZE = 11
TICK_FONT = 10  # axis tick labels and cell numbers
GAP = 6  # between a label and what it labels, and around the edges
GRID = "#e5e5e5"  # grid lines, behind the data
END = ' text-anchor="end" dominant-baseline="central"'  # a label ending at its point, centred on it
_NARROW = frozenset("fijlrtI.,:;'|!()[] ")
_WIDE = frozenset("mwMW@%…")
_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")


@dataclass(frozen=True)
class Table:
    """A chart's data as plain text (not escaped), for a <details> table beside it."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Chart:
    """`svg`: the markup, escaped and ready to insert ("" when there was nothing to draw);
    `summary`: one plain-text sentence (also the SVG's <desc>); `table`: the same data as text.
    `summary` and `table` are not escaped: the page escapes them as it does any text."""

    svg: str
    summary: str
    table: Table

    def __bool__(self) -> bool:
        return bool(self.svg)


EMPTY = Chart("", "", Table((), ()))


def esc(value: object) -> str:
    """Text or an attribute value as XML: a player named `<script>` stays text."""
    return html.escape(str(value), quote=True)


def num(value: float) -> str:
    """A coordinate, short: one decimal at most, no trailing zeros (the markup repeats per row)."""
    text = f"{value:.1f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def estimate_width(text: str, size: float = FONT_SIZE) -> float:
    """The drawn width of `text` in a sans-serif at `size`, erring wide."""
    def em(char: str) -> float:
        if char in _NARROW:
            return 0.36
        if char in _WIDE or ord(char) > 0x2E7F:  # wide Latin, and CJK and the like
            return 1.0
        return 0.8 if char.isupper() else 0.6

    return size * sum(map(em, text))


def truncate(name: str, limit: int = LABEL_CHARS) -> str:
    """`name` cut to `limit` characters, the last an ellipsis, when it is longer."""
    return name if len(name) <= limit else name[: limit - 1] + "…"


def label(name: str, x: float, y: float, attributes: str = "") -> str:
    """A player's name as <text>, truncated, with the full name as its <title> when cut."""
    shown = truncate(name)
    title = f"<title>{esc(name)}</title>" if shown != name else ""
    return f'<text x="{num(x)}" y="{num(y)}"{attributes}>{title}{esc(shown)}</text>'


def check_prefix(id_prefix: str) -> str:
    """`id_prefix` if it makes valid, CSS-friendly ids; every id in a chart starts with it, so
    two charts on one page given different prefixes never share an id."""
    if not _PREFIX.match(id_prefix):
        raise ValueError(f"id_prefix must be a letter then letters, digits, '-' or '_': {id_prefix!r}")
    return id_prefix


def document(kind: str, width: float, height: float, id_prefix: str, title: str, summary: str,
             body: str, *, role: str = "img") -> str:
    """The <svg> around `body`: a role, a title and a description assistive technology reads,
    a viewBox so that it scales, and classes (`chart`, `chart-<kind>`) for the page's stylesheet.

    Its width and height are its natural size: the stylesheet's `max-width: 100%; height: auto`
    shrinks it to a phone's width, and a small chart is never blown up to a wide one's size.
    `role` "group" for a chart holding links: an "img" hides its children from assistive
    technology, and links inside it could not be reached."""
    p = check_prefix(id_prefix)
    w, h = num(width), num(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{kind}" viewBox="0 0 {w} {h}" '
        f'width="{w}" height="{h}" role="{role}" aria-labelledby="{p}-title" aria-describedby="{p}-desc" '
        f'fill="{INK}" font-size="{FONT_SIZE}"><title id="{p}-title">{esc(title)}</title>'
        f'<desc id="{p}-desc">{esc(summary)}</desc>{body}</svg>'
    )
