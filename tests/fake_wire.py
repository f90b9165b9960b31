"""Wire shapes the fake Anthropic server shares between its live and batch paths: error bodies,
the request log record, the Messages API reply, token estimates and times.

Kept apart from tests.fake_anthropic so that tests.fake_batches can use them without importing
the server (which imports it).
"""
from __future__ import annotations

import json
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fake_policies import Decide

# The `error.type` the real API sends with each status; anything else is an "api_error".
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}  # fmt: skip

MALFORMED_TEXT = "I cannot decide between them."
"""The reply of a "malformed" fault: a 200 whose text holds no verdict."""


@dataclass(frozen=True)
class Failure:
    """An injected error reply: `status` with an Anthropic error body and optional retry-after."""

    status: int
    retry_after: float | None = None
    message: str = "injected failure"

    @classmethod
    def parse(cls, text: str) -> Failure:
        """Read "429:0.1" as Failure(429, retry_after=0.1) and "529" as Failure(529)."""
        status, _, wait = text.partition(":")
        return cls(int(status), float(wait) if wait else None)


@dataclass(frozen=True)
class Received:
    """One Messages API request as the fake saw it, and what it answered.

    `at` and `answered_at` are time.monotonic() readings (arrival, reply sent; for a batch
    request: the batch's creation and its end). `fault` names the random fault drawn for it
    ("429", "529", "500", "timeout", "malformed"; batch: "errored", "invalid", ...), `limited`
    which rate-limit bucket refused it ("requests" or "tokens"), `batch_id` / `custom_id` the
    batch request it was.
    """

    model: str
    system: str
    users: list[str]
    messages: list[dict[str, Any]]
    body: dict[str, Any]
    status: int
    reply: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    at: float = 0.0
    answered_at: float = 0.0
    fault: str | None = None
    limited: str | None = None
    batch_id: str | None = None
    custom_id: str | None = None

    @property
    def delivered(self) -> bool:
        """A 200 the client could read (a "timeout" fault's reply comes after it gave up)."""
        return self.status == 200 and self.fault != "timeout"


@dataclass(frozen=True)
class ReceivedTimes:
    """Arrival times and outcomes of the live requests, for throughput benchmarks."""

    at: list[float]
    answered_at: list[float]
    statuses: list[int]
    delivered: list[bool]

    @classmethod
    def of(cls, records: list[Received]) -> ReceivedTimes:
        live = sorted((r for r in records if r.batch_id is None), key=lambda r: r.at)
        return cls([r.at for r in live], [r.answered_at for r in live], [r.status for r in live],
                   [r.delivered for r in live])  # fmt: skip

    @property
    def span_s(self) -> float:
        """Seconds from the first request's arrival to the last one's."""
        return self.at[-1] - self.at[0] if self.at else 0.0

    @property
    def replies(self) -> int:
        return sum(self.delivered)

    @property
    def replies_per_s(self) -> float | None:
        """Successful replies per second between the first and the last request (None: no span)."""
        return self.replies / self.span_s if self.span_s > 0 else None

    @property
    def rate_limited_share(self) -> float | None:
        """The share of requests answered 429 (None before any request)."""
        return self.statuses.count(429) / len(self.statuses) if self.statuses else None


def text_of(content: Any) -> str:
    """The text of a message `content` (a string or a list of content blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def error_body(status: int, message: str) -> dict[str, Any]:
    """The Anthropic error body (`ErrorResponse`) for `status`."""
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


def input_tokens_of(request: dict[str, Any]) -> int:
    """The fake's input-token estimate: prompt characters // 4, at least 1."""
    messages = request.get("messages") or []
    chars = len(text_of(request.get("system", ""))) + sum(
        len(text_of(m.get("content"))) for m in messages if isinstance(m, dict)
    )
    return max(1, chars // 4)


@dataclass(frozen=True)
class Cost:
    """What a request reserves in the tokens-per-minute bucket when it arrives."""

    input_tokens: int
    max_tokens: int

    @classmethod
    def of(cls, body: bytes) -> Cost:
        """Read a Messages (or Chat Completions) body; an unreadable one costs one token."""
        try:
            request = json.loads(body)
            if not isinstance(request, dict):
                return cls(1, 0)
            most = request.get("max_tokens") or request.get("max_completion_tokens") or 0
            return cls(input_tokens_of(request), max(0, int(most)))
        except (ValueError, TypeError):
            return cls(1, 0)


def rfc3339(wall: float) -> str:
    """A time.time() reading as the API writes times: 2024-08-20T18:37:24.100435Z."""
    return datetime.fromtimestamp(wall, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def answer_message(
    body: bytes, key: str | None, api_key: str | None, failure: Failure | None, canned: str | None, decide: Decide
) -> tuple[int, dict[str, Any], dict[str, str], Received]:
    """(status, JSON body, extra headers, log record) for one Messages API request: a 401 for a
    wrong key, else `failure`, else a message holding `canned` or what `decide` answers."""
    try:
        request = json.loads(body)
        model, messages = str(request["model"]), list(request["messages"])
    except (ValueError, KeyError, TypeError):
        return 400, error_body(400, "not a Messages API request"), {}, Received("", "", [], [], {}, 400, None)
    system = text_of(request.get("system", ""))
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]

    def record(status: int, text: str | None = None, tokens: tuple[int, int] = (0, 0)) -> Received:
        return Received(model, system, users, messages, request, status, text, *tokens)

    if api_key is not None and key != api_key:
        return 401, error_body(401, "invalid x-api-key"), {}, record(401)
    if failure is not None:
        wait = {} if failure.retry_after is None else {"retry-after": f"{failure.retry_after:g}"}
        return failure.status, error_body(failure.status, failure.message), wait, record(failure.status)
    try:
        text = canned if canned is not None else decide(system, users)
    except Exception:  # noqa: BLE001  (a broken policy is a test bug: say so loudly)
        traceback.print_exc()
        return 500, error_body(500, "the fake's policy raised"), {}, record(500)
    tokens = (input_tokens_of(request), max(1, len(text) // 4))
    message = {
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
    }
    return 200, message, {}, record(200, text, tokens)


def api_key_of(headers: Any) -> str | None:
    """The key a client sent: `x-api-key`, or a Bearer token (the SDK sends its key that way
    since 2.x; the real API takes either)."""
    key = headers.get("x-api-key")
    if key is None:
        auth = headers.get("authorization") or ""
        key = auth[7:].strip() if auth.lower().startswith("bearer ") else None
    return key
