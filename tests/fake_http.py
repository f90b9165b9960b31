"""The HTTP side of the fake Anthropic server: a threaded server, the routes and the command line
(`python -m tests.fake_anthropic` runs `main`).

The handler only parses the path and hands the request to the `FakeAnthropic` it serves; the
`/_fake/*` routes control that fake (stats, reset, configure).
"""
from __future__ import annotations

import argparse
import json
import signal
import socket
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tests.fake_limits import Fault
from tests.fake_policies import always, parse_ranking, prefer
from tests.fake_wire import Failure, error_body

if TYPE_CHECKING:
    from tests.fake_anthropic import FakeAnthropic


class Server(ThreadingHTTPServer):
    """A thread per connection, with a listen backlog deep enough for bursts of new ones."""

    daemon_threads = True
    request_queue_size = 1024


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    @property
    def fake(self) -> FakeAnthropic:
        return self.server.fake  # type: ignore[attr-defined]

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle's algorithm and the
        # client's delayed ACK hold the body back some 40 ms on every reply.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def send_json(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        self.send_body(status, json.dumps(payload).encode(), "application/json", headers)

    def send_body(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
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
        elif path.endswith("/v1/messages/count_tokens"):
            self.fake._handle_count_tokens(self, body)
        elif "/v1/messages/batches" in path:
            self.fake._handle_batches(self, "POST", body)
        elif path == "/_fake/reset":
            self.fake.reset()
            self.send_json(200, self.fake.stats())
        elif path == "/_fake/configure":
            try:
                self.fake.configure(json.loads(body or b"{}"))
            except (ValueError, TypeError) as exc:
                self.send_json(400, error_body(400, str(exc)))
                return
            self.send_json(200, self.fake.stats())
        else:
            self.send_json(404, error_body(404, f"no route {path}"))

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if path == "/_fake/stats":
            self.send_json(200, self.fake.stats())
        elif "/v1/messages/batches" in path:
            self.fake._handle_batches(self, "GET", b"")
        else:
            self.send_json(404, error_body(404, f"no route {self.path}"))

    def do_DELETE(self) -> None:
        if "/v1/messages/batches" in urlsplit(self.path).path:
            self.fake._handle_batches(self, "DELETE", self._body())
        else:
            self.send_json(404, error_body(404, f"no route {self.path}"))


def main(argv: Sequence[str] | None = None) -> int:
    """The fake as a process of its own; flags become one `configure` call (see its keys)."""
    parser = argparse.ArgumentParser(prog="python -m tests.fake_anthropic", description="A fake Anthropic API.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--config", type=Path, help="JSON config (see FakeAnthropic.configure)")
    parser.add_argument("--preferences", nargs="+", metavar="BETTER>WORSE", help="planted ranking chains")
    parser.add_argument("--always", choices=["A", "B", "TIE"], help="always this verdict")
    parser.add_argument("--malformed", type=int, default=0, metavar="N", help="first N replies hold no verdict")
    parser.add_argument("--fail", action="append", default=[], metavar="STATUS[:RETRY_AFTER]")
    parser.add_argument("--latency", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--api-key", help="reject other x-api-key values with 401")
    parser.add_argument("--rpm", type=float, help="requests per minute (token bucket)")
    parser.add_argument("--tpm", type=float, help="input + output tokens per minute (token bucket)")
    parser.add_argument("--burst", type=float, metavar="SECONDS", help="bucket capacity in seconds of rate (1)")
    parser.add_argument("--fault-rate", type=float, help="share of requests given a random fault")
    parser.add_argument("--fault-kinds", nargs="+", choices=[f.value for f in Fault], help="faults to draw from")
    parser.add_argument("--fault-seed", type=int, help="seed of the fault draws")
    parser.add_argument("--batch-delay", type=float, metavar="SECONDS", help="how long a message batch runs")
    parser.add_argument("--url-file", type=Path, help="also write the base URL here once serving")
    args = parser.parse_args(argv)

    from tests.fake_anthropic import FakeAnthropic  # here: that module imports this one

    fake = FakeAnthropic(latency_s=args.latency, api_key=args.api_key, host=args.host, port=args.port)
    if args.config:
        fake.configure(json.loads(args.config.read_text()))
    flags = {"rpm": args.rpm, "tpm": args.tpm, "burst_s": args.burst, "fault_rate": args.fault_rate,
             "fault_kinds": args.fault_kinds, "fault_seed": args.fault_seed,
             "batch_delay_s": args.batch_delay}  # fmt: skip
    fake.configure({key: value for key, value in flags.items() if value is not None})
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
