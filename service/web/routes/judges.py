"""Judge health over the API: how far each judge can be trusted, beside the boards it feeds.

The statistics are computed by `leaderboard.judge_health` (their definitions are in its docstring) from
every stored judgement, so this route and the page share the app's one `JudgeHealthCache`
(service.usecases.judge_health_cache), a running tally that reads each judgement once: this route asks it
for `current()` figures, refreshed first when a judgement was resolved or a match failed
unparseable since the last result, never served stale.

`?humans=` chooses the human reference set (every human judge by default): names of human judges,
`human/<voter>`, repeated or separated by commas, and patterns in which `*` stands for any run of
characters (`human/expert_*`: every voter whose name starts so), so a panel of any size is named
(`leaderboard.reference_humans`). A name that is not a human judge's is refused (422); a human
judge with no votes stored, or a pattern that matches none, is not found (404). The limits are
the URL's: HUMANS_VALUES values of HUMANS_CHARS characters.

`?turn=` scopes every figure to the judgements on one turn of multi-turn questions
(`leaderboard.turns`): one tally per turn asked for, kept like the overall one.
"""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from leaderboard.judge_alpha import JudgeAlpha
from leaderboard.judge_health import JudgeHealth, VoterAgreement
from leaderboard.reference_humans import NotHuman, NoVotes, chosen, names_of
from service.usecases.judge_health_cache import JudgeHealthCache
from service.web.api_models import KEY_MAX
from service.web.routes.board_slice import TurnParam
from service.web.routes.common import ApiError, FilterText, error_responses
from service.web.state import state_of

router = APIRouter(prefix="/api/judges", tags=["judges"])

# One value of ?humans=: human judges' names or patterns separated by commas (spaces around them ignored).
HUMAN_NAME = "human/[^,\\x00]+"
HUMANS_PATTERN = f"^ *{HUMAN_NAME}(, *{HUMAN_NAME})*$"
# At most HUMANS_VALUES values of HUMANS_CHARS characters (a judge's name is at most that long): a
# query string any server and client takes (64 KiB), however its characters are percent-encoded
# (20 x 255 x 12). Names packed into comma lists fit some 300 voters (`joust.humans.packed`, which
# the client does); a pattern names any number.
HUMANS_CHARS = KEY_MAX
HUMANS_VALUES = 20


def get_judge_health(request: Request) -> JudgeHealthCache:
    """The judge-health cache the lifespan opened beside the boards, shared with the page."""
    return state_of(request).judge_health


class JudgesOut(BaseModel):
    """Every judge with stored judgements or parse failures, by name (`leaderboard.judge_health`'s
    own record, served as is: a rate is null when there was nothing to count); the human
    reference set the agreement figures are measured against; the turn the figures are scoped to
    (null: every turn); how often its votes agree with each other; Krippendorff's alpha between
    every two judges that are not human, on the pairs both judged (`judge_agreement`; with
    `?judge=`, only those it is one of)."""

    judges: list[JudgeHealth]
    humans: list[str]
    turn: int | None = None
    voter_agreement: VoterAgreement
    judge_agreement: list[JudgeAlpha]


HumansQuery = Annotated[
    list[Annotated[str, Field(max_length=HUMANS_CHARS, json_schema_extra={"pattern": HUMANS_PATTERN})]] | None,
    Query(max_length=HUMANS_VALUES, description='the human reference set: human judges, e.g. "human/alice", '
                                                'or patterns where * is any run of characters, e.g. '
                                                '"human/expert_*", repeated or separated by commas (default: '
                                                f"every human judge); at most {HUMANS_VALUES} values of "
                                                f"{HUMANS_CHARS} characters, so pack many names into comma "
                                                "lists, or name them by a pattern"),
]


def reference_set(values: list[str] | None, known: tuple[str, ...]) -> frozenset[str] | None:
    """The human judges `?humans=` chooses among `known` (those with votes); 422 naming the first
    value that is not a human judge, 404 for a name without votes or a pattern matching none."""
    if values is None:
        return None
    try:
        return chosen(names_of(values), known)
    except NotHuman as exc:
        message = str(exc)
        raise ApiError(422, f"query parameter humans: {message}",
                       details=[{"path": "query parameter humans", "message": message}]) from None
    except NoVotes as exc:
        raise ApiError(404, str(exc)) from None


@router.get("", response_model=JudgesOut, responses=error_responses(404, 422))
def get_judges(
    cache: Annotated[JudgeHealthCache, Depends(get_judge_health)],
    judge: Annotated[
        FilterText | None, Query(description='only this judge, e.g. "anthropic/claude-..." or "import/gpt4"')
    ] = None,
    humans: HumansQuery = None,
    turn: TurnParam = None,
) -> JudgesOut:
    """Per judge: order consistency, first-position win rate, tie rate, parse-failure rate, how
    often the longer answer wins, and agreement with the human votes on the same pairs (with ties,
    and without: both naming a winner, and as Krippendorff's alpha with a 95% bootstrap interval);
    agreement between the human votes themselves; alpha between judges; current as of this
    request. With `turn`, over the judgements on that turn of multi-turn questions only."""
    chosen_set = None if humans is None else reference_set(humans, cache.current().humans)
    health = cache.current(chosen_set, turn=turn)
    return JudgesOut(judges=health.of(judge), humans=list(health.humans), turn=turn, voter_agreement=health.voters,
                     judge_agreement=health.alphas_of(judge))
