"""The typed values the client hands back: a tournament, a dry run's price, a vote, a submission,
a judgement, a board row's gaming flag.

Each is read from the API's JSON by `from_json`, which tolerates fields a newer server adds
(they land in `extra`, so nothing it says is lost) and fails with KeyError naming a field the
value cannot do without. The client imports nothing of the service: these mirror the API's
documented shapes (README, "HTTP API"), not its Python classes.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, TypeVar

__all__ = ["DryRun", "Flag", "Judgement", "Side", "Submission", "SubmissionRef", "Tournament", "TournamentStatus", "Verdict",
           "Vote"]


class TournamentStatus(str, Enum):
    """A tournament's lifecycle; the last three are final (a retry makes a run `running` again)."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (TournamentStatus.DONE, TournamentStatus.FAILED, TournamentStatus.CANCELLED)


class Verdict(str, Enum):
    """A person's vote on submissions a and b, relative to a and b (not to the order shown);
    BOTH_BAD counts as a tie on the boards and stays apart in the data."""

    A = "A"
    B = "B"
    TIE = "TIE"
    BOTH_BAD = "BOTH_BAD"


def _split(cls: type, body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The body's fields `cls` declares, and the rest (for `extra`)."""
    known = {f.name for f in fields(cls)} - {"extra"}
    return {k: v for k, v in body.items() if k in known}, {k: v for k, v in body.items() if k not in known}


_Value = TypeVar("_Value", bound="_FromJson")


class _FromJson:
    """`from_json` for a value whose fields are the body's own, unconverted: what it names, and
    the rest in `extra`."""

    @classmethod
    def from_json(cls: type[_Value], body: Mapping[str, Any]) -> _Value:
        known, extra = _split(cls, body)
        made: _Value = cls(**known, extra=extra)  # type: ignore[call-arg]  # each subclass is a dataclass with `extra`
        return made


@dataclass(frozen=True)
class Tournament:
    """A tournament as `GET /api/tournaments/{id}` shows it. `matches_pending` are the matches
    left (pending, queued or running); `spent_usd` what its own judge calls cost so far (what
    its budget caps), `runs_spent_usd` what the runs under it spent (a schedule's, a panel's
    members'), `total_spent_usd` both; `queued` is set only on the value `Client.tournament`
    returns (False: Redis was down when it was created, the scheduler hands it out later).
    Fields this class does not name are in `extra` (e.g. `retried`, `rounds`, `next_run_at`, a
    batch run's `batches`, `batches_pending` and `requests`, and what a cancel `stopped`)."""

    id: int
    status: TournamentStatus
    matches_total: int
    matches_done: int
    matches_failed: int
    matches_cancelled: int = 0
    matches_pending: int = 0
    name: str | None = None
    judge: str | None = None
    mode: str | None = None
    order: str | None = None  # "both", "single"; None for an imported run, which asked no judge
    budget: float | None = None
    spent_usd: float = 0.0
    runs_spent_usd: float = 0.0
    total_spent_usd: float = 0.0
    stopped_reason: str | None = None
    delivery: str | None = None
    schedule: str | None = None
    parent_id: int | None = None
    runs: tuple[int, ...] = ()
    created_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    spec: Mapping[str, Any] = field(default_factory=dict)
    queued: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any], *, queued: bool | None = None) -> Tournament:
        known, extra = _split(cls, body)
        known["status"] = TournamentStatus(known["status"])
        known["runs"] = tuple(known.get("runs") or ())
        for money in ("spent_usd", "runs_spent_usd", "total_spent_usd"):  # the server adds them up
            known[money] = float(known.get(money) or 0.0)
        return cls(**known, queued=queued, extra=extra)

    @property
    def finished(self) -> bool:
        """Done, failed or cancelled: nothing more will be judged unless it is retried."""
        return self.status.finished


@dataclass(frozen=True)
class DryRun(_FromJson):
    """What a tournament would take if started now (`Client.tournament(..., dry_run=True)`);
    nothing was created. `cached`: matches a stored judgement answers for free; `calls`: the
    judge calls the rest need; `estimated_cost_usd` is None when the judge has no price
    (`priced` False), and at the batch price (half the list price) when `delivery` is "batch";
    `seed`: a sampled plan's seed, to pass back so the run plans the same pairs."""

    matches: int
    calls: int
    cached: int
    estimated_cost_usd: float | None
    judge: str
    priced: bool
    placeholders_skipped: int = 0
    seed: int | None = None
    delivery: str | None = None  # "live" or "batch"; None from a server older than the field
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Vote(_FromJson):
    """A stored vote: its judgement's id, its judge (`human/<voter>`), and `created` False when
    the same vote was already stored."""

    id: int
    judge: str
    created: bool
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Flag(_FromJson):
    """A sign of gaming on a board row: `kind` (constant_output, addresses_judge,
    copies_question, length_unexplained) and its `evidence`, a sentence with the numbers."""

    kind: str
    evidence: str
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SubmissionRef:
    """A submitted row's stored id, and `created` False when the same row was stored already."""

    id: int
    created: bool


@dataclass(frozen=True)
class Submission(_FromJson):
    """A stored submission (`GET /api/submissions/{id}`): its output, and `created_at` in Unix
    seconds; `created_by` the API key that stored it (None: a local command)."""

    id: int
    question_id: str
    question: str
    model: str
    scenario: str
    output: str | list[dict[str, str]]  # a conversation: its turns ({role, content})
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: float | None = None
    created_by: str | None = None
    reference: str | None = None  # the question's reference answer, as this submission stated it
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Side(_FromJson):
    """One side of a judgement: the submission, the length of its output, and the output itself
    when it was asked for (`Client.judgement(..., outputs=True)`; else None)."""

    id: int
    model: str
    scenario: str
    output_chars: int
    output: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Judgement:
    """One judgement (`GET /api/judgements/{id}`): the question, both sides, `outcome` for a
    ("A" = a won, "B", "TIE"), whether the two orders agreed, and every call as stored (`first`:
    the submission shown first; `winner`: positional, "A" = the one shown first; `reason`)."""

    id: int
    judge: str
    question_id: str
    question: str
    a: Side
    b: Side
    outcome: str
    consistent: bool
    calls: tuple[Mapping[str, Any], ...] = ()
    criteria: str | None = None
    cost_usd: float | None = None
    created_at: float | None = None
    analysis: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Judgement:
        known, extra = _split(cls, body)
        known["a"], known["b"] = Side.from_json(known["a"]), Side.from_json(known["b"])
        known["calls"] = tuple(known.get("calls") or ())
        return cls(**known, extra=extra)
