"""A board as the page shows it: typed rows grouped by component, each with its rank range,
interval, win rate, record, the player's mean output length and its gaming flags
(`leaderboard.flags`: a mark in the row, the evidence listed under the table); and each row's
online Elo with the rank it gives, for the folded detail under the table.

Why a view of its own: the page shows less than the API where a number would mislead. A group
whose verdicts do not bound its ratings (`bounded` false, see `leaderboard.bounds`) has ratings
set by the fit's prior, which order the players and say nothing about distances, so its rows
show no rating and no interval, only the ranks its wins allow. The online Elo replays the
verdicts in the order they arrived, so the same verdicts in another order give other numbers and
the last ones weigh most: it can rank the fitted leader last. A ranking table that carried it as
a column would contradict itself without a word, so it is no column of the headline table; the
detail shows it beside both ranks and counts the players it places otherwise.
"""
from __future__ import annotations

import dataclasses
import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from leaderboard.flags import Flag
from leaderboard.types import Rating

FEW_MATCHES = 10  # a player with fewer judgements than this is marked: its interval is wide for a reason


@dataclass(frozen=True)
class RowView:
    """One player's row; None where the page shows an em dash."""

    rank: int
    rank_low: int | None
    rank_high: int | None
    player: str
    rating: float | None
    ci_low: float | None
    ci_high: float | None
    bounded: bool
    elo: float | None
    wins: int
    losses: int
    ties: int
    matches: int
    win_rate: float | None  # `leaderboard.standings.Record.win_rate`, as the API and the export have it
    mean_chars: float | None
    flags: tuple[Flag, ...] = ()
    elo_rank: int | None = None  # its rank by online Elo within its group (set by `board_view`)

    @property
    def kinds(self) -> str:
        """The flags' kinds in words, e.g. "constant output, addresses judge"."""
        return ", ".join(f.kind.value.replace("_", " ") for f in self.flags)

    @property
    def few(self) -> bool:
        return self.matches < FEW_MATCHES

    @property
    def rank_range(self) -> str:
        """"2–4" when the interval allows several places; "" when one."""
        if self.rank_low is None or self.rank_high is None or self.rank_low == self.rank_high:
            return ""
        return f"{self.rank_low}–{self.rank_high}"


@dataclass(frozen=True)
class GroupView:
    """One connected component of the comparison graph: ranked on its own."""

    number: int
    rows: tuple[RowView, ...]
    bounded: bool

    @property
    def by_elo(self) -> tuple[RowView, ...]:
        """Its rows in the order of their online Elo, highest first."""
        return tuple(sorted(self.rows, key=lambda r: (r.elo_rank or len(self.rows) + 1, r.rank)))


@dataclass(frozen=True)
class BoardView:
    """The groups of one board, the largest first, and the shared axis of its interval bars."""

    groups: tuple[GroupView, ...]
    axis_low: float
    axis_high: float

    @property
    def players(self) -> int:
        return sum(len(g.rows) for g in self.groups)

    @property
    def flagged(self) -> list[RowView]:
        """The rows with gaming flags, in the board's order."""
        return [r for g in self.groups for r in g.rows if r.flags]

    @property
    def elo_disagrees(self) -> int:
        """How many players the online Elo ranks otherwise than the rating does."""
        return sum(r.elo_rank != r.rank for g in self.groups for r in g.rows)


def _finite(value: object) -> float | None:
    if value is None:
        return None
    number = float(value)  # type: ignore[arg-type]
    return number if math.isfinite(number) else None


def row_view(row: Rating, position: int, mean_chars: float | None, flags: Sequence[Flag] = ()) -> RowView:
    """One Rating as shown: no rating or interval in an unbounded group."""
    bounded = row.bounded
    return RowView(
        rank=position if row.rank is None else row.rank,
        rank_low=row.rank_low,
        rank_high=row.rank_high,
        player=row.player,
        rating=_finite(row.rating) if bounded else None,
        ci_low=_finite(row.ci_low) if bounded else None,
        ci_high=_finite(row.ci_high) if bounded else None,
        bounded=bounded,
        elo=_finite(row.elo),
        wins=int(row.wins), losses=int(row.losses), ties=int(row.ties), matches=int(row.matches),
        win_rate=_finite(row.win_rate),
        mean_chars=mean_chars,
        flags=tuple(flags),
    )


def _with_elo_ranks(rows: Sequence[RowView]) -> tuple[RowView, ...]:
    """The rows, each with its rank by online Elo among them (1 = highest; equal Elo, equal rank)."""
    known = sorted(r.elo for r in rows if r.elo is not None)  # ranks by bisection: a 400-player board stays cheap
    return tuple(dataclasses.replace(r, elo_rank=None if r.elo is None else 1 + len(known) - bisect_right(known, r.elo))
                 for r in rows)


def board_view(rows: Sequence[Rating], lengths: dict[str, float],
               flags: Mapping[str, Sequence[Flag]] | None = None) -> BoardView:
    """The board's rows by component (in the board's order, which puts the largest first) and
    an axis spanning every interval, padded, so that all bars share it; `flags`: each flagged
    player's gaming flags."""
    groups: dict[int, list[RowView]] = {}
    for position, row in enumerate(rows, start=1):
        groups.setdefault(row.component, []).append(
            row_view(row, position, lengths.get(row.player), (flags or {}).get(row.player, ())))
    views = tuple(GroupView(number, _with_elo_ranks(members), all(r.bounded for r in members))
                  for number, members in groups.items())
    ends = [v for g in views for r in g.rows for v in (r.ci_low, r.ci_high, r.rating) if v is not None]
    low, high = (min(ends), max(ends)) if ends else (900.0, 1100.0)
    pad = max((high - low) * 0.05, 10.0)
    return BoardView(views, low - pad, high + pad)
