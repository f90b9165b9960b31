"""The Message Batches API of the fake Anthropic server (tests.fake_anthropic routes to it).

Wire shapes follow the `anthropic` SDK's types (MessageBatch, MessageBatchIndividualResponse):

    POST   /v1/messages/batches               {"requests": [{"custom_id", "params"}]} -> MessageBatch
    GET    /v1/messages/batches               newest first; limit, after_id, before_id -> page
    GET    /v1/messages/batches/{id}          MessageBatch; "ended" once batch_delay_s has passed
    GET    /v1/messages/batches/{id}/results  JSONL, one {"custom_id", "result"} a line
    POST   /v1/messages/batches/{id}/cancel   "canceling", then ended with its requests "canceled"
    DELETE /v1/messages/batches/{id}          an ended batch only

A batch ends `batch_delay_s` after creation (a timer ends it then; any look at the store ends
overdue batches too; `FakeAnthropic.end_batches()` ends them all at once). Its requests are then
answered one by one, in order, and fixed once computed:

- `batch_errors` {custom_id: outcome or [outcomes]} plans outcomes, one per submission of that
  custom_id, in order: "errored" (api_error) and "overloaded" (overloaded_error) are transient,
  so a resubmission gets the next outcome or a real answer; "expired"; "invalid"
  (invalid_request_error) stays for every later submission, as the same params would.
- else `batch_fault_rate` may draw one of `batch_fault_kinds` ("errored", "expired",
  "malformed": a reply without a verdict) from a stream seeded by fault_seed;
- else the fake's live machinery answers (`respond`): the fail() queue (its status becomes the
  errored result's error type), a random live fault (429/529/500 errored, "timeout" expired,
  "malformed"), a queued reply, the decide policy.

A cancel ends the batch `batch_cancel_delay_s` later with every request "canceled", unless it
was due to end sooner anyway. `batch_shuffle` writes results in a seeded random order (the API
promises no order; match by custom_id).

Two choices where the real API is not documented: results of a batch that has not ended are
refused with 400 invalid_request_error (the SDK never asks: it raises when results_url is
null), and params are checked at creation only for model, max_tokens and messages. Batch
endpoints are not rate-limited.
"""
from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fake_batch_types import (
    CUSTOM_ID,
    PLANNED_FAILURES,
    Batch,
    BatchConfig,
    BatchFault,
    BatchInfo,
    BatchRequest,
    Forced,
    Planned,
    ProcessingStatus,
    Result,
    ResultType,
)
from tests.fake_limits import Draws
from tests.fake_wire import MALFORMED_TEXT, error_body

ROUTE = re.compile(r"/v1/messages/batches(?:/(?P<id>[^/]+)(?:/(?P<action>results|cancel))?)?$")


@dataclass(frozen=True)
class Reply:
    """An HTTP answer of the batch routes."""

    status: int
    body: bytes
    content_type: str = "application/json"

    @classmethod
    def json(cls, status: int, payload: Any) -> Reply:
        return cls(status, json.dumps(payload).encode())

    @classmethod
    def error(cls, status: int, message: str) -> Reply:
        return cls.json(status, error_body(status, message))


Respond = Callable[[BatchRequest, Batch, Forced], Result]
"""Answers one batch request with the fake's live machinery (given what the batch path forced)."""


@dataclass
class BatchStore:
    """The batches of one fake server; thread-safe. Lock order: this store's, then the fake's."""

    respond: Respond
    config: BatchConfig = field(default_factory=BatchConfig)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _batches: dict[str, Batch] = field(default_factory=dict)  # creation order
    _numbered: int = 0
    _submissions: Counter[str] = field(default_factory=Counter)
    _planned: dict[str, deque[Planned]] = field(default_factory=dict)
    _draws: Draws = field(default_factory=lambda: Draws(None))
    _timers: list[threading.Timer] = field(default_factory=list)

    # configuration and life cycle

    def parse(self, config: dict[str, Any]) -> tuple[BatchConfig, dict[str, list[Planned]]]:
        """The batch_* keys of a JSON config, checked: the new config and the outcomes that
        `batch_errors` ({custom_id: outcome or [outcomes]}) plans. Raises ValueError."""
        plans = {str(cid): [Planned(str(o)) for o in ([v] if isinstance(v, str) else v)]
                 for cid, v in dict(config.get("batch_errors", {})).items()}  # fmt: skip
        return self.config.updated(config), plans

    def apply(self, config: BatchConfig, plans: dict[str, list[Planned]], seed: int | None, reseed: bool) -> None:
        """Take a parsed config; add the planned outcomes; restart the fault stream if `reseed`."""
        with self._lock:
            self.config = config
            for cid, outcomes in plans.items():
                self._planned.setdefault(cid, deque()).extend(outcomes)
            if reseed:
                self._draws.restart(seed)

    def reset(self, seed: int | None) -> None:
        """Forget batches, submission counts and planned outcomes; restart the fault stream."""
        with self._lock:
            self._batches.clear()
            self._submissions.clear()
            self._planned.clear()
            self._draws.restart(seed)

    def close(self) -> None:
        with self._lock:
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()

    # what happened

    def submissions(self) -> dict[str, int]:
        with self._lock:
            return dict(self._submissions)

    def infos(self) -> list[BatchInfo]:
        self.settle()
        with self._lock:
            return [BatchInfo(b.id, tuple(r.custom_id for r in b.requests), b.status, b.created_at, b.ended_at,
                              {r.custom_id: r.type for r in b.results or []})
                    for b in self._batches.values()]  # fmt: skip

    def stats(self) -> dict[str, Any]:
        self.settle()
        with self._lock:
            counts = Counter(r.type for b in self._batches.values() for r in b.results or [])
            return {
                "batches_created": len(self._batches),
                "batches_in_progress": sum(b.results is None for b in self._batches.values()),
                "batch_requests": sum(self._submissions.values()),
                "batch_replies": counts[ResultType.SUCCEEDED],
                "batch_results": {t.value: counts[t] for t in ResultType},
            }

    # ending batches

    def settle(self, *, now: bool = False) -> None:
        """End every batch that is due (`now`: every batch), earliest first, answering its
        requests in order."""
        at = time.monotonic()
        with self._lock:
            due = sorted((b for b in self._batches.values() if b.results is None and (now or b.ends_at <= at)),
                         key=lambda b: b.ends_at)  # fmt: skip
            for batch in due:
                self._end(batch)

    def _end(self, batch: Batch) -> None:
        canceled = batch.ends_at < batch.due_at
        results = [Result(r.custom_id, ResultType.CANCELED) if canceled else self._answer(r, batch)
                   for r in batch.requests]  # fmt: skip
        if self.config.shuffle:
            random.Random(f"{self._draws.seed}:{batch.id}").shuffle(results)
        batch.results, batch.ended_at, batch.ended_wall = results, time.monotonic(), time.time()

    def _answer(self, request: BatchRequest, batch: Batch) -> Result:
        plans = self._planned.get(request.custom_id)
        planned = plans[0] if plans else None
        if plans and planned is not Planned.INVALID:  # an invalid request stays invalid
            plans.popleft()
        if planned is Planned.EXPIRED:
            return Result(request.custom_id, ResultType.EXPIRED)
        if planned is not None:
            return self.respond(request, batch, Forced(failure=PLANNED_FAILURES[planned], fault=planned.value))
        drawn = self._draws.draw(self.config.fault_rate, self.config.fault_kinds)
        if drawn == BatchFault.EXPIRED:
            return Result(request.custom_id, ResultType.EXPIRED)
        if drawn == BatchFault.ERRORED:
            return self.respond(request, batch, Forced(failure=PLANNED_FAILURES[Planned.ERRORED], fault=drawn))
        if drawn == BatchFault.MALFORMED:
            return self.respond(request, batch, Forced(canned=MALFORMED_TEXT, fault=drawn))
        return self.respond(request, batch, Forced())

    def _schedule(self, delay_s: float) -> None:
        timer = threading.Timer(delay_s + 0.001, self.settle)
        timer.daemon = True
        self._timers = [t for t in self._timers if t.is_alive()] + [timer]
        timer.start()

    # the HTTP routes

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: bytes, base_url: str) -> Reply:
        """Answer one request to a /v1/messages/batches route."""
        match = ROUTE.search(path)
        if match is None:
            return Reply.error(404, f"no route {path}")
        batch_id, action = match["id"], match["action"]
        if batch_id is None:
            if method == "POST":
                return self._create(body, base_url)
            return self._list(query, base_url) if method == "GET" else Reply.error(405, "method not allowed")
        self.settle()
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None or batch.deleted:
                return Reply.error(404, f"no message batch {batch_id}")
            if (method, action) == ("GET", None):
                return Reply.json(200, batch.view(base_url))
            if (method, action) == ("GET", "results"):
                if batch.results is None:
                    return Reply.error(400, f"message batch {batch_id} is {batch.status}; no results before it ends")
                lines = b"".join(json.dumps(r.line()).encode() + b"\n" for r in batch.results)
                return Reply(200, lines, "application/binary")
            if (method, action) == ("POST", "cancel"):
                return self._cancel(batch, base_url)
            if (method, action) == ("DELETE", None):
                if batch.results is None:
                    return Reply.error(400, f"message batch {batch_id} has not ended; cancel it first")
                batch.deleted = True
                return Reply.json(200, {"id": batch.id, "type": "message_batch_deleted"})
        return Reply.error(405, "method not allowed")

    def _create(self, body: bytes, base_url: str) -> Reply:
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return Reply.error(400, "the body is not JSON")
        requests = payload.get("requests") if isinstance(payload, dict) else None
        parsed, problem = self._parse_requests(requests)
        if problem:
            return Reply.error(400, problem)
        now, wall = time.monotonic(), time.time()
        with self._lock:
            self._numbered += 1
            batch_id = f"msgbatch_fake_{self._numbered:06d}"
            due = now + self.config.delay_s
            batch = Batch(batch_id, parsed, now, wall, due, due)
            self._batches[batch_id] = batch
            self._submissions.update(r.custom_id for r in parsed)
            view = batch.view(base_url)
            self._schedule(self.config.delay_s)
        return Reply.json(200, view)

    def _parse_requests(self, requests: Any) -> tuple[list[BatchRequest], str | None]:
        """The requests of a create call, or why the real API would refuse them (400)."""
        if not isinstance(requests, list) or not requests:
            return [], "requests: a batch needs at least one request"
        if len(requests) > self.config.max_requests:
            return [], f"requests: a batch holds at most {self.config.max_requests} requests, not {len(requests)}"
        parsed: list[BatchRequest] = []
        seen: set[str] = set()
        for index, item in enumerate(requests):
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            params = item.get("params") if isinstance(item, dict) else None
            if not isinstance(custom_id, str) or not CUSTOM_ID.fullmatch(custom_id):
                return [], f"requests.{index}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$"
            if custom_id in seen:
                return [], f"requests.{index}.custom_id: duplicate custom_id {custom_id!r} in this batch"
            if not isinstance(params, dict) or not all(k in params for k in ("model", "max_tokens", "messages")):
                return [], f"requests.{index}.params: model, max_tokens and messages are required"
            seen.add(custom_id)
            parsed.append(BatchRequest(custom_id, params))
        return parsed, None

    def _cancel(self, batch: Batch, base_url: str) -> Reply:
        if batch.status is ProcessingStatus.ENDED:
            return Reply.error(400, f"message batch {batch.id} has already ended")
        if batch.cancel_wall is None:
            batch.cancel_wall = time.time()
            batch.ends_at = min(batch.due_at, time.monotonic() + self.config.cancel_delay_s)
            self._schedule(max(0.0, batch.ends_at - time.monotonic()))
        return Reply.json(200, batch.view(base_url))

    def _list(self, query: dict[str, list[str]], base_url: str) -> Reply:
        self.settle()
        try:
            limit = int(query.get("limit", ["20"])[0])
        except ValueError:
            return Reply.error(400, "limit: must be an integer")
        if not 1 <= limit <= 1000:
            return Reply.error(400, "limit: must be between 1 and 1000")
        with self._lock:
            newest_first = [b for b in reversed(self._batches.values()) if not b.deleted]
            ids = [b.id for b in newest_first]
            after, before = query.get("after_id", [None])[0], query.get("before_id", [None])[0]
            for cursor in (after, before):
                if cursor is not None and cursor not in ids:
                    return Reply.error(400, f"no message batch {cursor} to page from")
            if before is not None:
                end = ids.index(before)
                start = max(0, end - limit)
                page, has_more = newest_first[start:end], start > 0
            else:
                start = ids.index(after) + 1 if after is not None else 0
                page, has_more = newest_first[start : start + limit], start + limit < len(ids)
            return Reply.json(200, {"data": [b.view(base_url) for b in page], "has_more": has_more,
                                    "first_id": page[0].id if page else None,
                                    "last_id": page[-1].id if page else None})  # fmt: skip
