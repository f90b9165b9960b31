"""`GET /api/leaderboard`'s answer: the ranked board's rows and fields, and its variants' parameters.

Kept beside the route rather than in it, as the tie model's (`board_ties`) and the effects'
(`board_effects`) are: the response models the OpenAPI document states, `intervals=` and
`control=` (their vocabularies and query parameters), and how a board row, its gaming flags and
a style coefficient become JSON (a number that could not be estimated is null). Which board is
served is the use case's (`service.usecases.board_variants`); the route asks it and fills these.
"""
from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel, Field

from leaderboard.resampled import Missing
from leaderboard.style_board import ComponentCoefficient
from leaderboard.types import Rating
from service.usecases.boards import BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED
from service.usecases.flag_cache import BoardFlags
from service.web.api_models import Vocabulary
from service.web.api_responses import LeaderboardOut, LeaderboardRow
from service.web.routes.board_slice import Votes
from service.web.routes.board_ties import TieModel, TieParameterOut
from service.web.routes.judge_choice import JudgedOut, with_judge_rule


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


IntervalsParam = Annotated[Intervals, Query(
    description=f"closed: normal intervals from the fit (the default); bootstrap: {BOOTSTRAP_ROUNDS} resamples "
                f"of the questions, seed {BOOTSTRAP_SEED}, cached per revision")]
ControlParam = Annotated[Control, Query(
    description="style: ratings with the judge's taste for length and markdown removed (Chatbot Arena's style "
                "control; each row keeps its plain rating in `plain_*`, the response adds the coefficients); "
                "a board of imported battles without outputs answers 422 saying why")]


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
        win_rate=_optional_finite(row.win_rate),  # `leaderboard.standings.Record.win_rate`
        component=row.component,
        bounded=row.bounded,
        ci_missing=Missing.UNBOUNDED if not row.bounded else row.ci_missing,
        rank=position if row.rank is None else row.rank,
        rank_low=row.rank_low,
        rank_high=row.rank_high,
        plain_rating=_optional_finite(row.plain_rating),
        plain_ci_low=_optional_finite(row.plain_ci_low),
        plain_ci_high=_optional_finite(row.plain_ci_high),
        flags=[FlagOut(kind=f.kind.value, evidence=f.evidence) for f in (flags.of(row.player) if flags else ())],
    )


def _optional_finite(value: Any) -> float | None:
    return None if value is None else finite(value)


def coefficient_out(found: ComponentCoefficient) -> CoefficientOut:
    """One style coefficient as the API shows it (JSON-safe)."""
    return CoefficientOut(component=found.component, name=found.coefficient.name, value=finite(found.coefficient.value),
                          ci_low=finite(found.coefficient.low), ci_high=finite(found.coefficient.high))
