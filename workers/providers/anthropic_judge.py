"""`anthropic/<model>`: a judge backed by the official Anthropic SDK (Messages API).

(Named `anthropic_judge` so it can never shadow the SDK's own `anthropic` package.)

The SDK retries at most once by itself, and only for short waits: a middleware turns a
retryable reply whose `retry-after` exceeds `SDK_WAIT_MAX_S` into `TransientJudgeError` at once,
because the SDK would otherwise sleep for whatever the server asks, holding a worker slot.
joust backs off itself, using `retry_after` (capped at `RETRY_AFTER_CAP_S`).

No `temperature` is sent unless asked for: the SDK (1.0+) dropped the keyword, and models newer
than Opus 4.6 answer 400 to any non-default value, which would fail every match. When given,
it travels in `extra_body`.
"""
from __future__ import annotations

import asyncio
import email.utils
import math
import time
from collections.abc import Mapping
from typing import Any

from service.config import Settings
from workers.errors import JudgeError, PermanentJudgeError, TransientJudgeError
from workers.judge import Completion, JudgeReply, Message, compare_with_reminder

RETRY_AFTER_CAP_S = 300.0
SDK_WAIT_MAX_S = 5.0
# 408 request timeout, 409 lock timeout, 429 rate limited, 5xx server errors and 529 overloaded.
_RETRYABLE = frozenset({408, 409, 429})


def is_transient_status(status: int) -> bool:
    """Whether an HTTP status means "try again later" rather than "this request is wrong"."""
    return status in _RETRYABLE or status >= 500


def retry_after_from(headers: Mapping[str, str]) -> float | None:
    """The provider's wait hint in seconds (`retry-after-ms`, `retry-after` seconds or date),
    clamped to [0, RETRY_AFTER_CAP_S]; None when absent or unreadable."""
    seconds: float | None = None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
            break
        except ValueError:
            parsed = email.utils.parsedate_tz(value) if scale == 1.0 else None
            if parsed is not None:
                seconds = email.utils.mktime_tz(parsed) - time.time()
                break
    if seconds is None or math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_CAP_S)


async def _no_long_sdk_waits(request: Any, call_next: Any) -> Any:
    """SDK middleware: refuse to let the SDK sleep long on `retry-after`; joust backs off."""
    response = await call_next(request)
    status = response.status_code
    if is_transient_status(status):
        wait = retry_after_from(response.headers)
        if wait is not None and wait > SDK_WAIT_MAX_S:
            await response.http_response.aclose()
            raise TransientJudgeError(f"anthropic: HTTP {status}, retry after {wait:g}s", wait)
    return response


class AnthropicJudge:
    """A `Judge` calling `model` through one long-lived `AsyncAnthropic` client.

    At most `settings.judge_concurrency` calls of this instance are in flight at once. The client
    and the limit belong to the event loop they were first used on; used from another loop (a
    test calling `asyncio.run` twice), the judge builds fresh ones for that loop.
    """

    def __init__(
        self,
        model: str,
        settings: Settings,
        *,
        max_retries: int = 1,
        temperature: float | None = None,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:  # pragma: no cover - the SDK is a dependency
            raise PermanentJudgeError("the anthropic SDK is not installed") from exc
        if not model:
            raise PermanentJudgeError("anthropic judge needs a model name")
        self.model = model
        self._sdk = anthropic
        self._settings = settings
        self._max_retries = max_retries
        self._extra_body = {} if temperature is None else {"temperature": temperature}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._limit: asyncio.Semaphore | None = None

    def __repr__(self) -> str:
        return f"AnthropicJudge(model={self.model!r})"

    async def compare(self, question: str, first: str, second: str) -> JudgeReply:
        """Judge `first` (Response A) against `second` (Response B); see `workers.judge.Judge`."""
        return await compare_with_reminder(self._send, question, first, second)

    async def complete(self, system: str, messages: list[Message]) -> Completion:
        """One free-form call with this judge's model (the tie analysis asks through it)."""
        return await self._send(system, messages)

    async def aclose(self) -> None:
        """Close the HTTP client (call on worker shutdown, from the loop that used it)."""
        client, self._client, self._loop, self._limit = self._client, None, None, None
        if client is not None:
            await client.close()

    def _bind(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._client is None or self._limit is None:
            settings = self._settings
            # Our own httpx client, not the SDK's default wrapper: that one closes itself from
            # `__del__` on whatever loop is running then, which fails after a loop change.
            self._client = self._sdk.AsyncAnthropic(
                api_key=settings.anthropic_api_key or "missing",
                base_url=settings.anthropic_base_url,
                max_retries=self._max_retries,
                timeout=settings.judge_timeout_s,
                middleware=[_no_long_sdk_waits],
                http_client=self._sdk.DefaultAsyncHttpxClient(timeout=settings.judge_timeout_s),
            )
            self._limit = asyncio.Semaphore(max(1, settings.judge_concurrency))
            self._loop = loop
        return self._client, self._limit

    async def _send(self, system: str, messages: list[Message]) -> Completion:
        client, limit = self._bind()
        async with limit:
            started = time.perf_counter()
            try:
                response = await client.messages.create(
                    model=self.model,
                    system=system,
                    messages=messages,
                    max_tokens=self._settings.judge_max_tokens,
                    extra_body=self._extra_body or None,
                )
            except JudgeError:
                raise
            except self._sdk.AnthropicError as exc:
                raise self._translate(exc) from exc
            latency_ms = (time.perf_counter() - started) * 1000.0
        text = "".join(
            block.text for block in response.content if getattr(block, "type", None) == "text"
        )
        usage = response.usage
        return Completion(
            text=text,
            input_tokens=int(usage.input_tokens or 0),
            output_tokens=int(usage.output_tokens or 0),
            latency_ms=latency_ms,
        )

    def _translate(self, exc: Exception) -> JudgeError:
        """The joust error for an SDK error: transient when waiting can help, else permanent."""
        sdk = self._sdk
        if isinstance(exc, sdk.APIStatusError):
            status = exc.status_code
            detail = f"anthropic: HTTP {status} {getattr(exc, 'type', None) or ''}".rstrip()
            message = getattr(exc, "api_message", None)
            if message:
                detail = f"{detail}: {message}"
            if is_transient_status(status):
                return TransientJudgeError(detail, retry_after_from(exc.response.headers))
            return PermanentJudgeError(detail)
        if isinstance(exc, sdk.APITimeoutError):
            return TransientJudgeError(f"anthropic: timed out after {self._settings.judge_timeout_s:g}s")
        if isinstance(exc, sdk.APIConnectionError):
            return TransientJudgeError(f"anthropic: connection failed: {exc}")
        return PermanentJudgeError(f"anthropic: {type(exc).__name__}: {exc}")
