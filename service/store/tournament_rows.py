"""The store's tournament rows, typed: what `Tournaments` and `Rounds` answer, so that a layer
above reads a field by name, checked, instead of a dict by a string key.

Statuses stay the plain strings the `Status` column reads back (`schema.Status`), and
`as_json` gives the exact object the API has always served (same keys, order and values):
the routes and pages validate it into their response models.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from leaderboard.spec import RunSpec


@dataclass(frozen=True)
class BatchCounts:
    """The provider's request counts of a batch."""

    processing: int = 0
    succeeded: int = 0
    errored: int = 0
    canceled: int = 0
    expired: int = 0

    @property
    def total(self) -> int:
        return self.processing + self.succeeded + self.errored + self.canceled + self.expired


@dataclass(frozen=True)
class ProviderBatch:
    """One provider batch that held requests of a run (`id` the provider's; None while "creating")."""

    id: str | None
    status: str
    model: str
    requests: int
    request_counts: BatchCounts
    created_at: float
    ended_at: float | None

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "model": self.model, "requests": self.requests,
                "request_counts": asdict(self.request_counts), "created_at": self.created_at,
                "ended_at": self.ended_at}


@dataclass(frozen=True)
class RequestTally:
    """A batch run's requests by state."""

    pending: int = 0
    submitted: int = 0
    done: int = 0
    failed: int = 0


@dataclass(frozen=True)
class BatchProgress:
    """What a batch run waits on: its batches, oldest first, how many the provider has not
    ended, and its requests by state (empty and zero for a live run)."""

    batches: tuple[ProviderBatch, ...] = ()
    batches_pending: int = 0
    requests: RequestTally = RequestTally()


@dataclass(frozen=True)
class TournamentRow:
    """A tournament as listed: its spec, status, matches counted by status and spend (USD:
    `spent_usd` its own matches', what its budget caps; `runs_spent_usd` the runs under it)."""

    id: int
    name: str
    status: str
    spec: RunSpec
    matches_total: int
    matches_done: int
    matches_failed: int
    matches_cancelled: int
    matches_pending: int  # still to be judged: pending, queued or running
    spent_usd: float
    runs_spent_usd: float
    stopped_reason: str | None
    retried: int
    delivery: str
    rounds: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    schedule: str | None
    next_run_at: float | None
    parent_id: int | None
    created_by: str | None

    @property
    def judge(self) -> str:
        return self.spec.judge

    @property
    def budget(self) -> float | None:
        return self.spec.budget

    @property
    def total_spent_usd(self) -> float:
        return self.spent_usd + self.runs_spent_usd

    def as_json(self) -> dict[str, Any]:
        """The object `GET /api/tournaments` lists, key for key."""
        spec = self.spec
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "spec": spec.as_dict(),
            "judge": spec.judge,
            "mode": spec.mode.value,
            "order": spec.order.value if spec.mode.live else None,  # an import asks no judge
            "matches_total": self.matches_total,
            "matches_done": self.matches_done,
            "matches_failed": self.matches_failed,
            "matches_cancelled": self.matches_cancelled,
            "matches_pending": self.matches_pending,
            "budget": spec.budget,
            "spent_usd": self.spent_usd,
            "runs_spent_usd": self.runs_spent_usd,
            "total_spent_usd": self.total_spent_usd,
            "stopped_reason": self.stopped_reason,
            "retried": self.retried,
            "delivery": self.delivery,
            "rounds": self.rounds,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "schedule": self.schedule,
            "next_run_at": self.next_run_at,
            "parent_id": self.parent_id,
            "created_by": self.created_by,
        }


@dataclass(frozen=True)
class Tournament(TournamentRow):
    """One tournament (`get_tournament`): as listed, plus the runs under it in the order made
    and, for batch delivery, what it waits on (`BatchProgress`'s fields; empty and zero for a
    live run)."""

    runs: tuple[int, ...] = ()
    batches: tuple[ProviderBatch, ...] = ()
    batches_pending: int = 0
    requests: RequestTally = RequestTally()

    def as_json(self) -> dict[str, Any]:
        """The object `GET /api/tournaments/{id}` serves, key for key."""
        return {**super().as_json(), "runs": list(self.runs), "batches": [b.as_json() for b in self.batches],
                "batches_pending": self.batches_pending, "requests": asdict(self.requests)}


@dataclass(frozen=True)
class Stopped:
    """What a cancel stopped: whether a schedule was running, the runs under the tournament it
    cancelled in flight, and the matches it cancelled (those runs' included)."""

    schedule: bool
    runs: tuple[int, ...]
    matches: int

    def as_json(self) -> dict[str, Any]:
        return {"schedule": self.schedule, "runs": list(self.runs), "matches": self.matches}


@dataclass(frozen=True)
class CancelledTournament:
    """A cancelled tournament as `get_tournament` shows it then, and what the cancel stopped
    (a schedule whose first run had finished still reads `done`)."""

    tournament: Tournament
    stopped: Stopped

    def as_json(self) -> dict[str, Any]:
        """The object `POST /api/tournaments/{id}/cancel` answers, key for key."""
        return {**self.tournament.as_json(), "stopped": self.stopped.as_json()}


# ---- the scheduler's rows -------------------------------------------------------------------


@dataclass(frozen=True)
class DueSchedule:
    """A recurring tournament whose next run is due."""

    id: int
    name: str
    spec: RunSpec
    schedule: str
    next_run_at: float


@dataclass(frozen=True)
class DueRound:
    """An adaptive run whose round is over (no active match): `rounds` planned so far."""

    id: int
    spec: RunSpec
    rounds: int


@dataclass(frozen=True)
class SnapshotDue:
    """A finished run with no board snapshot yet, and the tournament its snapshot is filed under
    (its parent, or itself)."""

    run: int
    tournament: int
    judge: str
    finished_at: float | None


@dataclass(frozen=True)
class StaleMatch:
    """A match that may have lost its job: its status (a plain string) and RQ job id, if any."""

    id: int
    status: str
    job_id: str | None
