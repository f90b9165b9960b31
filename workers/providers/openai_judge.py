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

import re
from typing import Any

from service.config import Settings
from workers.errors import PermanentJudgeError
from workers.judge import Completion, Message
from workers.providers.chat import (
    SDK_WAIT_MAX_S,
    ChatJudge,
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


class OpenAIJudge(ChatJudge):
    """A `Judge` calling `model` through one long-lived `AsyncOpenAI` client (see `ChatJudge`
    for the client-per-loop and the concurrency limit)."""

    provider = "openai"
    sdk_error = "OpenAIError"

    def __init__(
        self,
        model: str,
        settings: Settings,
        *,
        max_retries: int | None = None,
        temperature: float | None = None,
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise PermanentJudgeError("the openai SDK is not installed: pip install 'joust[openai]'") from exc
        if not model:
            raise PermanentJudgeError("openai judge needs a model name")
        retries = settings.sdk_max_retries if max_retries is None else max_retries
        super().__init__(model, settings, openai, max_retries=retries)
        self.spec = f"openai/{model}"
        self.endpoint = settings.endpoint(self.spec)
        self._temperature = temperature

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url or DEFAULT_BASE_URL

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={self.base_url!r})"

    def _new_client(self) -> Any:
        timeout = self._settings.judge_timeout_s
        return self._sdk.AsyncOpenAI(
            api_key=self.endpoint.api_key or NO_KEY,
            base_url=self.base_url,
            max_retries=self._max_retries,
            timeout=timeout,
            # Our own httpx client (see ChatJudge._bind), carrying the retry guard.
            http_client=self._sdk.DefaultAsyncHttpxClient(
                timeout=timeout, event_hooks={"response": [_no_long_sdk_waits]}
            ),
        )

    async def _create(self, client: Any, system: str, messages: list[Message]) -> Any:
        extra = {} if self._temperature is None else {"temperature": self._temperature}
        return await client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, *messages],
            max_tokens=self._settings.judge_max_tokens,
            **extra,
        )

    def _completion(self, response: Any, latency_ms: float) -> Completion:
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

    def _status_detail(self, exc: Any) -> str:
        status = exc.status_code
        code = getattr(exc, "code", None) or getattr(exc, "type", None)
        detail = f"openai: HTTP {status}" + (f" {code}" if code and str(code) != str(status) else "")
        # The SDK's message is "Error code: 429 - <the server's message or body>".
        message = re.sub(r"^Error code: \d+( - )?", "", str(getattr(exc, "message", "") or ""))
        return f"{detail}: {message[:300]}" if message else detail

    def _connection_detail(self, exc: Exception) -> str:
        return f"connection to {self.base_url} failed: {exc}"
