"""The values of the fake Message Batches API (tests.fake_batches): statuses, result types,
the batch config, a batch with its timeline, and a result line as the SDK reads it."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from tests.fake_wire import Failure, rfc3339

CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
EXPIRY_S = 24 * 3600  # a batch expires a day after it is created


class ProcessingStatus(StrEnum):
    IN_PROGRESS = "in_progress"
    CANCELING = "canceling"
    ENDED = "ended"


class ResultType(StrEnum):
    SUCCEEDED = "succeeded"
    ERRORED = "errored"
    CANCELED = "canceled"
    EXPIRED = "expired"


class Planned(StrEnum):
    """Outcomes `batch_errors` can plan for a custom_id."""

    ERRORED = "errored"  # a transient api_error
    OVERLOADED = "overloaded"  # a transient overloaded_error
    EXPIRED = "expired"
    INVALID = "invalid"  # invalid_request_error, for every submission of that custom_id


class BatchFault(StrEnum):
    """Random batch faults (`batch_fault_kinds`)."""

    ERRORED = "errored"
    EXPIRED = "expired"
    MALFORMED = "malformed"


PLANNED_FAILURES = {Planned.ERRORED: Failure(500, message="injected batch error"),
                    Planned.OVERLOADED: Failure(529, message="injected batch overload"),
                    Planned.INVALID: Failure(400, message="injected invalid request")}  # fmt: skip


@dataclass(frozen=True)
class BatchConfig:
    """How batches behave; see the module docstring."""

    delay_s: float = 0.2
    cancel_delay_s: float = 0.05
    max_requests: int = 100_000
    fault_rate: float = 0.0
    fault_kinds: tuple[BatchFault, ...] = tuple(BatchFault)
    shuffle: bool = False  # results in a seeded random order, as the API does not promise order

    def updated(self, config: dict[str, Any]) -> BatchConfig:
        """This config with the batch_* keys of a JSON config applied."""
        new = replace(
            self,
            delay_s=float(config.get("batch_delay_s", self.delay_s)),
            cancel_delay_s=float(config.get("batch_cancel_delay_s", self.cancel_delay_s)),
            max_requests=int(config.get("batch_max_requests", self.max_requests)),
            fault_rate=float(config.get("batch_fault_rate", self.fault_rate)),
            fault_kinds=tuple(BatchFault(str(k)) for k in config.get("batch_fault_kinds", self.fault_kinds)),
            shuffle=bool(config.get("batch_shuffle", self.shuffle)),
        )
        if new.delay_s < 0 or new.cancel_delay_s < 0 or new.max_requests < 1 or not 0 <= new.fault_rate <= 1:
            raise ValueError("bad batch config")
        return new


@dataclass(frozen=True)
class BatchRequest:
    custom_id: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Forced:
    """What the batch path settled before the live machinery runs (all None: nothing)."""

    failure: Failure | None = None
    canned: str | None = None
    fault: str | None = None


@dataclass(frozen=True)
class Result:
    """One request's result: a line of the results JSONL."""

    custom_id: str
    type: ResultType
    message: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # an ErrorResponse: {"type": "error", "error": {...}}

    def line(self) -> dict[str, Any]:
        result: dict[str, Any] = {"type": self.type.value}
        if self.message is not None:
            result["message"] = self.message
        if self.error is not None:
            result["error"] = self.error
        return {"custom_id": self.custom_id, "result": result}


@dataclass
class Batch:
    """A batch and its timeline (monotonic seconds, with wall-clock twins for the wire)."""

    id: str
    requests: list[BatchRequest]
    created_at: float
    created_wall: float
    due_at: float  # when it ends unless canceled first
    ends_at: float  # when it ends (earlier after a cancel)
    cancel_wall: float | None = None
    ended_at: float | None = None
    ended_wall: float | None = None
    results: list[Result] | None = None
    deleted: bool = False

    @property
    def status(self) -> ProcessingStatus:
        if self.results is not None:
            return ProcessingStatus.ENDED
        return ProcessingStatus.IN_PROGRESS if self.cancel_wall is None else ProcessingStatus.CANCELING

    def view(self, base_url: str) -> dict[str, Any]:
        """The MessageBatch object."""
        counts = Counter(r.type for r in self.results or [])
        return {
            "id": self.id,
            "type": "message_batch",
            "processing_status": self.status.value,
            "request_counts": {"processing": 0 if self.results is not None else len(self.requests),
                               **{t.value: counts[t] for t in ResultType}},  # fmt: skip
            "created_at": rfc3339(self.created_wall),
            "expires_at": rfc3339(self.created_wall + EXPIRY_S),
            "ended_at": None if self.ended_wall is None else rfc3339(self.ended_wall),
            "cancel_initiated_at": None if self.cancel_wall is None else rfc3339(self.cancel_wall),
            "archived_at": None,
            "results_url": None if self.results is None else f"{base_url}/v1/messages/batches/{self.id}/results",
        }


@dataclass(frozen=True)
class BatchInfo:
    """What a test sees of a batch (`FakeAnthropic.batches()`)."""

    id: str
    custom_ids: tuple[str, ...]
    processing_status: ProcessingStatus
    created_at: float
    ended_at: float | None
    results: dict[str, ResultType]  # by custom_id, once ended
