"""Judge health over the API: how far each judge can be trusted, beside the boards it feeds.

The statistics are computed by `leaderboard.health` from every stored judgement on each request
(no cache: a full read of the judgements table, which takes well under a second for the
imported benchmarks); their definitions are in that module's docstring.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel

from service.api_models import ErrorOut
from service.store import Store

from .common import get_store

router = APIRouter(prefix="/api/judges", tags=["judges"])


class JudgeHealthOut(BaseModel):
    """One judge's health; a rate is null when there was nothing to count."""

    judge: str
    calls: int
    judgements: int
    consistency: float | None
    first_position_win_rate: float | None
    tie_rate: float | None
    parse_failure_rate: float | None
    longer_wins_rate: float | None
    human_agreement: float | None
    human_pairs: int
    human_votes: int


class JudgesOut(BaseModel):
    """Every judge with stored judgements or parse failures, by name."""

    judges: list[JudgeHealthOut]


@router.get("", response_model=JudgesOut, responses={422: {"model": ErrorOut}})
def get_judges(
    store: Annotated[Store, Depends(get_store)],
    judge: Annotated[str | None, Query(description='only this judge, e.g. "anthropic/claude-..." or "import/gpt4"')] = None,
) -> JudgesOut:
    """Per judge: order consistency, first-position win rate, tie rate, parse-failure rate, how
    often the longer answer wins, and agreement with human votes on the same pairs."""
    return JudgesOut(judges=[JudgeHealthOut(**asdict(h)) for h in store.judge_health(judge)])
