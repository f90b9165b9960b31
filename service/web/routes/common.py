"""What every route shares: the API's error type, readable validation messages, the JSON body.

Error convention (one shape for every 4xx): `{"error": "<what is wrong>", ...}`, sometimes with
`details`, a list of `{"path", "message"}` (validation) — see `service.web.app` for the handlers.

Write routes read their body through `json_body` (an async dependency declared after the auth
dependency) and validate it themselves with `validate`, so that an unauthenticated request is
refused before its body is looked at and every message names the field path the client sent,
e.g. "submissions[2].model: field required".
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from fastapi import Path, Query, Request
from pydantic import StringConstraints, TypeAdapter, ValidationError
from redis import Redis

from service.config import Settings
from service.store import Store
from service.store.queue import JobQueue
from service.web.api_models import KEY_MAX, unicode_problem
from service.web.api_responses import ErrorOut
from service.web.errors import ApiError as ApiError  # re-exported: the routes take it from here
from service.web.state import state_of

T = TypeVar("T")
MAX_LISTED_ERRORS = 5

# ---- parameters shared by the routes ---------------------------------------------------------

# Ids are the store's `integer` columns, 32-bit on PostgreSQL; offsets go to SQL's OFFSET, 64-bit on
# both backends. Larger values are refused (422) by the schema instead of failing in the driver.
ID_MAX = 2**31 - 1
OFFSET_MAX = 2**63 - 1
# A page of a list route (routes.pagination) holds at most this many rows.
LIMIT_MAX = 10_000
# A free-text filter matches a stored key (at most KEY_MAX characters, never a NUL character).
NO_NUL = "^[^\\x00]*$"
FilterText = Annotated[str, StringConstraints(max_length=KEY_MAX, pattern=NO_NUL)]
Limit = Annotated[int, Query(ge=1, le=LIMIT_MAX, description="at most this many rows (the page's size)")]
Offset = Annotated[int, Query(ge=0, le=OFFSET_MAX, description="skip this many rows")]
TournamentFilter = Annotated[
    int | None, Query(ge=1, le=ID_MAX, description="only this tournament and its scheduled runs")
]


def id_path(what: str) -> Any:
    """A path parameter holding the id of a `what`: 1 to ID_MAX."""
    return Path(ge=1, le=ID_MAX, description=f"the {what}'s id")


def request_body(schema: dict[str, Any]) -> dict[str, Any]:
    """`openapi_extra` declaring the JSON body a route reads itself (through `json_body`)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON schema with its `$defs` written in where they are referred to: pydantic's
    `#/$defs/...` references mean nothing once the schema sits inside the OpenAPI document, and a
    fuzzer (or a client generator) cannot follow them. For models that do not refer to themselves."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(schema)


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for error statuses, each answered `{"error": ...}`."""
    return {code: {"model": ErrorOut} for code in codes}


# ---- resources owned by the app's lifespan --------------------------------------------------


def get_settings(request: Request) -> Settings:
    """The app's settings (given to create_app)."""
    return state_of(request).settings


def get_store(request: Request) -> Store:
    """The store opened by the lifespan."""
    return state_of(request).store


def get_queue(request: Request) -> JobQueue:
    """The job queue opened by the lifespan."""
    return state_of(request).queue


def get_redis(request: Request) -> Redis:
    """The Redis client opened by the lifespan."""
    return state_of(request).redis


# ---- bodies and validation messages ---------------------------------------------------------


class _NotJson(ValueError):
    """A token Python's parser takes but JSON has not: NaN, Infinity, a number out of range."""


def _no_constant(token: str) -> Any:
    raise _NotJson(f"{token} is not a JSON value")


def _finite(token: str) -> float:
    number = float(token)
    if number in (float("inf"), float("-inf")):
        raise _NotJson(f"the number {token[:40]} is out of range")
    return number


async def json_body(request: Request) -> Any:
    """The request body parsed as JSON (RFC 8259: no NaN or Infinity); 400 naming the problem
    when it is empty, malformed, or nested too deeply to read."""
    raw = await request.body()
    if not raw.strip():
        raise ApiError(400, "the request body is empty: send a JSON document")
    try:
        return json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except UnicodeDecodeError:
        raise ApiError(400, "malformed JSON: the body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ApiError(
            400, f"malformed JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise ApiError(400, "malformed JSON: nested too deeply to read") from None
    except ValueError as exc:  # _NotJson, or an integer with more digits than Python converts
        raise ApiError(400, f"malformed JSON: {exc}") from None


def field_path(loc: Sequence[str | int], root: str = "") -> str:
    """A pydantic location as a client would write it: `submissions[2].metadata.tags[0]`."""
    path = root
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            name = printable(str(part))
            path += f".{name}" if path else name
    return path


def printable(text: str) -> str:
    """`text` with any lone surrogate written as its escape, so an error message can quote it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


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
    ctx = error.get("ctx") or {}
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    if kind == "string_unicode" and isinstance(error.get("input"), str):  # checked before max_length
        return unicode_problem(error["input"]) or "text must be valid Unicode"
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == NO_NUL:
        return "must not contain a NUL character (U+0000)"
    if kind == "enum" and "expected" in ctx:
        return f"{_short(error.get('input'))} is not one of {ctx['expected']}"
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


def validate(adapter: TypeAdapter[T], data: Any, root: str = "",
             where: Callable[[tuple[Any, ...]], tuple[Any, ...]] = tuple) -> T:
    """Validate parsed JSON; 422 with every problem named by its path (`where` rewrites each
    problem's location first: a union's tags left out, say)."""
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        errors = [{**e, "loc": where(e["loc"])} for e in exc.errors(include_url=False)]
        message, details = describe_errors(errors, root)
        raise ApiError(422, message, details=details) from None


def parse_batch(body: Any, one: TypeAdapter[T], many: TypeAdapter[list[T]], *, what: str, max_batch: int,
                root: str, where: Callable[[tuple[Any, ...]], tuple[Any, ...]] = tuple) -> tuple[list[T], str]:
    """A body of one `what` object or a non-empty array of at most `max_batch` of them, each
    validated; and the root of its problems' paths ("" for one object, `root` for an array)."""
    if isinstance(body, dict):
        return [validate(one, body, "", where)], ""
    if isinstance(body, list):
        if not body:
            raise ApiError(422, f"the array is empty: send at least one {what}")
        if len(body) > max_batch:
            raise ApiError(413, f"a batch holds at most {max_batch} {what}s, this one has {len(body)}: split it")
        return validate(many, body, root, where), root
    raise ApiError(422, f"the body must be a {what} object or an array of {what} objects")
