"""The head-to-head heatmap: players × players, each cell how the row player fared against the
column player (win rate) or how often they met (judgements).

The numbers are the ones `GET /api/leaderboard/matrix` serves; a chart makes a lopsided pairing
or a pair that never met visible at a glance, and each cell can link to the judgements behind it.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from service.web.charts.chart import EMPTY, END, GAP, TICK_FONT, Chart, Table, document, esc, estimate_width, label, num, truncate
from service.web.charts.colour import DIVERGING, SEQUENTIAL, pick_text_colour

if TYPE_CHECKING:
    from leaderboard.standings import Standings

CELL = 32
SLANT = math.sqrt(0.5)  # column labels are turned 45°: cos = sin
EMPTY_FILL, EMPTY_STROKE = "#ffffff", "#b0b0b0"


class Measure(str, Enum):
    """What a cell shows: the row player's win rate (diverging colours, 50% neutral) or the
    number of judgements between the two (sequential colours)."""

    WIN_RATE = "win_rate"
    BATTLES = "battles"


@dataclass(frozen=True)
class HeadToHead:
    """`players` index both matrices. `win_rate[i][j]`: (wins + ½ ties) of i against j over
    their judgements, None where they never met; `battles[i][j]`: how many judgements they share."""

    players: tuple[str, ...]
    win_rate: tuple[tuple[float | None, ...], ...]
    battles: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        n = len(self.players)
        if len(self.win_rate) != n or len(self.battles) != n or any(
                len(row) != n for row in (*self.win_rate, *self.battles)):
            raise ValueError(f"both matrices must be {n} × {n}, one row and column per player")

    @classmethod
    def from_standings(cls, table: Standings, order: Sequence[str] | None = None) -> HeadToHead:
        """`leaderboard.standings` matrices, in `order` (say a board's rows, best first) or the
        table's own; NaN (never met) becomes None."""
        index = {p: i for i, p in enumerate(table.players)}
        picked = [index[p] for p in (order if order is not None else table.players)]
        rates, counts = table.win_rate_matrix.tolist(), table.count_matrix.tolist()
        return cls(
            players=tuple(table.players[i] for i in picked),
            win_rate=tuple(tuple(None if math.isnan(rates[i][j]) else rates[i][j] for j in picked) for i in picked),
            battles=tuple(tuple(int(counts[i][j]) for j in picked) for i in picked),
        )

    def met(self, i: int, j: int) -> bool:
        return self.battles[i][j] > 0 and self.win_rate[i][j] is not None

    def overall(self, i: int) -> float | None:
        """Player i's share of points over all its judgements; None when it has none."""
        pairs = [(self.win_rate[i][j], self.battles[i][j]) for j in range(len(self.players)) if self.met(i, j)]
        total = sum(n for _, n in pairs)
        return sum(r * n for r, n in pairs) / total if total else None


def percent(rate: float) -> str:
    return f"{round(rate * 100)}%"


def judgements(n: int) -> str:
    return f"{n} judgement{'' if n == 1 else 's'}"


def compact(n: int) -> str:
    """A count that fits a cell: 950, 1.2k, 34k, 2.5M."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            return f"{n / size:.1f}{suffix}" if n < 10 * size else f"{n // size}{suffix}"
    return str(n)


def draw_heatmap(matrix: HeadToHead, measure: Measure = Measure.WIN_RATE, *, id_prefix: str,
                 title: str | None = None, href: Callable[[str, str], str | None] | None = None) -> Chart:
    """The matrix as coloured cells, row player against column player; EMPTY when no two
    players met. `href(row, column)` may give each met pair's cell a link (None: no link)."""
    players = matrix.players
    n = len(players)
    pairs = [(i, j) for i in range(n) for j in range(n) if matrix.met(i, j)]
    if not pairs:
        return EMPTY
    most = max(matrix.battles[i][j] for i, j in pairs)

    def fill(i: int, j: int) -> str:
        if measure is Measure.WIN_RATE:
            return DIVERGING(matrix.win_rate[i][j])
        return SEQUENTIAL(0.15 + 0.85 * matrix.battles[i][j] / most)  # the fewest still shows blue

    def text(i: int, j: int) -> str:
        return percent(matrix.win_rate[i][j]) if measure is Measure.WIN_RATE else compact(matrix.battles[i][j])

    def tooltip(i: int, j: int) -> str:
        a, b, rate, count = players[i], players[j], matrix.win_rate[i][j], matrix.battles[i][j]
        if measure is Measure.WIN_RATE:
            return f"{a} vs {b}: {percent(rate)} of {judgements(count)}"
        return f"{a} vs {b}: {judgements(count)}, {percent(rate)} to {a}"

    widths = [estimate_width(truncate(p)) for p in players]
    left = max(widths) + 2 * GAP
    top = (max(widths) + TICK_FONT) * SLANT + 2 * GAP
    x = [left + j * CELL + CELL / 2 for j in range(n)]
    width = max(left + n * CELL, *(xj + w * SLANT for xj, w in zip(x, widths))) + GAP
    height = top + n * CELL + GAP

    parts = []
    for i, player in enumerate(players):
        y = top + i * CELL
        parts.append(label(player, left - GAP, y + CELL / 2, END))
        parts.append(label(player, x[i], top - GAP, f' transform="rotate(-45 {num(x[i])} {num(top - GAP)})"'))
        for j in range(n):
            box = f'x="{num(left + j * CELL)}" y="{num(y)}" width="{CELL}" height="{CELL}"'
            if not matrix.met(i, j):
                tip = "" if i == j else f"<title>{esc(f'{player} vs {players[j]}: never judged')}</title>"
                parts.append(f'<rect class="cell empty" {box} fill="{EMPTY_FILL}" stroke="{EMPTY_STROKE}" '
                             f'stroke-dasharray="2 2"' + (f">{tip}</rect>" if tip else "/>"))
                continue
            colour = fill(i, j)
            cell = (f"<title>{esc(tooltip(i, j))}</title><rect class=\"cell\" {box} fill=\"{colour}\"/>"
                    f'<text x="{num(x[j])}" y="{num(y + CELL / 2)}" text-anchor="middle" '
                    f'dominant-baseline="central" font-size="{TICK_FONT}" fill="{pick_text_colour(colour)}">'
                    f"{esc(text(i, j))}</text>")
            link = href(player, players[j]) if href else None
            parts.append(f'<a href="{esc(link)}">{cell}</a>' if link else f"<g>{cell}</g>")

    summary, table = describe(matrix, measure)
    title = title or ("Win rates, row player against column player" if measure is Measure.WIN_RATE
                      else "Judgements between each pair of players")
    return Chart(document(f"heatmap-{measure.value}".replace("_", "-"), width, height, id_prefix, title,
                          summary, "".join(parts), role="img" if href is None else "group"), summary, table)


def describe(matrix: HeadToHead, measure: Measure) -> tuple[str, Table]:
    """The one-sentence summary and the data table of a heatmap."""
    players, n = matrix.players, len(matrix.players)
    if measure is Measure.WIN_RATE:
        shares = {i: s for i in range(n) if (s := matrix.overall(i)) is not None}
        best = max(shares, key=lambda i: shares[i])
        summary = (f"Win rates between {n} players; {players[best]} wins most often "
                   f"({percent(shares[best])} overall).")

        def cell(i: int, j: int) -> str:
            return f"{percent(matrix.win_rate[i][j])} of {matrix.battles[i][j]}"
    else:
        pairs = [(matrix.battles[i][j], i, j) for i in range(n) for j in range(i + 1, n) if matrix.met(i, j)]
        most, a, b = max(pairs, key=lambda p: p[0])
        summary = (f"Judgements between {n} players: {sum(p[0] for p in pairs)} in all, "
                   f"the most between {players[a]} and {players[b]} ({most}).")

        def cell(i: int, j: int) -> str:
            return str(matrix.battles[i][j])
    rows = tuple((p, *(cell(i, j) if matrix.met(i, j) else "—" for j in range(n))) for i, p in enumerate(players))
    return summary, Table(("Player", *players), rows)
