"""What every board the API serves says about its judge: which one, why, and the others.

A board holds one judge's verdicts (`leaderboard.judges`): the response names it, says how it
was chosen, and links the boards of the other judges with verdicts on the same scope, so a
reader never takes one judge's opinion for everyone's without being told.
"""
from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlencode

from pydantic import BaseModel, Field

from leaderboard.judges import ChosenBy, JudgeChoice, UnknownJudge
from service.web.routes.common import ApiError

JUDGE_RULE = (
    "A board holds one judge's verdicts, never several judges pooled. `judge=` names it: a "
    "`provider/model` judge, one human voter `human/<voter>`, or `human` for all human voters "
    "together (humans are pooled with humans, never with an LLM judge); a judge without verdicts "
    "on the board's scope is a 404 that lists those with verdicts. Without `judge=` the board is "
    "that of the judge of the most recently created tournament with verdicts here (an import is a "
    "tournament too), human voters left out while any other judge has verdicts; with only human "
    "votes, `human`; with no verdicts, none (an empty board). `judge_chosen_by` says which rule "
    "applied (`named`, `latest tournament`, `most verdicts`: a judge without a tournament, "
    "`only human votes`, `no verdicts`) and `other_judges` links the other boards."
)


class OtherJudge(BaseModel):
    """Another judge with verdicts on the same scope, and the URL of its board."""

    judge: str
    verdicts: int = Field(description="its verdicts on this scope (judgements counted, at every level)")
    board: str


class JudgedOut(BaseModel):
    """The judge a board holds (null only when nobody has judged anything here), why, and the others."""

    judge: str | None
    judge_chosen_by: ChosenBy
    other_judges: list[OtherJudge]


M = TypeVar("M", bound=type[BaseModel])


def with_judge_rule(model: M) -> M:
    """Append the rule to a response model's docstring: the description the OpenAPI document shows."""
    model.__doc__ = f"{inspect.cleandoc(model.__doc__ or '')}\n\n{JUDGE_RULE}"
    return model


def judge_fields(choice: JudgeChoice, path: str, **params: Any) -> dict[str, Any]:
    """`JudgedOut`'s fields for a choice; each other judge's link is `path` with `params` (None
    values left out) and its `judge=`."""
    kept = {name: value for name, value in params.items() if value is not None}
    return {
        "judge": choice.judge,
        "judge_chosen_by": choice.chosen_by,
        "other_judges": [
            OtherJudge(judge=other.judge, verdicts=other.verdicts,
                       board=f"{path}?{urlencode({'judge': other.judge, **kept})}")
            for other in choice.others
        ],
    }


@contextmanager
def judge_not_found() -> Iterator[None]:
    """A named judge without verdicts on the scope is a 404 listing the judges that have some."""
    try:
        yield
    except UnknownJudge as exc:
        raise ApiError(404, str(exc), judges=exc.known) from None
