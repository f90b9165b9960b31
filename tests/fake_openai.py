"""A fake OpenAI-compatible Chat Completions server on loopback, for the real `openai` SDK.

It is `tests.fake_anthropic.FakeAnthropic` speaking another dialect: the same queue of injected
failures, canned replies, `decide(system, user_turns)` policies from tests.fake_policies,
latency, counters and `/_fake/*` control routes; only the wire format differs:

    POST {url}/chat/completions     url = http://127.0.0.1:PORT/v1 (what OPENAI_BASE_URL holds)
    Authorization: Bearer <key>     checked against `api_key` when set (else 401)

Error bodies come in the dialects that OpenAI-compatible servers send (`error_style`):
"openai" (OpenAI, Ollama: {"error": {"message", "type", "param", "code"}}), "vllm" ({"object":
"error", "message", "type", "code": <status>}), "llamacpp" ({"error": {"code": <status>,
"message", "type"}}) and "text" (a plain-text body, as a proxy in front of a server sends).

    with FakeOpenAI(prefer(["model-x", "model-y"])) as fake:
        settings = Settings(openai_base_url=fake.url, openai_api_key="test")
"""
from __future__ import annotations

import json
import time
import traceback
from typing import Any
from urllib.parse import urlsplit

from tests.fake_anthropic import Failure, FakeAnthropic, Received, _Handler, _text
from tests.fake_policies import Decide, always, malformed, prefer, verdict_json

__all__ = ["Failure", "FakeOpenAI", "Received", "always", "malformed", "prefer", "verdict_json"]

ERROR_STYLES = ("openai", "vllm", "llamacpp", "text")
# (type, code) that OpenAI sends with each status.
OPENAI_ERRORS = {400: ("invalid_request_error", None), 401: ("invalid_request_error", "invalid_api_key"),
                 403: ("permission_error", None), 404: ("invalid_request_error", "model_not_found"),
                 429: ("requests", "rate_limit_exceeded"), 500: ("server_error", None),
                 503: ("server_error", None)}  # fmt: skip
_TEXT = "_text_body"  # a payload key the handler sends as a plain-text body


class FakeOpenAI(FakeAnthropic):
    """A threaded HTTP server speaking enough of Chat Completions for joust's judges."""

    def __init__(
        self,
        decide: Decide | None = None,
        *,
        latency_s: float = 0.0,
        api_key: str | None = None,
        error_style: str = "openai",
        send_usage: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(decide, latency_s=latency_s, api_key=api_key, host=host, port=port)
        if error_style not in ERROR_STYLES:
            raise ValueError(f"error_style must be one of {ERROR_STYLES}")
        self.error_style = error_style
        self.send_usage = send_usage  # some servers leave `usage` out
        self._server.RequestHandlerClass = _ChatHandler

    @property
    def root(self) -> str:
        """The server's own address (the `/_fake/*` routes live here)."""
        return super().url

    @property
    def url(self) -> str:
        """The base URL to give the SDK (`base_url` / OPENAI_BASE_URL), ending in /v1."""
        return f"{self.root}/v1"

    def _answer(  # type: ignore[override]  # a method here: the error dialect is per instance
        self, body: bytes, key: str | None, api_key: str | None, failure: Failure | None,
        canned: str | None, decide: Decide,
    ) -> tuple[int, dict[str, Any], dict[str, str], Received]:  # fmt: skip
        """(status, JSON body, extra headers, log record) for one Chat Completions request."""
        try:
            request = json.loads(body)
            model, messages = str(request["model"]), list(request["messages"])
        except (ValueError, KeyError, TypeError):
            return 400, self._error(400, "not a chat completions request"), {}, Received("", "", [], [], {}, 400, None)
        system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
        users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]

        def record(status: int, text: str | None = None, tokens: tuple[int, int] = (0, 0)) -> Received:
            return Received(model, system, users, messages, request, status, text, *tokens)

        if api_key is not None and key != api_key:
            return 401, self._error(401, "Incorrect API key provided"), {}, record(401)
        if failure is not None:
            wait = {} if failure.retry_after is None else {"retry-after": f"{failure.retry_after:g}"}
            return failure.status, self._error(failure.status, failure.message), wait, record(failure.status)
        try:
            text = canned if canned is not None else decide(system, users)
        except Exception:  # noqa: BLE001  (a broken policy is a test bug: say so loudly)
            traceback.print_exc()
            return 500, self._error(500, "the fake's policy raised"), {}, record(500)
        prompt_chars = sum(len(_text(m.get("content"))) for m in messages)
        tokens = (max(1, prompt_chars // 4), max(1, len(text) // 4))
        completion: dict[str, Any] = {
            "id": f"chatcmpl-fake-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop", "logprobs": None}],
        }  # fmt: skip
        if self.send_usage:
            completion["usage"] = {"prompt_tokens": tokens[0], "completion_tokens": tokens[1],
                                   "total_tokens": sum(tokens)}  # fmt: skip
        return 200, completion, {}, record(200, text, tokens if self.send_usage else (0, 0))

    def _error(self, status: int, message: str) -> dict[str, Any]:
        """The error body a server of `error_style` sends with `status`."""
        if self.error_style == "vllm":
            return {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": status}
        if self.error_style == "llamacpp":
            kind = {401: "authentication_error", 404: "not_found_error"}.get(status, "server_error")
            return {"error": {"code": status, "message": message, "type": kind}}
        if self.error_style == "text":
            return {_TEXT: f"{status} {message}"}
        kind, code = OPENAI_ERRORS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _ChatHandler(_Handler):
    """Routes Chat Completions to the shared request handling, with a Bearer key."""

    def send_json(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        if isinstance(payload, dict) and _TEXT in payload:
            data = str(payload[_TEXT]).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "text/plain")
                self.send_header("content-length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            return
        super().send_json(status, payload, headers)

    def do_POST(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if not path.endswith("/chat/completions"):
            super().do_POST()  # the /_fake/* control routes; anything else is a 404
            return
        # The shared handling reads the key from x-api-key; OpenAI sends it as a Bearer token.
        auth = self.headers.get("authorization", "")
        del self.headers["x-api-key"]
        if auth.lower().startswith("bearer "):
            self.headers["x-api-key"] = auth[7:].strip()
        self.fake._handle_messages(self, self._body())
