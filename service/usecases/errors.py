"""The use cases' one error: a request a use case cannot answer, in words, with its kind.

A use case knows nothing of HTTP; each edge says what a kind means to its callers: the API answers
it with a status (`service.web.errors.from_use_case`), the CLI or a bench can print the message.
What a use case lets through is not this error: the store's `NotFound` (an unknown id) and
`leaderboard.judges.UnknownJudge` (a judge without verdicts on the scope) keep their own types.
"""
from __future__ import annotations

from typing import Literal

# invalid: the request contradicts itself or what it names (no data would make it answerable);
# unavailable: the data at hand cannot give what was asked (other data could).
Kind = Literal["invalid", "unavailable"]


class UseCaseError(Exception):
    """A request a use case cannot answer: `message` says why, `kind` which way."""

    def __init__(self, kind: Kind, message: str) -> None:
        super().__init__(message)
        self.kind: Kind = kind
        self.message = message
