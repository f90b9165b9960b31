"""The board's pictures, drawn by `service.web.charts` from what the board page already holds: the
ratings with intervals, a bar per table row on the board's shared axis, the head-to-head
heatmaps whose cells link to the judgements behind them, and a recurring tournament's history.

Each picture is a `Figure`: a caption, the chart, and (through the `figure` macro of
`templates/macros.html`) its data as a table in a <details> beside it, the text alternative.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from leaderboard.battles import PairCounts
from leaderboard.standings import standings
from leaderboard.types import Level, Rating
from service.store import Store, TournamentName
from service.web.charts import (
    Chart,
    HeadToHead,
    Measure,
    draw_heatmap,
    draw_history,
    draw_interval_bar,
    draw_intervals,
    fit_axis,
    read_intervals,
    read_runs,
)
from service.web.pages.board_view import FEW_MATCHES

HEATMAP_PLAYERS = 30  # more cells than this are unreadable on a page: the best 30, and a note


@dataclass(frozen=True)
class Figure:
    """A chart with its caption; `note` says what was left out, if anything."""

    caption: str
    chart: Chart
    note: str = ""


@dataclass(frozen=True)
class BoardFigures:
    """Everything the board page draws: bars by player, and the figures below the table."""

    bars: dict[str, str]
    figures: tuple[Figure, ...]


def draw_board(rows: Sequence[Rating], counts: PairCounts | None,
               href: Callable[[str, str], str | None]) -> BoardFigures:
    """The bars of every row on one axis, the interval plot, and both heatmaps in the board's
    order (the first `HEATMAP_PLAYERS` players), their cells linked by `href(row, column)`.

    A group whose verdicts do not bound its ratings has no bars and is not plotted: its
    ratings are the fit's prior, and a dot would claim a distance nobody measured. The plot holds
    the first (largest) group only, since ratings compare only within a group."""
    bounded = [r for r in rows if r.bounded]
    intervals = read_intervals(bounded)
    figures: list[Figure] = []
    bars: dict[str, str] = {}
    if intervals:
        axis = fit_axis(intervals)
        bars = {item.player: draw_interval_bar(item, low=axis.low, high=axis.high, id_prefix=f"bar{n}").svg
                for n, item in enumerate(intervals)}
        first = min(r.component for r in bounded)
        plotted = read_intervals([r for r in bounded if r.component == first])
        several = len({r.component for r in rows}) > 1
        figures.append(Figure("Ratings with 95% intervals",
                              draw_intervals(plotted, id_prefix="plot", few_matches=FEW_MATCHES),
                              f"group {first} only: ratings compare within a group" if several else ""))
    if counts is not None and rows:
        shown = [r.player for r in rows][:HEATMAP_PLAYERS]
        matrix = HeadToHead.from_standings(standings(counts), order=shown)
        note = (f"the best {HEATMAP_PLAYERS} of {len(rows)} players; all of them: /api/leaderboard/matrix"
                if len(rows) > HEATMAP_PLAYERS else "")
        figures += [
            Figure("Win rate of the row player against the column player (ties count half)",
                   draw_heatmap(matrix, Measure.WIN_RATE, id_prefix="winrate", href=href), note),
            Figure("Judgements between each two players",
                   draw_heatmap(matrix, Measure.BATTLES, id_prefix="battles", href=href), note),
        ]
    return BoardFigures(bars, tuple(f for f in figures if f.chart))


def history_figure(store: Store, tournament: TournamentName, level: Level = Level.MODEL) -> Figure | None:
    """A recurring tournament's ratings run by run, or None before its first snapshot."""
    runs = read_runs(store.snapshots(tournament.id, level.value))
    title = f"History of {tournament.name} (#{tournament.id})"
    chart = draw_history(runs, id_prefix="history", title=title)
    if not chart:
        return None
    return Figure(f"{title}: rating by run ({len(runs)} runs)", chart)


def latest_history(store: Store, tournaments: Iterable[TournamentName], level: Level = Level.MODEL,
                   ) -> Figure | None:
    """The history of the first scheduled tournament among `tournaments` that has one."""
    for tournament in tournaments:
        if tournament.schedule:
            figure = history_figure(store, tournament, level)
            if figure is not None:
                return figure
    return None
