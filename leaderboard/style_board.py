"""A style-controlled board: the plain board's players, rated with the style effect removed.

`GET /api/leaderboard?control=style` serves it. The plain board fixes who plays, the components
of the comparison graph and which of them the verdicts bound (`leaderboard.bounds`); each
component is then fitted on its own with style covariates (`leaderboard.style`), so it has its
own coefficients, as it has its own ratings. Rows keep the plain rating beside the controlled
one, so a reader sees what style was worth to each player.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from .players import StyledRow, player_of
from .ranks import rank_intervals
from .style import Coefficient, Style, covariates, style_control, style_of
from .types import PLACEHOLDER_OUTPUT, Battle, Level, Rating, Winner


@dataclass(frozen=True)
class ComponentCoefficient:
    """One covariate's effect in one component, in Elo points per standard deviation."""

    component: int
    coefficient: Coefficient


@dataclass(frozen=True)
class StyledBoard:
    """Rows as on the plain board, rating and interval style-controlled (adding
    `plain_rating`, `plain_ci_low`, `plain_ci_high`), best first within each component; and
    each component's coefficients."""

    rows: list[Rating]
    coefficients: list[ComponentCoefficient]


def styled_board(rows: Sequence[StyledRow], level: Level, plain: Sequence[Rating]) -> StyledBoard:
    """The style-controlled version of `plain` (the board of the same rows at `level`).

    Raises `leaderboard.style.StyleUnavailable` when a side has no output (an imported battle).
    """
    component = {r.player: r.component for r in plain}
    bounded = {r.component: r.bounded for r in plain}
    styles: dict[str, Style | None] = {}

    def style(text: str) -> Style | None:
        if text not in styles:
            styles[text] = None if text == PLACEHOLDER_OUTPUT else style_of(text)
        return styles[text]

    pieces: dict[int, tuple[list[Battle], list[Style | None], list[Style | None]]] = {}
    for styled in rows:
        side = styled.row
        a, b = player_of(side.a_model, side.a_scenario, level), player_of(side.b_model, side.b_scenario, level)
        if a == b:
            continue
        battles, a_styles, b_styles = pieces.setdefault(component[a], ([], [], []))
        battles.append(Battle(a=a, b=b, winner=Winner(side.winner), question_id=side.question_id))
        a_styles.append(style(styled.a_output))
        b_styles.append(style(styled.b_output))
    fitted: dict[str, tuple[float, float, float]] = {}
    coefficients: list[ComponentCoefficient] = []
    for piece in sorted(pieces):
        battles, a_styles, b_styles = pieces[piece]
        board = style_control(battles, covariates(a_styles, b_styles))
        nan = float("nan")
        for r in board.ratings:
            fitted[r.player] = (r.rating, r.low, r.high) if bounded[piece] else (r.rating, nan, nan)
        coefficients += [ComponentCoefficient(piece, c) for c in board.coefficients]
    return StyledBoard(refitted_rows(plain, fitted), coefficients)


def refitted_rows(plain: Sequence[Rating], fitted: dict[str, tuple[float, float, float]]) -> list[Rating]:
    """The plain rows with refitted (rating, low, high) (style-controlled, or Davidson's), the
    plain ones kept as `plain_*`, re-ranked within each bounded component (an
    unbounded one keeps the ranks its clean wins give)."""
    by_piece: dict[int, list[Rating]] = {}
    for r in plain:
        rating, low, high = fitted[r.player]
        by_piece.setdefault(r.component, []).append(
            dataclasses.replace(r, rating=rating, ci_low=low, ci_high=high,
                                plain_rating=r.rating, plain_ci_low=r.ci_low, plain_ci_high=r.ci_high))
    out: list[Rating] = []
    for piece in sorted(by_piece):
        members = by_piece[piece]
        if all(r.bounded for r in members):
            ranks = rank_intervals({r.player: (r.ci_low, r.ci_high) for r in members})
            members.sort(key=lambda r: (-round(r.rating, 9), r.player))
            members = [dataclasses.replace(r, rank=position, rank_low=ranks[r.player][0], rank_high=ranks[r.player][1])
                       for position, r in enumerate(members, start=1)]
        out += members
    return out
