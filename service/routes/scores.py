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

from service.api_models import ErrorOut
from service.store import Store

from .common import ApiError, get_store
from .leaderboard import finite

router = APIRouter(prefix="/api/scores", tags=["scores"])

# "+" in a query string decodes to a space, so "by=model+scenario" arrives as "model scenario".
GROUPS: dict[str, tuple[str, ...]] = {
    "model": ("model",),
    "scenario": ("scenario",),
    "model+scenario": ("model", "scenario"),
    "model scenario": ("model", "scenario"),
    "model + scenario": ("model", "scenario"),
    "system": ("model", "scenario"),
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


def parse_groups(by: str) -> tuple[str, ...]:
    """`model`, `scenario` or `model+scenario` (alias `system`); 422 otherwise."""
    groups = GROUPS.get(" ".join(by.split()).lower())
    if groups is None:
        raise ApiError(422, f"by: {by!r} is not a grouping; use model, scenario or model+scenario (alias system)")
    return groups


@router.get("", response_model=ScoresOut, responses={422: {"model": ErrorOut}})
def get_scores(
    store: Annotated[Store, Depends(get_store)],
    by: Annotated[str, Query(description="model, scenario or model+scenario (alias: system)")] = "model+scenario",
    judge: Annotated[str | None, Query(description='only this judge, e.g. "anthropic/<model>" or "rubric/human"')] = None,
    criteria: Annotated[str, Query(description="the criteria set scored under")] = "compqa",
) -> ScoresOut:
    """Mean, standard deviation and count of the scores per group, for each judge (or one)."""
    groups = parse_groups(by)
    judges = [judge] if judge is not None else store.score_judges(criteria)
    rows = [
        ScoreRow(judge=name, model=row.get("model"), scenario=row.get("scenario"), mean=finite(row["mean"]),
                 std=finite(row["std"]), n=int(row["n"]))
        for name in judges
        for row in store.score_means(name, criteria, groups)
    ]
    return ScoresOut(by="+".join(groups), criteria=criteria, judge=judge, rows=rows)
