"""A fake Anthropic Messages API on loopback, for the real `anthropic` SDK to talk to.

The provider is the one component joust's tests replace; everything between joust and the wire
(the SDK, httpx, retries, headers) stays real. In a test:

    with FakeAnthropic(prefer(["model-x", "model-y"])) as fake:
        settings = Settings(anthropic_base_url=fake.url, anthropic_api_key="test")
        ...
        assert fake.replies == 4

As a process of its own (the end-to-end test's workers and the benchmarks reach it over HTTP):

    python -m tests.fake_anthropic --port 0 --preferences "model-x>model-y>model-z" --rpm 3000
    # first stdout line: FAKE_ANTHROPIC_URL=http://127.0.0.1:PORT   (or --url-file PATH)
    # GET /_fake/stats, POST /_fake/reset, POST /_fake/configure {JSON config} control it.

Replies to POST /v1/messages come from, in order: the rate limiter (`rpm`, `tpm`: token
buckets as the real API uses, see tests.fake_limits; a request over the limit gets an immediate
429 with retry-after and anthropic-ratelimit-* headers), the queue of injected failures
(`fail`), a random fault on a `fault_rate` share of requests (429, 529, 500, a "timeout" that
answers `fault_timeout_s` late, or a "malformed" reply without a verdict; seeded by
`fault_seed`), the queue of canned reply texts (`queue_replies`), then the
`decide(system, user_messages) -> text` policy. Policies live in tests.fake_policies (`always`,
`prefer`, `malformed`). `latency_s` delays every reply but the rate limiter's.

POST /v1/messages/count_tokens answers the fake's estimate (prompt characters // 4). The
Message Batches API (create, retrieve, results, cancel, list, delete) lives in
tests.fake_batches: its requests go through the same machinery when their batch ends
(`batch_delay_s`, or at once with `end_batches()`), are counted apart from live ones
(`batch_replies`, `batch_submissions()`, `batches()`), and can be planned to error or expire.
Every request is logged as a `Received` with arrival and answer times (`received_times()` for
replies per second and the share answered 429). Counters are thread-safe; the server keeps
hundreds of keep-alive connections open (tests.fake_http). Keys of `configure` and the CLI's
flags: see `FakeAnthropic.configure` and `python -m tests.fake_anthropic --help`.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fake_batch_types import Batch, BatchInfo, BatchRequest, Forced, Result, ResultType
from tests.fake_batches import BatchStore
from tests.fake_http import Handler as _Handler
from tests.fake_http import Server as _Server
from tests.fake_limits import Admission, Draws, Fault, FaultConfig, RateLimiter

# Re-exported, so tests can take everything about the fake from this module.
from tests.fake_policies import Decide, always, block, decide_from_config, malformed, prefer, verdict_json
from tests.fake_wire import ERROR_TYPES, MALFORMED_TEXT, Cost, Failure, Received, ReceivedTimes, answer_message, api_key_of, input_tokens_of
from tests.fake_wire import error_body as _error
from tests.fake_wire import text_of as _text  # noqa: F401  (tests.fake_openai imports it from here)

__all__ = ["ERROR_TYPES", "BatchInfo", "Decide", "Failure", "Fault", "FakeAnthropic", "Received", "ReceivedTimes",
           "ResultType", "always", "block", "malformed", "prefer", "verdict_json"]  # fmt: skip


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
        rpm: float | None = None,
        tpm: float | None = None,
        burst_s: float = 1.0,
        fault_rate: float = 0.0,
        fault_seed: int | None = None,
        batch_delay_s: float = 0.2,
    ) -> None:
        self.decide: Decide = decide or always("A")
        self.latency_s = latency_s
        self.api_key = api_key  # when set, other keys get a 401
        self._lock = threading.Lock()
        self._failures: deque[Failure] = deque()
        self._replies: deque[str] = deque()
        self._received: list[Received] = []
        self._requests = 0
        self._arrivals: list[float] = []  # time.monotonic() of each live request's arrival
        self._count_tokens = 0
        self._batch_messages = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self._limiter = RateLimiter()
        self._faults = FaultConfig()
        self._draws = Draws(None)
        self._batches = BatchStore(self._answer_batch_request)
        self._stopping = threading.Event()  # cuts short a "timeout" fault's wait on stop()
        self._server = _Server((host, port), _Handler)
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None
        self.configure({"rpm": rpm, "tpm": tpm, "burst_s": burst_s, "fault_rate": fault_rate,
                        "fault_seed": fault_seed, "batch_delay_s": batch_delay_s})  # fmt: skip

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
        self._stopping.set()
        self._batches.close()
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
        """Apply a JSON config. Keys: policy keys (see `decide_from_config`), latency_s, api_key,
        failures [{"status": 429, "retry_after": 0.1}, ...], replies ["text", ...];
        rpm, tpm, burst_s (rate limits, null for none); fault_rate, fault_kinds, fault_seed,
        fault_retry_after (null: 429/529 faults carry none), fault_timeout_s (random faults);
        batch_delay_s, batch_cancel_delay_s, batch_max_requests, batch_errors, batch_fault_rate,
        batch_fault_kinds, batch_shuffle.
        Everything is checked before anything changes; a bad value raises ValueError."""
        decide = decide_from_config(config)
        limits = self._limiter.config.updated(config)
        faults = self._faults.updated(config)
        batch_config, plans = self._batches.parse(config)
        failures = [Failure(**f) if isinstance(f, dict) else Failure.parse(str(f)) for f in config.get("failures", [])]
        latency_s = float(config.get("latency_s", self.latency_s))
        reseed = "fault_seed" in config  # a seed, even the same one, restarts the fault stream
        with self._lock:
            if decide is not None:
                self.decide = decide
            self.latency_s = latency_s
            if "api_key" in config:
                self.api_key = config["api_key"]
            self._limiter.configure(limits)
            self._faults = faults
            if reseed:
                self._draws.restart(faults.seed)
        self._batches.apply(batch_config, plans, faults.seed, reseed)
        self.fail(*failures)
        self.queue_replies(*config.get("replies", []))

    def reset(self) -> None:
        """Forget counters, the request log, batches, queued failures, replies and planned batch
        outcomes; refill the rate-limit buckets and restart the fault stream from its seed."""
        self._batches.reset(self._faults.seed)
        with self._lock:
            self._failures.clear()
            self._replies.clear()
            self._received.clear()
            self._requests = self._count_tokens = 0
            self._max_in_flight = self._in_flight
            self._limiter.refill_all()
            self._draws.restart(self._faults.seed)

    # what happened

    @property
    def requests(self) -> int:
        """Live Messages API requests received, failed and rate-limited ones included."""
        with self._lock:
            return self._requests

    def arrivals(self) -> list[float]:
        """When each live Messages API request arrived (`time.monotonic()`, this process's clock)."""
        with self._lock:
            return list(self._arrivals)

    @property
    def replies(self) -> int:
        """Live requests answered with a message the client could read (status 200)."""
        with self._lock:
            return sum(r.batch_id is None and r.delivered for r in self._received)

    @property
    def max_in_flight(self) -> int:
        """The most requests being handled at the same moment."""
        with self._lock:
            return self._max_in_flight

    @property
    def received(self) -> list[Received]:
        """Every answered request, live and batch (those carry `batch_id`), in answer order."""
        with self._lock:
            return list(self._received)

    def received_times(self) -> ReceivedTimes:
        """Arrival times and outcomes of the live requests: replies_per_s, rate_limited_share."""
        return ReceivedTimes.of(self.received)

    def batches(self) -> list[BatchInfo]:
        """Every batch created since the last reset, oldest first, with its custom_ids."""
        return self._batches.infos()

    def end_batches(self) -> None:
        """End every batch now, as if its batch_delay_s had passed (a test need not wait)."""
        self._batches.settle(now=True)

    def batch_submissions(self) -> dict[str, int]:
        """How many times each custom_id was submitted in a batch."""
        return self._batches.submissions()

    def stats(self) -> dict[str, Any]:
        batch_stats = self._batches.stats()  # before taking our lock: the store's comes first
        with self._lock:
            live = [r for r in self._received if r.batch_id is None]
            times = ReceivedTimes.of(live)
            limits = self._limiter.config
            return {
                "requests": self._requests,
                "replies": times.replies,
                "errors": sum(1 for r in live if r.status != 200),
                "rate_limited": sum(1 for r in live if r.limited is not None),
                "timeouts": sum(1 for r in live if r.fault == Fault.TIMEOUT),
                "faults": dict(Counter(r.fault for r in live if r.fault is not None)),
                "in_flight": self._in_flight,
                "max_in_flight": self._max_in_flight,
                "pending_failures": len(self._failures),
                "pending_replies": len(self._replies),
                "models": dict(Counter(r.model for r in live)),
                "count_tokens": self._count_tokens,
                "replies_per_s": times.replies_per_s,
                "rate_limited_share": times.rate_limited_share,
                "limits": {"rpm": limits.rpm, "tpm": limits.tpm, "burst_s": limits.burst_s},
                **batch_stats,
            }

    # request handling (runs on the server's threads)

    def _handle_messages(self, handler: _Handler, body: bytes) -> None:
        at = time.monotonic()
        key = api_key_of(handler.headers)
        cost = Cost.of(body)
        admission: Admission | None = None
        failure: Failure | None
        canned: str | None = None
        fault: str | None = None
        with self._lock:
            self._requests += 1
            self._arrivals.append(at)
            decide, latency, api_key, number = self.decide, self.latency_s, self.api_key, self._requests
            if self._limiter.active and (api_key is None or key == api_key):
                admission = self._limiter.admit(cost.input_tokens, cost.max_tokens, at)
            if admission is not None and not admission.admitted:
                message = f"This request would exceed your organization's rate limit of {admission.limited} per minute"
                failure = Failure(429, admission.retry_after_s, message)
                latency = 0.0  # refused on arrival
            else:
                self._in_flight += 1
                self._max_in_flight = max(self._max_in_flight, self._in_flight)
                failure, canned, fault = self._next_answer()
                latency = self._faults.timeout_s if fault == Fault.TIMEOUT else latency
        counted = admission is None or admission.admitted
        try:
            if fault == Fault.TIMEOUT:
                self._stopping.wait(latency)
            elif latency:
                time.sleep(latency)
            status, payload, headers, record = self._answer(body, key, api_key, failure, canned, decide)
            if status == 200:
                payload = {"id": f"msg_fake_{number:06d}", **payload}
        finally:
            with self._lock:
                # Leave "in flight" before answering, so a client that sends its next request
                # the moment it reads this reply is never counted twice.
                self._in_flight -= 1 if counted else 0
        answered = time.monotonic()
        limited = None if admission is None else admission.limited
        record = replace(record, at=at, answered_at=answered, fault=fault, limited=limited)
        with self._lock:
            self._received.append(record)
            if admission is not None and admission.admitted:
                self._limiter.settle(admission.reserved_output, record.output_tokens, answered)
        if admission is not None:
            headers = {**headers, **admission.headers}
        handler.send_json(status, payload, headers)

    def _next_answer(self) -> tuple[Failure | None, str | None, str | None]:
        """(failure, canned reply, fault) for the next request; the caller holds the lock. A fault
        is drawn every time, so a seeded run replays, but the fail() queue comes first. A
        "timeout" takes no queued reply: its client never reads it."""
        drawn = self._draws.draw(self._faults.rate, self._faults.kinds)
        if self._failures:
            return self._failures.popleft(), None, None
        wait = self._faults.retry_after
        effects: dict[str, tuple[Failure | None, str | None]] = {
            Fault.RATE_LIMITED: (Failure(429, wait, "injected fault: rate limited"), None),
            Fault.OVERLOADED: (Failure(529, wait, "injected fault: overloaded"), None),
            Fault.SERVER_ERROR: (Failure(500, None, "injected fault: internal server error"), None),
            Fault.MALFORMED: (None, MALFORMED_TEXT),
        }  # a "timeout" answers as usual, only late
        failure, canned = effects.get(drawn or "", (None, None))
        if failure is None and canned is None and drawn != Fault.TIMEOUT and self._replies:
            canned = self._replies.popleft()
        return failure, canned, drawn

    def _refused(self, handler: _Handler) -> bool:
        """Answer 401 when an API key is set and the request carries another."""
        refused = self.api_key is not None and api_key_of(handler.headers) != self.api_key
        if refused:
            handler.send_json(401, _error(401, "invalid x-api-key"))
        return refused

    def _handle_count_tokens(self, handler: _Handler, body: bytes) -> None:
        try:
            request = json.loads(body)
            readable = isinstance(request, dict) and isinstance(request.get("messages"), list)
        except ValueError:
            readable = False
        if self._refused(handler):
            return
        if not readable:
            handler.send_json(400, _error(400, "not a count_tokens request"))
            return
        with self._lock:
            self._count_tokens += 1
        handler.send_json(200, {"input_tokens": input_tokens_of(request)})

    def _handle_batches(self, handler: _Handler, method: str, body: bytes) -> None:
        if not self._refused(handler):
            url = urlsplit(handler.path)
            reply = self._batches.handle(method, url.path.rstrip("/"), parse_qs(url.query), body, self.url)
            handler.send_body(reply.status, reply.body, reply.content_type)

    def _answer_batch_request(self, request: BatchRequest, batch: Batch, forced: Forced) -> Result:
        """One batch request through the live machinery, when its batch ends (see fake_batches)."""
        failure, canned, fault = forced.failure, forced.canned, forced.fault
        with self._lock:
            if failure is None and canned is None:
                failure, canned, fault = self._next_answer()
            decide = self.decide
            self._batch_messages += 1
            number = self._batch_messages
        if fault == Fault.TIMEOUT:  # a batch request that never got its turn
            return Result(request.custom_id, ResultType.EXPIRED)
        # Not self._answer: batch results hold Anthropic messages even in a subclass.
        body = json.dumps(request.params).encode()
        status, payload, _, record = answer_message(body, None, None, failure, canned, decide)
        record = replace(record, at=batch.created_at, answered_at=time.monotonic(), fault=fault,
                         batch_id=batch.id, custom_id=request.custom_id)  # fmt: skip
        with self._lock:
            self._received.append(record)
        if status == 200:
            return Result(request.custom_id, ResultType.SUCCEEDED, message={"id": f"msg_fake_b{number:06d}", **payload})
        return Result(request.custom_id, ResultType.ERRORED, error=payload)

    # The Messages API reply; FakeOpenAI overrides it to speak Chat Completions.
    _answer = staticmethod(answer_message)


if __name__ == "__main__":
    from tests.fake_http import main

    sys.exit(main())
