"""The leaderboard over the API: boards served by the app's `BoardCache`, current on every request.

Ratings are a view, never stored: the store yields one row per judgement and pair of submissions
(so a judgement shared by several tournaments counts once), a level keeps the rows whose two
sides are different players there, and the board fits them. The cache (service.boards) follows
new judgements incrementally, so a request costs one revision read when nothing changed and the
new rows only when something did. `compute_board` is the from-scratch path, kept for exports and
as the benchmark's baseline.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel

from leaderboard.board import build_board
from leaderboard.dimensions import DIMENSIONS
from leaderboard.players import SideRow, battles_at_level
from leaderboard.types import Level, Rating
from service.api_models import By, Dimension, LeaderboardOut, LeaderboardRow
from service.boards import Board, BoardCache
from service.rounds import anchored_board
from service.store import Store

from .common import ID_MAX, FilterText, TournamentFilter, error_responses

router = APIRouter(prefix="/api/leaderboard", tags=["leaderboard"], responses=error_responses(404, 422))


def board_at(rows: Sequence[SideRow], level: Level, *, k: float, revision: int = 0) -> Board:
    """The board at one level over the store's side rows, from scratch."""
    battles = battles_at_level(rows, level)
    return Board(level=level, rows=build_board(battles, k=k), judgements=len(battles), revision=revision)


def compute_board(
    store: Store, level: Level, *, k: float, tournament_id: int | None = None, judge: str | None = None
) -> Board:
    """The board at one level from every stored row; raises NotFound for an unknown tournament."""
    if tournament_id is not None:
        store.get_tournament(tournament_id)
    revision = store.revision()
    return board_at(store.side_rows(tournament_id=tournament_id, judge=judge), level, k=k, revision=revision)


def get_boards(request: Request) -> BoardCache:
    """The board cache opened by the lifespan."""
    return request.app.state.boards


def finite(value: Any) -> float | None:
    """A JSON-safe number: NaN and infinities (nothing to estimate) become null."""
    number = float(value)
    return number if math.isfinite(number) else None


class RankedRow(LeaderboardRow):
    """A board row with its rank and the range of ranks its 95% interval allows."""

    rank: int
    rank_low: int | None
    rank_high: int | None


class RankedBoardOut(LeaderboardOut):
    """Rows best first; `revision` counts the resolved matches the board includes (it only grows).
    `dimension`: the dimension ranked by (only `dimensions` judgements count), or null."""

    rows: list[RankedRow]  # type: ignore[assignment]
    revision: int
    dimension: str | None = None


class EffectRow(BaseModel):
    """An effect in Elo points with its 95% interval; None when it could not be estimated."""

    effect: float | None
    ci_low: float | None
    ci_high: float | None


class ModelEffect(EffectRow):
    model: str


class ScenarioEffect(EffectRow):
    scenario: str


class EffectsOut(BaseModel):
    """How much each model and each scenario adds to a system's strength, largest first."""

    tournament: int | None
    judge: str | None
    models: list[ModelEffect]
    scenarios: list[ScenarioEffect]
    battles: int
    revision: int


def optional_int(value: Any) -> int | None:
    """An int, or None for a missing value."""
    return None if value is None else int(value)


def row_out(row: Rating, position: int) -> RankedRow:
    """One Rating as the API shows it; `position` (1 for the first row) stands in for a missing rank."""
    return RankedRow(
        player=row.player,
        rating=finite(row.rating),
        ci_low=finite(row.ci_low),
        ci_high=finite(row.ci_high),
        elo=finite(row.elo),
        wins=int(row.wins),
        losses=int(row.losses),
        ties=int(row.ties),
        matches=int(row.matches),
        rank=int(row.extra.get("rank", position)),
        rank_low=optional_int(row.extra.get("rank_low")),
        rank_high=optional_int(row.extra.get("rank_high")),
    )


EffectLine = tuple[str, float | None, float | None, float | None]


def effect_rows(effects: dict[str, tuple[float, float, float]]) -> list[EffectLine]:
    """(name, effect, low, high), largest effect first, JSON-safe."""
    ordered = sorted(effects.items(), key=lambda item: (-_sortable(item[1][0]), item[0]))
    return [(name, finite(e), finite(low), finite(high)) for name, (e, low, high) in ordered]


def _sortable(value: float) -> float:
    number = finite(value)
    return -math.inf if number is None else number


JudgeFilter = Annotated[FilterText | None, Query(description='only this judge, "provider/model"')]
ByLevel = Annotated[By, Query(description="who plays: model, scenario or model+scenario (alias: system; any case)")]
DimensionFilter = Annotated[
    Dimension | None,  # type: ignore[valid-type]
    Query(description="rank by one dimension of the `dimensions` criteria set (any case): " + ", ".join(DIMENSIONS)),
]


@router.get("", response_model=RankedBoardOut)
def get_leaderboard(
    boards: Annotated[BoardCache, Depends(get_boards)],
    by: ByLevel = By.MODEL,
    tournament: TournamentFilter = None,
    judge: JudgeFilter = None,
    dimension: DimensionFilter = None,
) -> RankedBoardOut:
    """Players best first by Bradley-Terry rating (Elo scale, 1000 = the mean player), with 95%
    intervals, rank ranges, online Elo and win/loss/tie counts. Current on every request: it
    includes every judgement resolved before the request arrived. With `dimension`, ranked by
    that dimension of the judgements made with criteria `dimensions` (each dimension's orders
    combined by the consistency rule on their own)."""
    level, name = by.level, (dimension.value if dimension is not None else None)
    board = boards.board(level, tournament_id=tournament, judge=judge, dimension=name)
    spec = boards.store.tournament_spec(tournament) if tournament is not None else None
    if spec is not None and spec.anchored and name is None and level is spec.level:
        # an anchored tournament: its anchors held at the ratings they had when it was created
        rows = anchored_board(boards.store, spec, k=boards.k)
        board = Board(level=level, rows=rows, judgements=board.judgements, revision=board.revision)
    return RankedBoardOut(
        by=board.level.value,
        tournament=tournament,
        judge=judge,
        rows=[row_out(r, i) for i, r in enumerate(board.rows, start=1)],
        judgements=board.judgements,
        revision=board.revision,
        dimension=name,
    )


@router.get("/effects", response_model=EffectsOut)
def get_effects(
    boards: Annotated[BoardCache, Depends(get_boards)],
    tournament: TournamentFilter = None,
    judge: JudgeFilter = None,
) -> EffectsOut:
    """Model and scenario effects fitted together (a system's strength is its model's plus its
    scenario's), in Elo points with 95% intervals: what a scenario is worth across models."""
    fitted = boards.effects(tournament_id=tournament, judge=judge)
    effects = fitted.effects
    return EffectsOut(
        tournament=tournament,
        judge=judge,
        models=[ModelEffect(model=n, effect=e, ci_low=lo, ci_high=hi)
                for n, e, lo, hi in effect_rows(effects.models)],
        scenarios=[ScenarioEffect(scenario=n, effect=e, ci_low=lo, ci_high=hi)
                   for n, e, lo, hi in effect_rows(effects.scenarios)],
        battles=int(effects.battles),
        revision=fitted.revision,
    )


class SnapshotRow(BaseModel):
    """One player of a snapshot; None for a number that could not be estimated."""

    player: str
    rating: float | None
    ci_low: float | None
    ci_high: float | None


class Snapshot(BaseModel):
    """The board when one run of the tournament finished (`time`: when it was taken, Unix s)."""

    run: int
    time: float
    rows: list[SnapshotRow]


class HistoryOut(BaseModel):
    """A scheduled tournament's boards, one per finished run, oldest first."""

    tournament: int
    by: str
    snapshots: list[Snapshot]


@router.get("/history", response_model=HistoryOut)
def get_history(
    boards: Annotated[BoardCache, Depends(get_boards)],
    tournament: Annotated[int, Query(ge=1, le=ID_MAX, description="the scheduled (or adaptive) tournament")],
    by: ByLevel = By.MODEL,
) -> HistoryOut:
    """The board snapshotted when each run of a scheduled tournament (and each adaptive run)
    finished, oldest first: the page's history chart."""
    level = by.level
    boards.store.get_tournament(tournament)  # 404 for an unknown tournament
    return HistoryOut(tournament=tournament, by=level.value,
                      snapshots=[Snapshot(**snap) for snap in boards.store.snapshots(tournament, level.value)])
