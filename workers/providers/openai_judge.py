"""`openai/<model>`: a judge on any OpenAI-compatible Chat Completions server, through the
official `openai` SDK (vLLM, Ollama, llama.cpp's server, OpenAI itself).

(Named `openai_judge` so it can never shadow the SDK's own `openai` package; the SDK is an
optional extra: `pip install 'joust[openai]'`.)

Where the calls go: `Settings.endpoint("openai/<model>")`, i.e. the judge's own entry of
JOUST_JUDGE_ENDPOINTS, else OPENAI_BASE_URL / OPENAI_API_KEY. Both are always passed to the
SDK explicitly, so it never falls back to the environment behind Settings' back; a server that
wants no key gets a placeholder, since the SDK refuses an empty one.

The system prompt travels as a "system" message; the reply budget as `max_tokens`, which every
compatible server accepts (OpenAI's reasoning models want `max_completion_tokens` instead).
The SDK retries at most once, and never sleeps through a long `retry-after`: a response hook
marks such replies `x-should-retry: false`, a header the SDK obeys, so the error surfaces at
once as `TransientJudgeError` with the (capped) wait and joust backs off itself.
"""
from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from service.config import Settings
from workers.errors import JudgeError, PermanentJudgeError, TransientJudgeError
from workers.judge import Completion, JudgeReply, Message, compare_with_reminder
from workers.providers.anthropic_judge import (
    SDK_WAIT_MAX_S,
    is_transient_status,
    retry_after_from,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "no-key"  # sent when none is configured: local servers ignore it, the SDK needs one


async def _no_long_sdk_waits(response: Any) -> None:
    """httpx response hook: tell the SDK not to retry when the server asks for a long wait."""
    if is_transient_status(response.status_code):
        wait = retry_after_from(response.headers)
        if wait is not None and wait > SDK_WAIT_MAX_S:
            response.headers["x-should-retry"] = "false"


class OpenAIJudge:
    """A `Judge` calling `model` through one long-lived `AsyncOpenAI` client.

    At most `settings.judge_concurrency` calls of this instance are in flight at once. The client
    and the limit belong to the event loop they were first used on; used from another loop, the
    judge builds fresh ones for that loop.
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
            import openai
        except ImportError as exc:
            raise PermanentJudgeError("the openai SDK is not installed: pip install 'joust[openai]'") from exc
        if not model:
            raise PermanentJudgeError("openai judge needs a model name")
        self.model = model
        self.spec = f"openai/{model}"
        self.endpoint = settings.endpoint(self.spec)
        self._sdk = openai
        self._settings = settings
        self._max_retries = max_retries
        self._temperature = temperature
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._limit: asyncio.Semaphore | None = None

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url or DEFAULT_BASE_URL

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={self.base_url!r})"

    async def compare(self, question: str, first: str, second: str) -> JudgeReply:
        """Judge `first` (Response A) against `second` (Response B); see `workers.judge.Judge`."""
        return await compare_with_reminder(self._send, question, first, second)

    async def complete(self, system: str, messages: list[Message]) -> Completion:
        """One free-form call with this judge's model (the other criteria sets ask through it)."""
        return await self._send(system, messages)

    async def aclose(self) -> None:
        """Close the HTTP client (call on worker shutdown, from the loop that used it)."""
        client, self._client, self._loop, self._limit = self._client, None, None, None
        if client is not None:
            await client.close()

    def _bind(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._client is None or self._limit is None:
            timeout = self._settings.judge_timeout_s
            self._client = self._sdk.AsyncOpenAI(
                api_key=self.endpoint.api_key or NO_KEY,
                base_url=self.base_url,
                max_retries=self._max_retries,
                timeout=timeout,
                # Our own httpx client (see AnthropicJudge._bind), carrying the retry guard.
                http_client=self._sdk.DefaultAsyncHttpxClient(
                    timeout=timeout, event_hooks={"response": [_no_long_sdk_waits]}
                ),
            )
            self._limit = asyncio.Semaphore(max(1, self._settings.judge_concurrency))
            self._loop = loop
        return self._client, self._limit

    async def _send(self, system: str, messages: list[Message]) -> Completion:
        client, limit = self._bind()
        extra = {} if self._temperature is None else {"temperature": self._temperature}
        async with limit:
            started = time.perf_counter()
            try:
                response = await client.chat.completions.create(
                    model=self.model,
                    messages=[{"role": "system", "content": system}, *messages],
                    max_tokens=self._settings.judge_max_tokens,
                    **extra,
                )
            except JudgeError:
                raise
            except self._sdk.OpenAIError as exc:
                raise self._translate(exc) from exc
            latency_ms = (time.perf_counter() - started) * 1000.0
        choices = getattr(response, "choices", None) or []
        # No choices, or content None (a refusal, a tool call): no verdict; the reminder re-asks.
        text = (choices[0].message.content or "") if choices else ""
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_ms=latency_ms,
        )

    def _translate(self, exc: Exception) -> JudgeError:
        """The joust error for an SDK error: transient when waiting can help, else permanent."""
        sdk = self._sdk
        if isinstance(exc, sdk.APIStatusError):
            status = exc.status_code
            code = getattr(exc, "code", None) or getattr(exc, "type", None)
            detail = f"openai: HTTP {status}" + (f" {code}" if code and str(code) != str(status) else "")
            # The SDK's message is "Error code: 429 - <the server's message or body>".
            message = re.sub(r"^Error code: \d+( - )?", "", str(getattr(exc, "message", "") or ""))
            if message:
                detail = f"{detail}: {message[:300]}"
            if is_transient_status(status):
                return TransientJudgeError(detail, retry_after_from(exc.response.headers))
            return PermanentJudgeError(detail)
        if isinstance(exc, sdk.APITimeoutError):
            return TransientJudgeError(f"openai: timed out after {self._settings.judge_timeout_s:g}s")
        if isinstance(exc, sdk.APIConnectionError):
            return TransientJudgeError(f"openai: connection to {self.base_url} failed: {exc}")
        return PermanentJudgeError(f"openai: {type(exc).__name__}: {exc}")
