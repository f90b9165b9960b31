"""A fake Anthropic Messages API on loopback, for the real `anthropic` SDK to talk to.

The provider is the one component joust's tests replace; everything between joust and the wire
(the SDK, httpx, retries, headers) stays real. In a test:

    with FakeAnthropic(prefer(["model-x", "model-y"])) as fake:
        settings = Settings(anthropic_base_url=fake.url, anthropic_api_key="test")
        ...
        assert fake.replies == 4

As a process of its own (the end-to-end test's workers reach it over HTTP):

    python -m tests.fake_anthropic --port 0 --preferences "model-x>model-y>model-z"
    # first stdout line: FAKE_ANTHROPIC_URL=http://127.0.0.1:PORT   (or --url-file PATH)
    # GET /_fake/stats, POST /_fake/reset, POST /_fake/configure {JSON config} control it.

Replies come from, in order: the queue of injected failures (`fail`), the queue of canned
reply texts (`queue_replies`), then the `decide(system, user_messages) -> text` policy.
Policies live in tests.fake_policies (`always`, `prefer`, `malformed`). `latency_s` delays
every reply. Counters are thread-safe.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# Policies are re-exported, so tests can take everything about the fake from this module.
from tests.fake_policies import (
    Decide,
    always,
    block,
    decide_from_config,
    malformed,
    parse_ranking,
    prefer,
    verdict_json,
)

__all__ = ["Decide", "Failure", "FakeAnthropic", "Received", "always", "block", "malformed", "prefer", "verdict_json"]

# The `error.type` the real API sends with each status; anything else is an "api_error".
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}  # fmt: skip


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
    """One Messages API request as the fake saw it, and what it answered."""

    model: str
    system: str
    users: list[str]
    messages: list[dict[str, Any]]
    body: dict[str, Any]
    status: int
    reply: str | None
    input_tokens: int = 0
    output_tokens: int = 0


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


class FakeAnthropic:
    """A threaded HTTP server speaking enough of the Messages API for joust's judges."""

    def __init__(
        self,
        decide: Decide | None = None,
        *,
        latency_s: float = 0.0,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.decide: Decide = decide or always("A")
        self.latency_s = latency_s
        self.api_key = api_key  # when set, other keys get a 401
        self._lock = threading.Lock()
        self._failures: deque[Failure] = deque()
        self._replies: deque[str] = deque()
        self._received: list[Received] = []
        self._requests = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self._server = ThreadingHTTPServer((host, port), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    # lifecycle

    @property
    def url(self) -> str:
        """The base URL to give the SDK (`base_url` / ANTHROPIC_BASE_URL)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeAnthropic:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # behaviour

    def fail(self, *failures: Failure | int) -> None:
        """Answer the next requests with these errors, one each, before any reply."""
        with self._lock:
            self._failures.extend(f if isinstance(f, Failure) else Failure(f) for f in failures)

    def queue_replies(self, *texts: str) -> None:
        """Answer the next successful requests with these texts instead of asking `decide`."""
        with self._lock:
            self._replies.extend(texts)

    def configure(self, config: dict[str, Any]) -> None:
        """Apply a JSON config: policy keys (see `decide_from_config`), latency_s, api_key,
        failures [{"status": 429, "retry_after": 0.1}, ...], replies ["text", ...]."""
        decide = decide_from_config(config)
        with self._lock:
            if decide is not None:
                self.decide = decide
            if "latency_s" in config:
                self.latency_s = float(config["latency_s"])
            if "api_key" in config:
                self.api_key = config["api_key"]
        self.fail(*(Failure(**f) if isinstance(f, dict) else Failure.parse(str(f)) for f in config.get("failures", [])))
        self.queue_replies(*config.get("replies", []))

    def reset(self) -> None:
        """Forget counters, the request log and any queued failures or replies."""
        with self._lock:
            self._failures.clear()
            self._replies.clear()
            self._received.clear()
            self._requests = 0
            self._max_in_flight = self._in_flight

    # what happened

    @property
    def requests(self) -> int:
        """Messages API requests received, failed ones included."""
        return int(self.stats()["requests"])

    @property
    def replies(self) -> int:
        """Requests answered with a message (status 200)."""
        return int(self.stats()["replies"])

    @property
    def max_in_flight(self) -> int:
        """The most requests being handled at the same moment."""
        return int(self.stats()["max_in_flight"])

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            models: dict[str, int] = {}
            for r in self._received:
                models[r.model] = models.get(r.model, 0) + 1
            return {
                "requests": self._requests,
                "replies": sum(1 for r in self._received if r.status == 200),
                "errors": sum(1 for r in self._received if r.status != 200),
                "in_flight": self._in_flight,
                "max_in_flight": self._max_in_flight,
                "pending_failures": len(self._failures),
                "pending_replies": len(self._replies),
                "models": models,
            }

    # request handling (runs on the server's threads)

    def _handle_messages(self, handler: _Handler, body: bytes) -> None:
        with self._lock:
            self._requests += 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            failure = self._failures.popleft() if self._failures else None
            canned = self._replies.popleft() if failure is None and self._replies else None
            decide, latency, api_key, number = self.decide, self.latency_s, self.api_key, self._requests
        try:
            time.sleep(latency)
            status, payload, headers, record = self._answer(
                body, handler.headers.get("x-api-key"), api_key, failure, canned, decide
            )
            if status == 200:
                payload = {"id": f"msg_fake_{number:06d}", **payload}
        finally:
            with self._lock:
                # Leave "in flight" before answering, so a client that sends its next request
                # the moment it reads this reply is never counted twice.
                self._in_flight -= 1
        with self._lock:
            self._received.append(record)
        handler.send_json(status, payload, headers)

    @staticmethod
    def _answer(
        body: bytes, key: str | None, api_key: str | None, failure: Failure | None, canned: str | None, decide: Decide
    ) -> tuple[int, dict[str, Any], dict[str, str], Received]:
        """(status, JSON body, extra headers, log record) for one Messages API request."""
        try:
            request = json.loads(body)
            model, messages = str(request["model"]), list(request["messages"])
        except (ValueError, KeyError, TypeError):
            return 400, _error(400, "not a Messages API request"), {}, Received("", "", [], [], {}, 400, None)
        system = _text(request.get("system", ""))
        users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]

        def record(status: int, text: str | None = None, tokens: tuple[int, int] = (0, 0)) -> Received:
            return Received(model, system, users, messages, request, status, text, *tokens)

        if api_key is not None and key != api_key:
            return 401, _error(401, "invalid x-api-key"), {}, record(401)
        if failure is not None:
            wait = {} if failure.retry_after is None else {"retry-after": f"{failure.retry_after:g}"}
            return failure.status, _error(failure.status, failure.message), wait, record(failure.status)
        try:
            text = canned if canned is not None else decide(system, users)
        except Exception:  # noqa: BLE001  (a broken policy is a test bug: say so loudly)
            traceback.print_exc()
            return 500, _error(500, "the fake's policy raised"), {}, record(500)
        prompt_chars = len(system) + sum(len(_text(m.get("content"))) for m in messages)
        tokens = (max(1, prompt_chars // 4), max(1, len(text) // 4))
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


def _error(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    @property
    def fake(self) -> FakeAnthropic:
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def send_json(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", "req_fake")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            self.close_connection = True

    def do_POST(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        body = self._body()
        if path.endswith("/v1/messages"):
            self.fake._handle_messages(self, body)
        elif path == "/_fake/reset":
            self.fake.reset()
            self.send_json(200, self.fake.stats())
        elif path == "/_fake/configure":
            try:
                self.fake.configure(json.loads(body or b"{}"))
            except (ValueError, TypeError) as exc:
                self.send_json(400, _error(400, str(exc)))
                return
            self.send_json(200, self.fake.stats())
        else:
            self.send_json(404, _error(404, f"no route {path}"))

    def do_GET(self) -> None:
        if urlsplit(self.path).path.rstrip("/") == "/_fake/stats":
            self.send_json(200, self.fake.stats())
        else:
            self.send_json(404, _error(404, f"no route {self.path}"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fake_anthropic", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--config", type=Path, help="JSON config (see FakeAnthropic.configure)")
    parser.add_argument("--preferences", nargs="+", metavar="BETTER>WORSE", help="planted ranking chains")
    parser.add_argument("--always", choices=["A", "B", "TIE"], help="always this verdict")
    parser.add_argument("--malformed", type=int, default=0, metavar="N", help="first N replies hold no verdict")
    parser.add_argument("--fail", action="append", default=[], metavar="STATUS[:RETRY_AFTER]")
    parser.add_argument("--latency", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--api-key", help="reject other x-api-key values with 401")
    parser.add_argument("--url-file", type=Path, help="also write the base URL here once serving")
    args = parser.parse_args(argv)

    fake = FakeAnthropic(latency_s=args.latency, api_key=args.api_key, host=args.host, port=args.port)
    if args.config:
        fake.configure(json.loads(args.config.read_text()))
    if args.preferences:
        fake.decide = prefer(parse_ranking(args.preferences))
    if args.always:
        fake.decide = always(args.always)
    fake.queue_replies(*["No verdict here."] * args.malformed)
    fake.fail(*(Failure.parse(f) for f in args.fail))

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    fake.start()
    if args.url_file:
        tmp = args.url_file.with_suffix(".tmp")
        tmp.write_text(fake.url)
        tmp.replace(args.url_file)
    print(f"FAKE_ANTHROPIC_URL={fake.url}", flush=True)
    stop.wait()
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
