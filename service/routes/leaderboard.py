"""The leaderboard over the API: ratings computed on request from the stored judgements.

Ratings are a view, never stored: the store yields one row per judgement and pair of submissions
(so a judgement shared by several tournaments counts once), `battles_at_level` keeps the rows
whose two sides are different players at the chosen level, and `build_board` fits them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from leaderboard.board import build_board
from leaderboard.players import SideRow, battles_at_level
from leaderboard.types import Level, Rating
from service.api_models import ErrorOut, LeaderboardOut, LeaderboardRow
from service.config import Settings
from service.store import Store

from .common import ApiError, get_settings, get_store

router = APIRouter(prefix="/api/leaderboard", tags=["leaderboard"])

# "+" in a query string decodes to a space, so "by=model+scenario" arrives as "model scenario".
LEVELS: dict[str, Level] = {
    "model": Level.MODEL,
    "scenario": Level.SCENARIO,
    "model+scenario": Level.SYSTEM,
    "model scenario": Level.SYSTEM,
    "model + scenario": Level.SYSTEM,
    "system": Level.SYSTEM,
}


def parse_level(by: str) -> Level:
    """`model`, `scenario`, or `model+scenario` (also spelled `system`); 422 otherwise."""
    level = LEVELS.get(" ".join(by.split()).lower())
    if level is None:
        raise ApiError(422, f"by: {by!r} is not a level; use model, scenario or model+scenario (alias system)")
    return level


@dataclass(frozen=True)
class Board:
    """A computed leaderboard and how many judgements it rests on."""

    level: Level
    rows: list[Rating]
    judgements: int


def board_at(rows: Sequence[SideRow], level: Level, *, k: float) -> Board:
    """The board at one level over the store's side rows."""
    battles = battles_at_level(rows, level)
    return Board(level=level, rows=build_board(battles, k=k), judgements=len(battles))


def compute_board(
    store: Store, level: Level, *, k: float, tournament_id: int | None = None, judge: str | None = None
) -> Board:
    """The board at one level; raises NotFound for an unknown tournament."""
    if tournament_id is not None:
        store.get_tournament(tournament_id)
    return board_at(store.side_rows(tournament_id=tournament_id, judge=judge), level, k=k)


def finite(value: Any) -> float | None:
    """A JSON-safe number: NaN and infinities (nothing to estimate) become null."""
    number = float(value)
    return number if math.isfinite(number) else None


def row_out(row: Rating) -> LeaderboardRow:
    """One Rating as the API shows it."""
    return LeaderboardRow(
        player=row.player,
        rating=finite(row.rating),
        ci_low=finite(row.ci_low),
        ci_high=finite(row.ci_high),
        elo=finite(row.elo),
        wins=int(row.wins),
        losses=int(row.losses),
        ties=int(row.ties),
        matches=int(row.matches),
    )


@router.get("", response_model=LeaderboardOut, responses={404: {"model": ErrorOut}, 422: {"model": ErrorOut}})
def get_leaderboard(
    store: Annotated[Store, Depends(get_store)],
    settings: Annotated[Settings, Depends(get_settings)],
    by: Annotated[str, Query(description="model, scenario or model+scenario (alias: system)")] = "model",
    tournament: Annotated[int | None, Query(description="only this tournament and its scheduled runs")] = None,
    judge: Annotated[str | None, Query(description='only this judge, "provider/model"')] = None,
) -> LeaderboardOut:
    """Players best first by Bradley-Terry rating (Elo scale, 1000 = the mean player), with 95%
    intervals, online Elo and win/loss/tie counts."""
    board = compute_board(store, parse_level(by), k=settings.elo_k, tournament_id=tournament, judge=judge)
    return LeaderboardOut(
        by=board.level.value,
        tournament=tournament,
        judge=judge,
        rows=[row_out(r) for r in board.rows],
        judgements=board.judgements,
    )
