"""The leaderboard over the API: boards served by the app's `BoardCache`, current on every request.

Ratings are a view, never stored: the store yields one row per judgement and pair of submissions
(so a judgement shared by several tournaments counts once), a level keeps the rows whose two
sides are different players there, and the board fits them. Every board is one judge's
(`service.web.routes.judge_choice` says which and why) and ranks each connected component of the
comparison graph on its own. The cache (service.usecases.boards) follows new judgements incrementally, so
a request costs one revision read when nothing changed and the new rows only when something did.
`compute_board` is the from-scratch path, kept for tests and as the benchmark's baseline.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from leaderboard.battles import PairCounts
from leaderboard.board import build_board
from leaderboard.dimensions import DIMENSIONS
from leaderboard.effects import fit_effects
from leaderboard.players import SideRow, battles_at_level
from leaderboard.resampled import Missing
from leaderboard.standings import standings
from leaderboard.types import Level, Rating
from service.store import Store
from service.usecases.boards import (
    BOOTSTRAP_ROUNDS,
    BOOTSTRAP_SEED,
    Board,
    BoardCache,
    EffectsAt,
)
from service.usecases.flag_cache import API_WAIT_S, BoardFlags, FlagCache
from service.usecases.rounds import anchored_board
from service.web.api_models import By, Dimension, LeaderboardOut, LeaderboardRow, Vocabulary
from service.web.routes.board_effects import EffectsOut, effects_fields
from service.web.routes.board_slice import TurnParam, Votes, VotesParam, board_slice
from service.web.routes.board_ties import TieModel, TieParameterOut, TiesParam, davidson_board
from service.web.routes.common import ID_MAX, ApiError, FilterText, TournamentFilter, error_responses
from service.web.routes.judge_choice import JudgedOut, judge_fields, judge_not_found, with_judge_rule

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


def get_flags(request: Request) -> FlagCache:
    """The gaming flags' cache opened by the lifespan."""
    return request.app.state.flags


def finite(value: Any) -> float | None:
    """A JSON-safe number: NaN and infinities (nothing to estimate) become null."""
    number = float(value)
    return number if math.isfinite(number) else None


class Intervals(Vocabulary):
    """`intervals=`: how a board's 95% intervals are computed."""

    CLOSED = "closed"
    BOOTSTRAP = "bootstrap"


class Control(Vocabulary):
    """`control=`: what the ratings are controlled for."""

    NONE = "none"
    STYLE = "style"


class CoefficientOut(BaseModel):
    """One style covariate's effect in one component: Elo points per standard deviation of the
    covariate (the normalised difference in length, markdown headers, list items or bold)."""

    component: int
    name: str
    value: float | None
    ci_low: float | None
    ci_high: float | None


class FlagOut(BaseModel):
    """A sign of gaming (`leaderboard.flags`): `kind` is constant_output, addresses_judge,
    copies_question or length_unexplained; `evidence` says it in a sentence with the numbers."""

    kind: str
    evidence: str


class RankedRow(LeaderboardRow):
    """A board row: its component (1 = the largest) and, within it, its rank and the range of
    ranks its 95% interval allows. `bounded` false: the component's verdicts do not bound its
    ratings (someone won every game against the rest of a part of it), so it has no intervals
    (null) and its rank range comes from who beat whom; its ratings only order it. `ci_missing`
    says why a row has no interval (null when it has one): `unbounded` (the verdicts, or with
    `intervals=bootstrap` too many resamples of them, do not bound the rating) or `no_spread`
    (every bootstrap resample gives the same rating: the questions never disagree, so resampling
    them cannot measure the spread; the closed-form interval can)."""

    component: int
    bounded: bool = True
    ci_missing: Missing | None = None
    plain_rating: float | None = None
    plain_ci_low: float | None = None
    plain_ci_high: float | None = None
    rank: int
    rank_low: int | None
    rank_high: int | None
    flags: list[FlagOut] = Field(default_factory=list)  # empty for an honest player (and one without outputs)


@with_judge_rule
class RankedBoardOut(JudgedOut, LeaderboardOut):
    """Rows by component, best first within one; `revision` counts the resolved matches the
    board includes (it only grows). `dimension`: the dimension ranked by (only `dimensions`
    judgements count), or null.

    Components: players that no chain of verdicts links (the comparison graph in several pieces)
    are never ranked against each other. `components` counts the pieces; each row's `component`
    says which one it is in (1 = the most players; equal sizes by their first player's name), and
    its rating, interval and ranks are fitted within that component alone (its mean player at
    1000), so ratings compare only within a component.

    Intervals: `closed` (the default) are normal 95% intervals from the fit's curvature (Fisher);
    `bootstrap` are 95% percentile intervals over `bootstrap_rounds` resamples of the questions
    (seed `bootstrap_seed`, so the same judgements give the same intervals), computed within each
    component and cached per revision; never of zero width: a row the resamples cannot bound or
    do not vary has none, and its `ci_missing` says which.

    Ties: `half` (the default) counts a tie as half a win each way; `davidson` rates by
    Davidson's tie model, fitted per component on the same judgements (the plain rating kept in
    `plain_*`), and reports its tie parameter: `tie_parameter` is component 1's (null with
    `half`), `tie_parameters` every component's.

    `turn`: the turn of multi-turn questions the board counts (null: every turn); `votes`:
    `each` verdict a battle, or each pair's `majority` one battle (see `?votes=`).
    """

    rows: list[RankedRow]  # type: ignore[assignment]
    revision: int
    dimension: str | None = None
    turn: int | None = None
    votes: Votes = Votes.EACH
    components: int
    intervals: Intervals
    bootstrap_rounds: int | None = None
    bootstrap_seed: int | None = None
    control: Control = Control.NONE
    control_note: str | None = None  # why a requested control was not applied
    coefficients: list[CoefficientOut] | None = None
    ties: TieModel = TieModel.HALF
    ties_note: str | None = None  # why a requested tie model was not applied
    tie_parameter: TieParameterOut | None = None  # component 1's
    tie_parameters: list[TieParameterOut] | None = None  # every component's
    flags_current: bool = True  # false: the rows' gaming flags predate the newest submissions (being redone)


def optional_int(value: Any) -> int | None:
    """An int, or None for a missing value."""
    return None if value is None else int(value)


def row_out(row: Rating, position: int, flags: BoardFlags | None = None) -> RankedRow:
    """One Rating as the API shows it; `position` (1 for the first row) stands in for a missing
    rank; `flags`: the board's gaming flags."""
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
        win_rate=_optional_finite(row.extra.get("win_rate")),  # `leaderboard.standings.Record.win_rate`
        component=int(row.extra.get("component", 1)),
        bounded=bool(row.extra.get("bounded", True)),
        ci_missing=Missing.UNBOUNDED if not row.extra.get("bounded", True) else row.extra.get("ci_missing"),
        rank=int(row.extra.get("rank", position)),
        rank_low=optional_int(row.extra.get("rank_low")),
        rank_high=optional_int(row.extra.get("rank_high")),
        plain_rating=_optional_finite(row.extra.get("plain_rating")),
        plain_ci_low=_optional_finite(row.extra.get("plain_ci_low")),
        plain_ci_high=_optional_finite(row.extra.get("plain_ci_high")),
        flags=[FlagOut(kind=f.kind.value, evidence=f.evidence) for f in (flags.of(row.player) if flags else ())],
    )


def _optional_finite(value: Any) -> float | None:
    return None if value is None else finite(value)


JudgeFilter = Annotated[FilterText | None, Query(
    description='the judge whose board this is: "provider/model", "human/<voter>", or "human" for all human '
                "voters; left out, the judge of the latest tournament (see the response's `judge_chosen_by`)")]
IntervalsParam = Annotated[Intervals, Query(
    description=f"closed: normal intervals from the fit (the default); bootstrap: {BOOTSTRAP_ROUNDS} resamples "
                f"of the questions, seed {BOOTSTRAP_SEED}, cached per revision")]
ControlParam = Annotated[Control, Query(
    description="style: ratings with the judge's taste for length and markdown removed (Chatbot Arena's style "
                "control; each row keeps its plain rating in `plain_*`, the response adds the coefficients); "
                "a board of imported battles without outputs answers 422 saying why")]
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
    level, name, part = by.level, (dimension.value if dimension is not None else None), board_slice(turn, votes)
    with judge_not_found():
        choice, board = boards.judged(level, tournament_id=tournament, judge=judge, dimension=name, part=part)
    opinions = boards.second_opinions(level, choice, board.revision, tournament_id=tournament, dimension=name,
                                      part=part)
    flags = flag_cache.of(board, (tournament, choice.judge, name, part), opinions=opinions, soon=True,
                          wait_s=API_WAIT_S, stale_ok=False)
    spec = boards.store.tournament_spec(tournament) if tournament is not None else None
    anchored = spec is not None and spec.anchored and name is None and level is spec.level and part.whole
    rounds = seed = None
    coefficients = None
    note = ties_note = None
    tie_parameters: list[TieParameterOut] | None = None
    if control is Control.STYLE and (name is not None or anchored or intervals is Intervals.BOOTSTRAP
                                     or part.majority):
        # a valid request: answered, and the response says it is the plain board, and why
        control, note = Control.NONE, ("style control is not computed with dimension=, intervals=bootstrap, "
                                       "votes=majority or an anchored tournament: this is the plain board")
    if ties is TieModel.DAVIDSON and (anchored or intervals is Intervals.BOOTSTRAP):
        ties, ties_note = TieModel.HALF, ("ties=davidson is not computed with intervals=bootstrap or an anchored "
                                          "tournament: ties count half a win each way on this board")
    if ties is TieModel.DAVIDSON and control is Control.STYLE:
        control, note = Control.NONE, ("style control is not computed with ties=davidson: this is the Davidson "
                                       "board without style control")
    if ties is TieModel.DAVIDSON:
        board, tie_parameters = davidson_board(boards, board, judge=choice.judge, tournament=tournament,
                                               dimension=name, part=part)
    elif control is Control.STYLE:
        if choice.judge is not None:
            styled = boards.styled(level, board, judge=choice.judge, tournament_id=tournament, turn=turn)
            if styled.unavailable is not None:
                raise ApiError(422, f"control=style: {styled.unavailable}")
            board = styled.board
            coefficients = [CoefficientOut(component=c.component, name=c.coefficient.name,
                                           value=finite(c.coefficient.value), ci_low=finite(c.coefficient.low),
                                           ci_high=finite(c.coefficient.high)) for c in styled.coefficients]
    elif intervals is Intervals.BOOTSTRAP:
        if anchored:
            raise ApiError(422, "intervals=bootstrap: an anchored tournament's board holds its anchors at fixed "
                                "ratings, and its intervals are the anchored fit's; leave intervals out")
        if choice.judge is not None:
            boot = boards.bootstrapped(level, judge=choice.judge, tournament_id=tournament, dimension=name,
                                       part=part)
            board, rounds, seed = boot.board, boot.rounds, boot.seed
    elif anchored and spec is not None:
        # an anchored tournament: its anchors held at the ratings they had when it was created
        board = Board(level=level, rows=anchored_board(boards.store, spec, k=boards.k),
                      judgements=board.judgements, revision=board.revision)
    return RankedBoardOut(
        by=board.level.value,
        tournament=tournament,
        **judge_fields(choice, "/api/leaderboard", by=level.value, tournament=tournament, dimension=name, turn=turn,
                       votes=_linked(votes)),
        rows=[row_out(r, i, flags) for i, r in enumerate(board.rows, start=1)],
        flags_current=flags.current,
        judgements=board.judgements,
        revision=board.revision,
        dimension=name,
        turn=turn,
        votes=votes,
        components=len({r.extra.get("component", 1) for r in board.rows}),
        intervals=intervals,
        bootstrap_rounds=rounds,
        bootstrap_seed=seed,
        control=control,
        control_note=note,
        coefficients=coefficients,
        ties=ties,
        ties_note=ties_note,
        tie_parameter=tie_parameters[0] if tie_parameters else None,
        tie_parameters=tie_parameters,
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
        components=[int(r.extra.get("component", 1)) for r in board.rows],
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
