"""Judge health over the API: how far each judge can be trusted, beside the boards it feeds.

The statistics are computed by `leaderboard.health` (their definitions are in its docstring) from
every stored judgement, which takes seconds at a million, so this route and the page share the
app's one `JudgeHealthCache` (service.judge_health_cache): it is recomputed only when a judgement
was resolved or a match failed unparseable since the last computation, never served stale.
"""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel

from leaderboard.health import JudgeHealth
from service.judge_health_cache import JudgeHealthCache

from .common import FilterText, error_responses

router = APIRouter(prefix="/api/judges", tags=["judges"])


def get_judge_health(request: Request) -> JudgeHealthCache:
    """The judge-health cache the lifespan opened beside the boards, shared with the page."""
    return request.app.state.judge_health


class JudgesOut(BaseModel):
    """Every judge with stored judgements or parse failures, by name (`leaderboard.health`'s
    own record, served as is: a rate is null when there was nothing to count)."""

    judges: list[JudgeHealth]


@router.get("", response_model=JudgesOut, responses=error_responses(422))
def get_judges(
    cache: Annotated[JudgeHealthCache, Depends(get_judge_health)],
    judge: Annotated[
        FilterText | None, Query(description='only this judge, e.g. "anthropic/claude-..." or "import/gpt4"')
    ] = None,
) -> JudgesOut:
    """Per judge: order consistency, first-position win rate, tie rate, parse-failure rate, how
    often the longer answer wins, and agreement with human votes on the same pairs; current as of
    this request."""
    return JudgesOut(judges=cache.current().of(judge))
