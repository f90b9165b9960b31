"""`anthropic/<model>`: a judge backed by the official Anthropic SDK (Messages API).

(Named `anthropic_judge` so it can never shadow the SDK's own `anthropic` package.)

The SDK retries at most `Settings.sdk_max_retries` times by itself (once by default; never in a
worker, whose `workers.gate` retries through the shared rate limit so that every 429 slows all
workers down), and only for short waits: a middleware turns a
retryable reply whose `retry-after` exceeds `SDK_WAIT_MAX_S` into `TransientJudgeError` at once,
because the SDK would otherwise sleep for whatever the server asks, holding a worker slot.
joust backs off itself, using `retry_after` (capped at `RETRY_AFTER_CAP_S`).

No `temperature` is sent unless asked for: the SDK (1.0+) dropped the keyword, and models newer
than Opus 4.6 answer 400 to any non-default value, which would fail every match. When given,
it travels in `extra_body`.
"""
from __future__ import annotations

from typing import Any

from service.config import Settings
from workers.errors import PermanentJudgeError, TransientJudgeError
from workers.judge import Completion, Message
from workers.providers.chat import (  # noqa: F401  (re-exported: the retry rules live in chat)
    RETRY_AFTER_CAP_S,
    SDK_WAIT_MAX_S,
    ChatJudge,
    is_transient_status,
    retry_after_from,
)


async def _no_long_sdk_waits(request: Any, call_next: Any) -> Any:
    """SDK middleware: refuse to let the SDK sleep long on `retry-after`; joust backs off."""
    response = await call_next(request)
    status = response.status_code
    if is_transient_status(status):
        wait = retry_after_from(response.headers)
        if wait is not None and wait > SDK_WAIT_MAX_S:
            await response.http_response.aclose()
            raise TransientJudgeError(f"anthropic: HTTP {status}, retry after {wait:g}s", wait, status)
    return response


class AnthropicJudge(ChatJudge):
    """A `Judge` calling `model` through one long-lived `AsyncAnthropic` client (see `ChatJudge`
    for the client-per-loop and the concurrency limit)."""

    provider = "anthropic"
    sdk_error = "AnthropicError"

    def __init__(
        self,
        model: str,
        settings: Settings,
        *,
        max_retries: int | None = None,
        temperature: float | None = None,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:  # pragma: no cover - the SDK is a dependency
            raise PermanentJudgeError("the anthropic SDK is not installed") from exc
        if not model:
            raise PermanentJudgeError("anthropic judge needs a model name")
        retries = settings.sdk_max_retries if max_retries is None else max_retries
        super().__init__(model, settings, anthropic, max_retries=retries)
        self._extra_body = {} if temperature is None else {"temperature": temperature}

    def __repr__(self) -> str:
        return f"AnthropicJudge(model={self.model!r})"

    def _new_client(self) -> Any:
        settings = self._settings
        return self._sdk.AsyncAnthropic(
            api_key=settings.anthropic_api_key or "missing",
            base_url=settings.anthropic_base_url,
            max_retries=self._max_retries,
            timeout=settings.judge_timeout_s,
            middleware=[_no_long_sdk_waits],
            http_client=self._sdk.DefaultAsyncHttpxClient(timeout=settings.judge_timeout_s),
        )

    async def _create(self, client: Any, system: str, messages: list[Message]) -> Any:
        return await client.messages.create(
            model=self.model,
            system=system,
            messages=messages,
            max_tokens=self._settings.judge_max_tokens,
            extra_body=self._extra_body or None,
        )

    def _completion(self, response: Any, latency_ms: float) -> Completion:
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

    def _status_detail(self, exc: Any) -> str:
        detail = f"anthropic: HTTP {exc.status_code} {getattr(exc, 'type', None) or ''}".rstrip()
        message = getattr(exc, "api_message", None)
        return f"{detail}: {message}" if message else detail
