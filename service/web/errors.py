"""The web layer's one error: a client error with its HTTP status, which the app answers as
`{"error": message, **extra}` (`service.web.app`). The routes, the pages' voter and the keys'
checks (`service.web.auth`) raise it; kept apart from the routes so that modules beside them
need not import a route module for it."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
