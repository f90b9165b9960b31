"""What every route shares: the API's error type, readable validation messages, the JSON body.

Error convention (one shape for every 4xx): `{"error": "<what is wrong>", ...}`, sometimes with
`details`, a list of `{"path", "message"}` (validation) — see `service.app` for the handlers.

Write routes read their body through `json_body` (an async dependency declared after the auth
dependency) and validate it themselves with `validate`, so that an unauthenticated request is
refused before its body is looked at and every message names the field path the client sent,
e.g. "submissions[2].model: field required".
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from fastapi import Request
from pydantic import TypeAdapter, ValidationError
from redis import Redis

from service.config import Settings
from service.queue import JobQueue
from service.store import Store

T = TypeVar("T")
MAX_LISTED_ERRORS = 5


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


# ---- resources owned by the app's lifespan --------------------------------------------------


def get_settings(request: Request) -> Settings:
    """The app's settings (set by create_app)."""
    return request.app.state.settings


def get_store(request: Request) -> Store:
    """The store opened by the lifespan."""
    return request.app.state.store


def get_queue(request: Request) -> JobQueue:
    """The job queue opened by the lifespan."""
    return request.app.state.queue


def get_redis(request: Request) -> Redis:
    """The Redis client opened by the lifespan."""
    return request.app.state.redis


# ---- bodies and validation messages ---------------------------------------------------------


async def json_body(request: Request) -> Any:
    """The request body parsed as JSON; 400 naming the problem when it is empty or malformed."""
    raw = await request.body()
    if not raw.strip():
        raise ApiError(400, "the request body is empty: send a JSON document")
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise ApiError(400, "malformed JSON: the body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ApiError(
            400, f"malformed JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None


def field_path(loc: Sequence[str | int], root: str = "") -> str:
    """A pydantic location as a client would write it: `submissions[2].metadata.tags[0]`."""
    path = root
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _short(value: Any) -> str:
    """A scalar as JSON, cut short: enough to recognise what was sent."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_error(error: Mapping[str, Any]) -> str:
    """One pydantic error as a sentence without the pydantic jargon."""
    kind = error.get("type", "")
    if kind == "missing":
        return "field required"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in ("value_error", "assertion_error") and "error" in error.get("ctx", {}):
        return str(error["ctx"]["error"])
    message = str(error.get("msg", "invalid value"))
    if "input" in error and not isinstance(error["input"], (dict, list)):
        message += f" (got {_short(error['input'])})"
    return message


def describe_errors(errors: Sequence[Mapping[str, Any]], root: str = "") -> tuple[str, list[dict]]:
    """A one-line message listing the first few problems, and all of them as details."""
    details = []
    for error in errors:
        path = field_path(error.get("loc", ()), root)
        details.append({"path": path, "message": describe_error(error)})
    parts = [f"{d['path']}: {d['message']}" if d["path"] else d["message"] for d in details[:MAX_LISTED_ERRORS]]
    if len(details) > MAX_LISTED_ERRORS:
        parts.append(f"and {len(details) - MAX_LISTED_ERRORS} more")
    return "; ".join(parts), details


def validate(adapter: TypeAdapter[T], data: Any, root: str = "") -> T:
    """Validate parsed JSON; 422 with every problem named by its path."""
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        message, details = describe_errors(exc.errors(include_url=False), root)
        raise ApiError(422, message, details=details) from None
