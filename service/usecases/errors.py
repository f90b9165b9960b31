"""The use cases' one error: a request a use case cannot answer, in words, with its kind.

A use case knows nothing of HTTP; each edge says what a kind means to its callers: the API answers
it with a status (`service.web.errors.from_use_case`), the CLI or a bench can print the message.
A refusal of one field of a request (`refuse`) also names the field (`FieldProblem`), so an edge
can point at it as it points at a field that failed validation.
What a use case lets through is not this error: the store's `NotFound` (an unknown id) and
`leaderboard.judges.UnknownJudge` (a judge without verdicts on the scope) keep their own types.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

# invalid: the request contradicts itself or what it names (no data would make it answerable);
# unavailable: the data at hand cannot give what was asked (other data could);
# conflict: what the request names is not in a state to do it (a run still active, nothing failed);
# missing: something the request names does not exist (a submission a vote points at).
Kind = Literal["invalid", "unavailable", "conflict", "missing"]


@dataclass(frozen=True)
class FieldProblem:
    """One field of a request that a use case refuses, and why: an edge can point at the field."""

    path: str
    message: str


class UseCaseError(Exception):
    """A request a use case cannot answer: `message` says why, `kind` which way, `problems` which
    fields (none when the request as a whole is at fault)."""

    def __init__(self, kind: Kind, message: str, *, problems: Sequence[FieldProblem] = ()) -> None:
        super().__init__(message)
        self.kind: Kind = kind
        self.message = message
        self.problems: tuple[FieldProblem, ...] = tuple(problems)


def refuse(field: str, message: str) -> UseCaseError:
    """An invalid request because of one field: the message names the field, the problem too."""
    return UseCaseError("invalid", f"{field}: {message}", problems=(FieldProblem(field, message),))
