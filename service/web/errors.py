"""The web layer's one error: a client error with its HTTP status, which the app answers as
`{"error": message, **extra}` (`service.web.app`). The routes, the pages' voter and the keys'
checks (`service.web.auth`) raise it; kept apart from the routes so that modules beside them
need not import a route module for it. A use case's error (`service.usecases.errors`) is
answered as the ApiError `from_use_case` maps it to (`service.web.app`'s handler)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.usecases.errors import Kind, UseCaseError

# What each kind of use-case error is over HTTP: invalid and unavailable are the client's request,
# well-formed but not answerable (the request itself, or the data it asks about); a conflict is
# the state of what it names, which may change.
STATUS_OF_KIND: dict[Kind, int] = {"invalid": 422, "unavailable": 422, "conflict": 409, "missing": 404}


class ApiError(Exception):
    """A client error with its status and message; answered as `{"error": message, **extra}`."""

    def __init__(
        self, status: int, message: str, *, headers: Mapping[str, str] | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})
        self.extra = extra


def from_use_case(exc: UseCaseError) -> ApiError:
    """A use case's error as the API answers it: the status of its kind, its message, and the
    fields it refuses as `details` (`[{"path", "message"}]`, as a field that failed validation)."""
    if not exc.problems:
        return ApiError(STATUS_OF_KIND[exc.kind], exc.message)
    details = [{"path": problem.path, "message": problem.message} for problem in exc.problems]
    return ApiError(STATUS_OF_KIND[exc.kind], exc.message, details=details)
