"""Absolute scores over the API: the mean rubric score per model, scenario or (model, scenario).

Scores come from the `compqa` criteria set (a worker scores each submission once per judge) and
from imports (`joust import cqa`: the paper's GPT-4, GPT-3.5, Perplexity and human experts). Each
group's mean, standard deviation (n-1; null for one score) and n are read from the store on each
request (`Store.score_means`), per judge.
"""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel

from leaderboard.types import Level
from service.store import Store
from service.web.api_models import By, Criteria
from service.web.routes.board_out import finite
from service.web.routes.common import FilterText, error_responses, get_store

router = APIRouter(prefix="/api/scores", tags=["scores"], responses=error_responses(422))

GROUPS: dict[Level, tuple[str, ...]] = {
    Level.MODEL: ("model",),
    Level.SCENARIO: ("scenario",),
    Level.SYSTEM: ("model", "scenario"),
}


class ScoreRow(BaseModel):
    """One group of one judge's scores; `model` / `scenario` are null when not grouped by."""

    judge: str
    model: str | None = None
    scenario: str | None = None
    mean: float | None
    std: float | None
    n: int


class ScoresOut(BaseModel):
    """Rows by judge, then by group name."""

    by: str
    criteria: str
    judge: str | None
    rows: list[ScoreRow]


@router.get("", response_model=ScoresOut)
def get_scores(
    store: Annotated[Store, Depends(get_store)],
    by: Annotated[By, Query(description="group by model, scenario or model+scenario (alias: system; any case)")]
    = By.SYSTEM,
    judge: Annotated[
        FilterText | None, Query(description='only this judge, e.g. "anthropic/<model>" or "rubric/human"')
    ] = None,
    criteria: Annotated[Criteria, Query(description="the criteria set scored under")] = Criteria.COMPQA,
) -> ScoresOut:
    """Mean, standard deviation and count of the scores per group, for each judge (or one)."""
    groups, criteria_set = GROUPS[by.level], criteria.value
    judges = [judge] if judge is not None else store.score_judges(criteria_set)
    rows = [
        ScoreRow(judge=name, model=row.get("model"), scenario=row.get("scenario"), mean=finite(row["mean"]),
                 std=finite(row["std"]), n=int(row["n"]))
        for name in judges
        for row in store.score_means(name, criteria_set, groups)
    ]
    return ScoresOut(by="+".join(groups), criteria=criteria_set, judge=judge, rows=rows)
