"""The client's exceptions: one per kind of answer, each carrying the API's own words.

    JoustError             any failure of a call; `status`, `message`, `details`
    ├── AuthError          401 no key, 403 a wrong key
    ├── NotFound           404 an unknown id (or a route this server does not have)
    ├── Conflict           409 e.g. different content under a stored submission's key
    ├── TooLarge           413 a body over JOUST_MAX_BODY_BYTES, a batch over JOUST_MAX_BATCH
    ├── Invalid            400 malformed JSON, 422 a field missing, of the wrong type or unknown
    ├── ServerError        5xx the server failed or a part of it (Redis, the database) is down
    ├── Unreachable        no answer at all (refused, timed out): `status` is None
    └── WaitTimeout        `Client.wait` gave up before the run finished; `.tournament` as last seen

The API answers every error as `{"error": "<what is wrong>", "details": [{"path", "message"}]}`;
`message` is that `error` unchanged and `details` that list, so what the server said reaches the
caller without a lookup table on this side.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .types import Tournament

__all__ = [
    "AuthError", "Conflict", "Invalid", "JoustError", "NotFound", "ServerError", "TooLarge", "Unreachable",
    "WaitTimeout", "error_for",
]  # fmt: skip


class JoustError(Exception):
    """A call that did not succeed: the HTTP `status` (None when nothing answered), the API's
    `message` and its `details` (each `{"path", "message"}`; empty when it gave none). `rows`:
    for an error of `Client.submit`, the rows of the batch refused (the API's `submissions[i]`
    is row `rows[i]`); None otherwise."""

    def __init__(self, status: int | None, message: str, details: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(f"{status}: {message}" if status is not None else message)
        self.status = status
        self.message = message
        self.details: list[dict[str, Any]] = [dict(d) for d in details]
        self.rows: range | None = None


class AuthError(JoustError):
    """401 (no key sent) or 403 (a wrong key): writes need the server's API key."""


class NotFound(JoustError):
    """404: no such tournament, judgement or submission, or no such route on this server."""


class Conflict(JoustError):
    """409: the request contradicts what is stored (nothing of the refused request was stored)."""


class TooLarge(JoustError):
    """413: a body or a batch over the server's limits."""


class Invalid(JoustError):
    """400 or 422: the request is malformed or a field is wrong; `details` names each field."""


class ServerError(JoustError):
    """5xx: the server failed, or cannot reach its database or Redis."""


class Unreachable(JoustError):
    """No HTTP answer: the connection was refused, dropped or timed out (`status` is None)."""


class WaitTimeout(JoustError, TimeoutError):
    """`Client.wait` ran out of time; the run goes on, `tournament` is how it was last seen."""

    def __init__(self, message: str, tournament: Tournament) -> None:
        super().__init__(None, message)
        self.tournament = tournament


_BY_STATUS: dict[int, type[JoustError]] = {
    400: Invalid, 401: AuthError, 403: AuthError, 404: NotFound, 409: Conflict, 413: TooLarge, 422: Invalid,
}


def error_for(status: int, body: Any, fallback: str) -> JoustError:
    """The exception for an error answer: its class by status, its words from the JSON body
    (`fallback`, e.g. the reason phrase or the text, when the body is not the API's shape)."""
    message, details = fallback, []
    if isinstance(body, Mapping) and isinstance(body.get("error"), str):
        message = body["error"]
        raw = body.get("details")
        if isinstance(raw, list):
            details = [d for d in raw if isinstance(d, Mapping)]
    kind = _BY_STATUS.get(status, ServerError if status >= 500 else JoustError)
    return kind(status, message, details)
