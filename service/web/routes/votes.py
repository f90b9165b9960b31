"""Human votes on live submissions: `POST /api/votes`, one vote or a batch, filed as judgements of
`human/<voter>` (the rules, and why a vote is final, are `leaderboard.votes`'; the filing is
`service.usecases.votes`').

Each vote names its two sides, and optionally the one shown first, by submission id or by
`{question_id, model, scenario}`. A batch is all or nothing: any vote at fault refuses the whole
batch (404 a submission named does not exist, 422 a rule, 409 a different verdict on a pair the
voter already voted on), so a client can fix it and send the same batch again. The same vote
sent again answers 201 with `created: false` and the stored vote's id, as submissions do.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    StrictStr,
    Tag,
    TypeAdapter,
)

from leaderboard.votes import FORBIDDEN, VOTER_MAX, Verdict, voter_problem
from service.config import Settings
from service.store import Scope, Store, VoteChanged
from service.usecases.votes import Pointer, SubmissionKey, VoteRequest, VotesRefused, cast_votes
from service.web.api_models import Key
from service.web.auth import Caller, require_vote
from service.web.errors import STATUS_OF_KIND
from service.web.routes.common import (
    ID_MAX,
    ApiError,
    error_responses,
    get_settings,
    get_store,
    inlined,
    json_body,
    parse_batch,
    request_body,
)

router = APIRouter(prefix="/api/votes", tags=["votes"], responses=error_responses(422))

ROOT = "votes"  # a batch's paths: votes[2].a
POINTERS = ("a", "b", "first")
# What the OpenAPI document says of a voter's name (the validator says more, in words): no
# "/" or ",", no ASCII control character.
VOTER_SCHEMA = {"pattern": f"^[^{FORBIDDEN}\\x00-\\x1f\\x7f]+$"}


def _voter(name: str) -> str:
    problem = voter_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


class SubmissionKeyIn(BaseModel):
    """A submission named by its key, as it was submitted."""

    model_config = ConfigDict(extra="forbid", strict=True)

    question_id: Key
    model: Key
    scenario: Key = "default"


def _pointer_kind(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return "id"
    return "key" if isinstance(value, (dict, SubmissionKeyIn)) else None


PointerIn = Annotated[
    Annotated[StrictInt, Field(ge=1, le=ID_MAX), Tag("id")] | Annotated[SubmissionKeyIn, Tag("key")],
    Discriminator(_pointer_kind, custom_error_type="pointer",
                  custom_error_message="must be a submission id or an object {question_id, model, scenario}"),
]
Voter = Annotated[StrictStr, Field(max_length=VOTER_MAX, json_schema_extra=VOTER_SCHEMA), AfterValidator(_voter)]


class VoteIn(BaseModel):
    """One person's verdict on submissions a and b (answers to the same question): "A" (a is
    better), "B", "TIE" or "BOTH_BAD" (a tie on the boards), relative to a and b, not to the order
    shown; `first`, when known, is the one shown first."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [
        {"a": 12, "b": 15, "winner": "A", "voter": "alice", "first": 15},
    ]})

    a: PointerIn
    b: PointerIn
    winner: Literal["A", "B", "TIE", "BOTH_BAD"]
    voter: Voter
    first: PointerIn | None = None


class VoteRef(BaseModel):
    """Where a vote landed: its judgement's id and judge; `created` False when it was stored already."""

    id: int
    judge: str
    created: bool


class VotesCreated(BaseModel):
    """One entry per vote sent, in the order sent."""

    votes: list[VoteRef]


_ONE = TypeAdapter(VoteIn)
_MANY = TypeAdapter(list[VoteIn])
_ONE_SCHEMA = inlined(_ONE.json_schema())
_BODY = request_body({"anyOf": [_ONE_SCHEMA, {"type": "array", "minItems": 1, "items": _ONE_SCHEMA}]})


def _untagged(loc: tuple) -> tuple:
    """A location without the pointer union's tag: ("a", "key", "model") -> ("a", "model")."""
    return tuple(p for i, p in enumerate(loc) if not (p in ("id", "key") and i and loc[i - 1] in POINTERS))


def parse_votes(body: Any, max_batch: int) -> tuple[list[VoteIn], str]:
    """One object or a non-empty array of at most `max_batch`; the root of their paths (the
    pointer union's tags left out of each path: "a", not "a.key")."""
    return parse_batch(body, _ONE, _MANY, what="vote", max_batch=max_batch, root=ROOT, where=_untagged)


def _pointer(value: int | SubmissionKeyIn) -> Pointer:
    if isinstance(value, SubmissionKeyIn):
        return SubmissionKey(value.question_id, value.model, value.scenario)
    return value


def to_request(item: VoteIn) -> VoteRequest:
    """A validated vote as the use case's input."""
    return VoteRequest(voter=item.voter, a=_pointer(item.a), b=_pointer(item.b), verdict=Verdict(item.winner),
                       first=None if item.first is None else _pointer(item.first))


def _path(root: str, index: int, field: str = "") -> str:
    where = f"{root}[{index}]" if root else ""
    return f"{where}.{field}" if where and field else where or field


@router.post(
    "",
    status_code=201,
    response_model=VotesCreated,
    responses=error_responses(400, 401, 403, 404, 409, 413, 422),
    openapi_extra=_BODY,
)
def create_votes(
    caller: Annotated[Caller, Depends(require_vote)],
    body: Annotated[Any, Depends(json_body)],
    store: Annotated[Store, Depends(get_store)],
    settings: Annotated[Settings, Depends(get_settings)],
) -> VotesCreated:
    """File one human vote or a batch as judgements of `human/<voter>`; the same vote again
    answers `created: false`. A voter's key in a private joust (which reads nothing) votes blind:
    it names answers by submission id only, and no refusal says who wrote which."""
    items, root = parse_votes(body, settings.max_batch)
    blind = settings.private and set(caller.scopes) == {Scope.VOTE}
    try:
        stored = cast_votes(store, [to_request(item) for item in items], blind=blind)
    except VotesRefused as exc:
        details = [{"path": _path(root, p.index, p.field), "message": p.message} for p in exc.problems]
        shown = [f"{d['path']}: {d['message']}" for d in details[:5]]
        more = [f"and {len(details) - 5} more"] if len(details) > 5 else []
        raise ApiError(STATUS_OF_KIND[exc.kind], "; ".join(shown + more) + "; nothing was stored", details=details) from None
    except VoteChanged as exc:
        where = _path(root, exc.index)
        raise ApiError(409, f"conflict: {where + ': ' if where else ''}{exc}; nothing was stored") from None
    return VotesCreated(votes=[VoteRef(id=v.id, judge=v.judge, created=v.created) for v in stored])
