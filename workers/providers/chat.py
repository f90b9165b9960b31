"""What the SDK-backed judges (`anthropic/…`, `openai/…`) share: one long-lived client and one
concurrency limit per event loop, the timed call, the SDK-error mapping and the `retry-after`
reading.

A subclass sets `provider` (the prefix of its error messages) and `_sdk` (the SDK module, whose
base error class is `sdk_error`), and supplies `_new_client` (a client for the running loop),
`_create` (one request), `_completion` (the reply's text and usage) and `_status_detail` (how an
HTTP error reads); `_connection_detail` may say more about where the call went.
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


class ChatJudge:
    """A `Judge` calling `model` through one long-lived SDK client.

    At most `settings.judge_concurrency` calls of this instance are in flight at once. The client
    and the limit belong to the event loop they were first used on; used from another loop (a
    test calling `asyncio.run` twice), the judge builds fresh ones for that loop.
    """

    provider = ""
    sdk_error = "Exception"  # the name of the SDK's base error class

    def __init__(self, model: str, settings: Settings, sdk: Any, *, max_retries: int = 1) -> None:
        self.model = model
        self._sdk = sdk
        self._settings = settings
        self._max_retries = max_retries
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._limit: asyncio.Semaphore | None = None

    async def compare(self, question: str, first: str, second: str) -> JudgeReply:
        """Judge `first` (Response A) against `second` (Response B); see `workers.judge.Judge`."""
        return await compare_with_reminder(self._send, question, first, second)

    async def complete(self, system: str, messages: list[Message]) -> Completion:
        """One free-form call with this judge's model (the tie analysis and the other criteria
        sets ask through it)."""
        return await self._send(system, messages)

    async def aclose(self) -> None:
        """Close the HTTP client (call on worker shutdown, from the loop that used it)."""
        client, self._client, self._loop, self._limit = self._client, None, None, None
        if client is not None:
            await client.close()

    def _new_client(self) -> Any:
        raise NotImplementedError

    async def _create(self, client: Any, system: str, messages: list[Message]) -> Any:
        raise NotImplementedError

    def _completion(self, response: Any, latency_ms: float) -> Completion:
        raise NotImplementedError

    def _status_detail(self, exc: Any) -> str:
        raise NotImplementedError

    def _connection_detail(self, exc: Exception) -> str:
        return f"connection failed: {exc}"

    def _bind(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._client is None or self._limit is None:
            # Our own httpx client, not the SDK's default wrapper: that one closes itself from
            # `__del__` on whatever loop is running then, which fails after a loop change.
            self._client = self._new_client()
            self._limit = asyncio.Semaphore(self._settings.limits(f"{self.provider}/{self.model}").concurrency)
            self._loop = loop
        return self._client, self._limit

    async def _send(self, system: str, messages: list[Message]) -> Completion:
        client, limit = self._bind()
        async with limit:
            started = time.perf_counter()
            try:
                response = await self._create(client, system, messages)
            except JudgeError:
                raise
            except getattr(self._sdk, self.sdk_error) as exc:
                raise self._translate(exc) from exc
            latency_ms = (time.perf_counter() - started) * 1000.0
        return self._completion(response, latency_ms)

    def _translate(self, exc: Exception) -> JudgeError:
        """The joust error for an SDK error: transient when waiting can help, else permanent."""
        sdk = self._sdk
        if isinstance(exc, sdk.APIStatusError):
            detail = self._status_detail(exc)
            if is_transient_status(exc.status_code):
                return TransientJudgeError(detail, retry_after_from(exc.response.headers), exc.status_code)
            return PermanentJudgeError(detail)
        if isinstance(exc, sdk.APITimeoutError):
            return TransientJudgeError(f"{self.provider}: timed out after {self._settings.judge_timeout_s:g}s")
        if isinstance(exc, sdk.APIConnectionError):
            return TransientJudgeError(f"{self.provider}: {self._connection_detail(exc)}")
        return PermanentJudgeError(f"{self.provider}: {type(exc).__name__}: {exc}")
