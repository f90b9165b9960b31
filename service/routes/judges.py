"""Judge health over the API: how far each judge can be trusted, beside the boards it feeds.

The statistics are computed by `leaderboard.health` (their definitions are in its docstring) from
every stored judgement, so this route and the page share the app's one `JudgeHealthCache`
(service.judge_health_cache), a running tally that reads each judgement once: this route asks it
for `current()` figures, refreshed first when a judgement was resolved or a match failed
unparseable since the last result, never served stale.

`?humans=` chooses the human reference set (every human judge by default): names of human judges,
`human/<voter>`, repeated or separated by commas. A name that is not a human judge's is refused
(422); a human judge with no votes stored is not found (404).
"""
from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from leaderboard.health import HUMAN_PREFIX, JudgeHealth, VoterAgreement
from leaderboard.judge_alpha import JudgeAlpha
from service.api_models import KEY_MAX
from service.judge_health_cache import JudgeHealthCache

from .common import ApiError, FilterText, error_responses

router = APIRouter(prefix="/api/judges", tags=["judges"])

# One value of ?humans=: human judges' names separated by commas (spaces around them ignored).
HUMAN_NAME = "human/[^,\\x00]+"
HUMANS_PATTERN = f"^ *{HUMAN_NAME}(, *{HUMAN_NAME})*$"
# At most HUMANS_VALUES values of KEY_MAX characters (a judge's name is at most that long): a
# query string any server and client takes, however its characters are percent-encoded.
HUMANS_VALUES = 20
SHOWN = 10  # known human judges named in a 404


def get_judge_health(request: Request) -> JudgeHealthCache:
    """The judge-health cache the lifespan opened beside the boards, shared with the page."""
    return request.app.state.judge_health


class JudgesOut(BaseModel):
    """Every judge with stored judgements or parse failures, by name (`leaderboard.health`'s
    own record, served as is: a rate is null when there was nothing to count); the human
    reference set the agreement figures are measured against; how often its votes agree with
    each other; Krippendorff's alpha between every two judges that are not human, on the pairs
    both judged (`judge_agreement`; with `?judge=`, only those it is one of)."""

    judges: list[JudgeHealth]
    humans: list[str]
    voter_agreement: VoterAgreement
    judge_agreement: list[JudgeAlpha]


HumansQuery = Annotated[
    list[Annotated[str, Field(max_length=KEY_MAX, json_schema_extra={"pattern": HUMANS_PATTERN})]] | None,
    Query(max_length=HUMANS_VALUES, description='the human reference set: human judges, e.g. "human/alice", '
                                                "repeated or separated by commas (default: every human judge)"),
]


def reference_set(values: list[str] | None) -> set[str] | None:
    """The names `?humans=` gives; 422 naming the first value that is not a list of human judges."""
    if values is None:
        return None
    names: set[str] = set()
    for value in values:
        if re.fullmatch(HUMANS_PATTERN, value) is None:
            bad = next((p for p in value.split(",") if re.fullmatch(f" *{HUMAN_NAME}", p) is None), value)
            message = (f"{bad.strip()[:80]!r} is not a human judge: name human judges as {HUMAN_PREFIX}<voter>, "
                       "separated by commas")
            raise ApiError(422, f"query parameter humans: {message}",
                           details=[{"path": "query parameter humans", "message": message}])
        names.update(part.strip(" ") for part in value.split(","))
    return names


@router.get("", response_model=JudgesOut, responses=error_responses(404, 422))
def get_judges(
    cache: Annotated[JudgeHealthCache, Depends(get_judge_health)],
    judge: Annotated[
        FilterText | None, Query(description='only this judge, e.g. "anthropic/claude-..." or "import/gpt4"')
    ] = None,
    humans: HumansQuery = None,
) -> JudgesOut:
    """Per judge: order consistency, first-position win rate, tie rate, parse-failure rate, how
    often the longer answer wins, and agreement with the human votes on the same pairs (with ties,
    and without: both naming a winner, and as Krippendorff's alpha with a 95% bootstrap interval);
    agreement between the human votes themselves; alpha between judges; current as of this
    request."""
    chosen = reference_set(humans)
    if chosen is not None:
        known = cache.current().humans  # every human judge with votes
        unknown = sorted(chosen - set(known))
        if unknown:
            listed = ", ".join(known[:SHOWN]) + (f" and {len(known) - SHOWN} more" if len(known) > SHOWN else "")
            named = ", ".join(name[:80] for name in unknown[:SHOWN]) + (" ..." if len(unknown) > SHOWN else "")
            raise ApiError(404, f"no votes by {named}: "
                                + (f"the human judges are {listed}" if known else "no human votes are stored"))
    health = cache.current(chosen)
    return JudgesOut(judges=health.of(judge), humans=list(health.humans), voter_agreement=health.voters,
                     judge_agreement=health.alphas_of(judge))
