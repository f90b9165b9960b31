"""The leaderboard over the API: boards served by the app's `BoardCache`, current on every request.

Ratings are a view, never stored: the store yields one row per judgement and pair of submissions
(so a judgement shared by several tournaments counts once), a level keeps the rows whose two
sides are different players there, and the board fits them. Every board is one judge's
(`service.web.routes.judge_choice` says which and why) and ranks each connected component of the
comparison graph on its own. The cache (service.usecases.boards) follows new judgements incrementally, so
a request costs one revision read when nothing changed and the new rows only when something did.
Which variant of the board is served (style control, Davidson ties, bootstrap intervals, an
anchored tournament's) is the use case's, `service.usecases.board_variants`; the answer's shape
is `board_out`'s. `compute_board` is the from-scratch path, kept for tests and as the benchmark's baseline.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import numpy as np
from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel

from leaderboard.battles import PairCounts
from leaderboard.board import build_board
from leaderboard.dimensions import DIMENSIONS
from leaderboard.effects import fit_effects
from leaderboard.players import SideRow, battles_at_level
from leaderboard.standings import standings
from leaderboard.types import Level
from service.store import Store
from service.usecases.board_variants import VariantQuery, board_variant
from service.usecases.boards import Board, BoardCache, EffectsAt
from service.usecases.flag_cache import FlagCache
from service.web.api_models import By, Dimension
from service.web.routes.board_effects import EffectsOut, effects_fields
from service.web.routes.board_out import (
    Control,
    ControlParam,
    Intervals,
    IntervalsParam,
    RankedBoardOut,
    coefficient_out,
    finite,
    row_out,
)
from service.web.routes.board_slice import TurnParam, Votes, VotesParam, board_slice
from service.web.routes.board_ties import TieModel, TiesParam, tie_out
from service.web.routes.common import ID_MAX, FilterText, TournamentFilter, error_responses
from service.web.routes.judge_choice import JudgedOut, judge_fields, judge_not_found, with_judge_rule
from service.web.state import state_of

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
    return state_of(request).boards


def get_flags(request: Request) -> FlagCache:
    """The gaming flags' cache opened by the lifespan."""
    return state_of(request).flags


JudgeFilter = Annotated[FilterText | None, Query(
    description='the judge whose board this is: "provider/model", "human/<voter>", or "human" for all human '
                "voters; left out, the judge of the latest tournament (see the response's `judge_chosen_by`)")]
ByLevel = Annotated[By, Query(description="who plays: model, scenario or model+scenario (alias: system; any case)")]
DimensionFilter = Annotated[
    Dimension | None,  # type: ignore[valid-type]
    Query(description="rank by one dimension of the `dimensions` criteria set (any case): " + ", ".join(DIMENSIONS)),
]


@router.get("", response_model=RankedBoardOut)
def get_leaderboard(
    boards: Annotated[BoardCache, Depends(get_boards)],
    flag_cache: Annotated[FlagCache, Depends(get_flags)],
    by: ByLevel = By.MODEL,
    tournament: TournamentFilter = None,
    judge: JudgeFilter = None,
    dimension: DimensionFilter = None,
    intervals: IntervalsParam = Intervals.CLOSED,
    control: ControlParam = Control.NONE,
    ties: TiesParam = TieModel.HALF,
    turn: TurnParam = None,
    votes: VotesParam = Votes.EACH,
) -> RankedBoardOut:
    """One judge's board (named, or chosen as the response's `judge_chosen_by` says, the other
    judges linked): players by component of the comparison graph, best first within one, by
    Bradley-Terry rating (Elo scale, 1000 = the component's mean player), with 95% intervals, rank
    ranges, win/loss/tie counts and win rate, and the online Elo (order-dependent: for comparison). Current on every request: it includes every
    judgement resolved before the request arrived. With `dimension`, ranked by that dimension of
    the judgements made with criteria `dimensions` (each dimension's orders combined by the
    consistency rule on their own). With `ties=davidson`, rated by Davidson's tie model, per
    component, with its tie parameter. With `turn`, only the judgements on that turn of multi-turn
    questions; with `votes=majority`, each pair of submissions once, by its verdicts' majority.
    404 for an unknown tournament or a judge without verdicts here (the message lists those with
    verdicts)."""
    level, name = by.level, (dimension.value if dimension is not None else None)
    query = VariantQuery(level, tournament=tournament, judge=judge, dimension=name, part=board_slice(turn, votes),
                         bootstrap=intervals is Intervals.BOOTSTRAP, style=control is Control.STYLE,
                         davidson=ties is TieModel.DAVIDSON)
    with judge_not_found():
        variant = board_variant(boards, flag_cache, query)  # a UseCaseError is answered by the app's handler
    board, parameters = variant.board, variant.tie_parameters
    return RankedBoardOut(
        by=board.level.value,
        tournament=tournament,
        **judge_fields(variant.choice, "/api/leaderboard", by=level.value, tournament=tournament, dimension=name,
                       turn=turn, votes=_linked(votes)),
        rows=[row_out(r, i, variant.flags) for i, r in enumerate(board.rows, start=1)],
        flags_current=variant.flags.current,
        judgements=board.judgements,
        revision=board.revision,
        dimension=name,
        turn=turn,
        votes=votes,
        components=len({r.component for r in board.rows}),
        intervals=intervals,
        bootstrap_rounds=variant.rounds,
        bootstrap_seed=variant.seed,
        control=Control.STYLE if variant.style else Control.NONE,
        control_note=variant.style_note,
        coefficients=None if variant.coefficients is None else [coefficient_out(c) for c in variant.coefficients],
        ties=TieModel.DAVIDSON if variant.davidson else TieModel.HALF,
        ties_note=variant.davidson_note,
        tie_parameter=tie_out(parameters[0]) if parameters else None,
        tie_parameters=None if parameters is None else [tie_out(p) for p in parameters],
    )


def _linked(votes: Votes) -> str | None:
    """`votes=` in the links to the other judges' boards: only when it is not the default."""
    return None if votes is Votes.EACH else votes.value


@router.get("/effects", response_model=EffectsOut)
def get_effects(
    boards: Annotated[BoardCache, Depends(get_boards)],
    tournament: TournamentFilter = None,
    judge: JudgeFilter = None,
    turn: TurnParam = None,
    votes: VotesParam = Votes.EACH,
) -> EffectsOut:
    """Model and scenario effects fitted together (a system's strength is its model's plus its
    scenario's), in Elo points with 95% intervals: what a scenario is worth across models, by one
    judge's verdicts (named, or chosen as for the board), per connected group of systems as the
    board fits its groups, and null where the verdicts do not bound an effect. `turn` and `votes`:
    which verdicts, as on the board."""
    with judge_not_found():
        choice = boards.choose(tournament_id=tournament, judge=judge)
    if choice.judge is None:  # nothing judged here: nothing to fit
        fitted = EffectsAt(fit_effects([]), boards.store.revision())
    else:
        fitted = boards.effects(tournament_id=tournament, judge=choice.judge, part=board_slice(turn, votes))
    return EffectsOut(
        tournament=tournament,
        **judge_fields(choice, "/api/leaderboard/effects", tournament=tournament, turn=turn, votes=_linked(votes)),
        **effects_fields(fitted.effects),
        turn=turn,
        votes=votes,
        revision=fitted.revision,
    )


@with_judge_rule
class MatrixOut(JudgedOut):
    """One judge's head-to-head matrices at one level. `players` in the board's order (by
    component, best first within one) index both matrices and `components`. `win_rate[i][j]`:
    (wins + ½ ties) of players[i] against players[j] over their verdicts, null where they never
    met (the diagonal included), so that `win_rate[i][j] + win_rate[j][i] == 1`; `battles[i][j]`:
    how many verdicts they share (symmetric). `turn` and `votes`: which verdicts, as on the board."""

    by: str
    tournament: int | None
    turn: int | None = None
    votes: Votes = Votes.EACH
    players: list[str]
    components: list[int]
    win_rate: list[list[float | None]]
    battles: list[list[int]]
    judgements: int
    revision: int


@router.get("/matrix", response_model=MatrixOut)
def get_matrix(
    boards: Annotated[BoardCache, Depends(get_boards)],
    by: ByLevel = By.MODEL,
    tournament: TournamentFilter = None,
    judge: JudgeFilter = None,
    turn: TurnParam = None,
    votes: VotesParam = Votes.EACH,
) -> MatrixOut:
    """The win-rate and battle-count matrices behind one judge's board (the same judge, players
    and revision as `GET /api/leaderboard` with the same parameters)."""
    level = by.level
    with judge_not_found():
        choice, board = boards.judged(level, tournament_id=tournament, judge=judge, part=board_slice(turn, votes))
    table = standings(board.counts if board.counts is not None else PairCounts.empty())
    index = {player: i for i, player in enumerate(table.players)}
    order = np.array([index[r.player] for r in board.rows], dtype=np.intp)
    cells = np.ix_(order, order)
    return MatrixOut(
        by=level.value,
        tournament=tournament,
        **judge_fields(choice, "/api/leaderboard/matrix", by=level.value, tournament=tournament, turn=turn,
                       votes=_linked(votes)),
        turn=turn,
        votes=votes,
        players=[r.player for r in board.rows],
        components=[r.component for r in board.rows],
        win_rate=[[finite(x) for x in row] for row in table.win_rate_matrix[cells].tolist()],
        battles=table.count_matrix[cells].astype(int).tolist(),
        judgements=board.judgements,
        revision=board.revision,
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
