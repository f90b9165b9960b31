"""Casting human votes: find the submissions each vote names, check it, file it.

The API (`service.web.routes.votes`) turns a request body into `VoteRequest`s; `cast_votes` answers
where each landed, or raises, having stored nothing: `VotesRefused` names every vote and field at
fault (404 when a vote names a submission that does not exist, 422 when a vote breaks a rule of
`leaderboard.votes`), and the store's `VoteChanged` (409) a vote that differs from its voter's
earlier vote on the pair. A batch is filed in one transaction, so it is stored whole or not at all.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from leaderboard.types import Submission
from leaderboard.votes import Verdict, Vote, VoteRefused, check_vote
from service.store import Store, StoredVote

from .errors import Kind


class SubmissionKey(NamedTuple):
    """A submission named by its key rather than its id."""

    question_id: str
    model: str
    scenario: str


Pointer = int | SubmissionKey


@dataclass(frozen=True)
class VoteRequest:
    """One vote as a client sent it: the two sides and the one shown first, by id or by key."""

    voter: str
    a: Pointer
    b: Pointer
    verdict: Verdict
    first: Pointer | None = None


@dataclass(frozen=True)
class Problem:
    """What is wrong with the vote at `index` of the request, and in which field."""

    index: int
    field: str
    message: str


class VotesRefused(Exception):
    """Votes that cannot be filed: `kind` "missing" (a submission named does not exist) or
    "invalid" (a rule); each edge says what that is to its callers (`service.web.errors`)."""

    def __init__(self, kind: Kind, problems: Sequence[Problem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.kind: Kind = kind
        self.problems = list(problems)


def named(pointer: Pointer) -> str:
    """A pointer in words."""
    if isinstance(pointer, SubmissionKey):
        return f"(question_id={pointer.question_id!r}, model={pointer.model!r}, scenario={pointer.scenario!r})"
    return str(pointer)


def _key(sub: Submission) -> SubmissionKey:
    return SubmissionKey(sub.question_id, sub.model, sub.scenario)


def _first(pointer: Pointer | None, a: Submission, b: Submission) -> int | None:
    """The id `first` names: a key is one of the two sides' (else VoteRefused); an id is checked
    with the other rules (`check_vote`)."""
    if not isinstance(pointer, SubmissionKey):
        return pointer
    for side in (a, b):
        if _key(side) == pointer:
            return side.id
    raise VoteRefused("first", f"{named(pointer)} is neither a ({a.id}) nor b ({b.id}): "
                               "first names the one of the two shown first")


def _unblinding(requests: Sequence[VoteRequest]) -> list[Problem]:
    """Every side a blind voter named by its key: each answer of a private joust is named by its
    submission id, because a reply about a vote naming both (such as "neither a (1) nor b (6)")
    would tell which submission holds which model."""
    return [Problem(index, field, f"{named(pointer)}: a voter's key in a private joust names answers by submission "
                                  "id only (the ids the vote page shows), never by model")
            for index, request in enumerate(requests)
            for field, pointer in (("a", request.a), ("b", request.b), ("first", request.first))
            if isinstance(pointer, SubmissionKey)]


def cast_votes(store: Store, requests: Sequence[VoteRequest], *, blind: bool = False) -> list[StoredVote]:
    """File the votes, in order (see the module docstring for what it raises). `blind`: the
    voter may not learn who wrote which answer (a voter's key in a private joust): sides are
    named by id only and no refusal names a model, scenario or question."""
    if blind and (unblinding := _unblinding(requests)):
        raise VotesRefused("invalid", unblinding)
    pointers = [p for r in requests for p in (r.a, r.b)]
    by_id, by_key = store.submissions_named(
        [p for p in pointers if not isinstance(p, SubmissionKey)], [p for p in pointers if isinstance(p, SubmissionKey)]
    )

    def find(pointer: Pointer) -> Submission | None:
        return by_key.get(pointer) if isinstance(pointer, SubmissionKey) else by_id.get(pointer)

    missing: list[Problem] = []
    refused: list[Problem] = []
    votes: list[Vote] = []
    for index, request in enumerate(requests):
        a, b = find(request.a), find(request.b)
        for field, pointer, side in (("a", request.a, a), ("b", request.b, b)):
            if side is None:
                missing.append(Problem(index, field, f"no submission {named(pointer)}"))
        if a is None or b is None:
            continue
        try:
            vote = Vote(request.voter, a, b, request.verdict, _first(request.first, a, b))
            check_vote(vote, blind=blind)
        except VoteRefused as exc:
            refused.append(Problem(index, exc.field, exc.message))
            continue
        votes.append(vote)
    if missing:
        raise VotesRefused("missing", missing)
    if refused:
        raise VotesRefused("invalid", refused)
    return store.add_votes(votes)
