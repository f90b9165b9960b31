"""`GET /api/leaderboard?ties=`: how a board counts a tie, and the Davidson board's tie parameter.

Kept beside the leaderboard route rather than in it: the option's vocabulary and its response
fields. The Davidson refit itself (`BoardCache.tied`, cached per revision), what it is not
combined with and why, are the use case's: `service.usecases.board_variants`.
"""
from __future__ import annotations

import math
from typing import Annotated

from fastapi import Query
from pydantic import BaseModel

from leaderboard.tie_board import TieParameter
from service.web.api_models import Vocabulary


class TieModel(Vocabulary):
    """`ties=`: how a tie counts: half a win each way (Bradley-Terry, the default) or by
    Davidson's tie model, with a tie parameter of its own."""

    HALF = "half"
    DAVIDSON = "davidson"


class TieParameterOut(BaseModel):
    """One component's Davidson tie parameter ν with its 95% interval, and ν / (2 + ν): how
    often two equally strong players tie under the fit."""

    component: int
    nu: float | None
    ci_low: float | None
    ci_high: float | None
    tie_probability_equal: float | None


TiesParam = Annotated[TieModel, Query(
    description="half: a tie is half a win each way (Bradley-Terry, the default); davidson: Davidson's tie "
                "model, per component, with its tie parameter nu in `tie_parameter` (not computed with "
                "intervals=bootstrap or an anchored tournament, which answer the half board with `ties_note`)")]


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def tie_out(parameter: TieParameter) -> TieParameterOut:
    """One component's tie parameter as the API shows it (JSON-safe)."""
    return TieParameterOut(component=parameter.component, nu=_finite(parameter.nu), ci_low=_finite(parameter.low),
                           ci_high=_finite(parameter.high),
                           tie_probability_equal=_finite(parameter.tie_probability_equal))

