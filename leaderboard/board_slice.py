"""Which of a board's verdicts count: those on one turn or on every turn, and each verdict as a
battle or each pair's majority as one.

Why the majority: several people often vote on the same pair (a crowd; a panel of experts), and
published human win rates take each pair's majority, so that a pair weighs one battle however
many voted on it; counted vote by vote, a pair many people voted on weighs more than the rest.
The majority is a panel's (`leaderboard.panel.majority`): the verdict more than half of the
pair's verdicts name, else a tie (two voters who disagree make a tie; A, A, TIE gives A; A, B,
TIE a tie). A pair is two submissions: the question and both sides' model and scenario, in
either order. Its majority comes where its first verdict came (online Elo replays verdicts in
order), oriented as that verdict was.

The turn is kept with each submission (`leaderboard.turns`), so the store reads one turn's
verdicts itself; the majority is taken here, over the verdicts read.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from .panel import majority
from .players import SideRow
from .types import Winner


@dataclass(frozen=True)
class BoardSlice:
    """The verdicts a board counts: on `turn` only (None: every turn), and per pair their
    majority (`majority`) rather than each one."""

    turn: int | None = None
    majority: bool = False

    @property
    def whole(self) -> bool:
        """Every verdict, each counted: the boards kept current one verdict at a time."""
        return self.turn is None and not self.majority

    def rows(self, rows: Iterable[SideRow]) -> list[SideRow]:
        """The rows the board counts, of the rows on its turn."""
        return majority_rows(rows) if self.majority else list(rows)


WHOLE = BoardSlice()


def majority_rows(rows: Iterable[SideRow]) -> list[SideRow]:
    """One row per pair of submissions, its verdict the majority of the pair's rows (module docstring)."""
    first: dict[tuple[str, frozenset[tuple[str, str]]], SideRow] = {}
    verdicts: dict[tuple[str, frozenset[tuple[str, str]]], list[Winner]] = {}
    for row in rows:
        a, b = (row.a_model, row.a_scenario), (row.b_model, row.b_scenario)
        pair = (row.question_id, frozenset((a, b)))
        kept = first.setdefault(pair, row)
        same_side = (kept.a_model, kept.a_scenario) == a
        verdicts.setdefault(pair, []).append(row.winner if same_side else row.winner.flipped())
    return [replace(row, winner=majority(verdicts[pair])) for pair, row in first.items()]
