"""The API's answers about tournaments and judgements, typed so that the OpenAPI document states
them and a field the store stops giving fails the response instead of silently vanishing.

The store's views (`Store.get_tournament`, `list_tournaments`, `get_judgement`,
`tournament_judgements`, and the typed `list_judgements`) are validated into these models on the
way out. A judge call's record depends on its criteria set (a `compqa` call has a score and
points, a vote `both_bad`, an import its source's columns), so `Call` names the fields every call
may have and keeps the rest as they were stored; the routes serve the fields a record had, and no
others, so a call never gains a null it did not have.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from leaderboard.types import Delivery, Mode, OrderPolicy, TournamentStatus, Winner
from service.store.judgement_lists import Result


class BatchRequestCounts(BaseModel):
    """The provider's request counts of one batch."""

    processing: int
    succeeded: int
    errored: int
    canceled: int
    expired: int


class BatchOut(BaseModel):
    """One provider batch that held requests of the run (`id` is the provider's)."""

    id: str | None
    status: str
    model: str
    requests: int
    request_counts: BatchRequestCounts
    created_at: float
    ended_at: float | None


class RequestCounts(BaseModel):
    """A batch run's requests by state."""

    pending: int
    submitted: int
    done: int
    failed: int


class TournamentSummary(BaseModel):
    """A tournament as listed: its spec (as stored, see `leaderboard.spec`), status and counts.
    `order` is null for an imported run (no judge was asked); `stopped_reason` says why a run
    was stopped early ("budget", "failing", ...); times are Unix seconds. Spend in USD:
    `spent_usd` its own matches' (what its `budget` caps), `runs_spent_usd` the runs under it
    (a schedule's runs, a panel's members'), `total_spent_usd` both."""

    id: int
    name: str
    status: TournamentStatus
    spec: dict[str, Any]
    judge: str
    mode: Mode
    order: OrderPolicy | None
    matches_total: int
    matches_done: int
    matches_failed: int
    matches_cancelled: int
    matches_pending: int
    budget: float | None
    spent_usd: float
    runs_spent_usd: float
    total_spent_usd: float
    stopped_reason: str | None
    retried: int
    delivery: Delivery
    rounds: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    schedule: str | None
    next_run_at: float | None
    parent_id: int | None
    created_by: str | None = None  # the name of the API key that created it (null: a local command)


class TournamentOut(TournamentSummary):
    """One tournament: as listed, plus the runs its schedule started and, for batch delivery,
    the provider's batches, how many of them have not ended (`batches_pending`) and its requests
    by state (empty and zero for a live run)."""

    runs: list[int]
    batches: list[BatchOut]
    batches_pending: int
    requests: RequestCounts


class Stopped(BaseModel):
    """What a cancel stopped: `schedule` true when it stopped a schedule from starting more
    runs; `runs` the runs under the tournament it cancelled in flight (a schedule's current run,
    a panel's members); `matches` the matches it cancelled, those runs' included."""

    schedule: bool
    runs: list[int]
    matches: int


class TournamentCancelled(TournamentOut):
    """A cancelled tournament as `GET /api/tournaments/{id}` shows it, and what the cancel
    stopped (a schedule whose first run had finished still reads status `done`)."""

    stopped: Stopped


class TournamentsOut(BaseModel):
    """One page of tournaments, newest first; `next` is the next page's URL, null on the last."""

    tournaments: list[TournamentSummary]
    next: str | None


class Call(BaseModel):
    """One judge call (or vote, or imported verdict): the submission shown first (null when
    unknown), the positional winner ("A" = the one shown first; null for a scoring call), the
    reason, and whatever else its criteria set records."""

    model_config = ConfigDict(extra="allow")

    first: int | None = None
    winner: str | None = None
    reason: str | None = None


class Side(BaseModel):
    """One side of a judgement: the submission, the length of its output and, when asked for
    (`GET /api/judgements/{id}?outputs=true`), the output itself."""

    id: int
    model: str
    scenario: str
    output_chars: int
    output: str | None = None  # served only when asked for: the route excludes unset fields


class JudgementOut(BaseModel):
    """One judgement: the question, both sides, the outcome for a, whether the two orders
    agreed, every call, tokens, cost (null: no price) and the tie analysis (null until asked
    for and answered; `{"error": ...}` when it could not be had)."""

    id: int
    key: str
    judge: str
    criteria: str
    template_version: str
    question_id: str
    question: str
    a: Side
    b: Side
    outcome: Winner
    consistent: bool
    calls: list[Call]
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    created_at: float
    match_id: int | None
    analysis: dict[str, Any] | None
    created_by: str | None = None  # a vote's API key name; null for a judge's verdict


class JudgementRow(BaseModel):
    """A judgement as listed: both sides as judged (`outcome` "A" = a won), whether the two
    orders agreed, and `result`, the outcome for the player the list was asked about (null
    when it named none). `GET /api/judgements/{id}` has the rest: the question, the calls with
    the order each was shown in and the judge's reasons, and (`outputs=true`) both outputs."""

    id: int
    judge: str
    criteria: str
    question_id: str
    a: Side
    b: Side
    outcome: Winner
    consistent: bool
    created_at: float
    result: Result | None


class TournamentJudgement(BaseModel):
    """A judged match of the tournament, oriented to the match's (a, b): `outcome` "A" = a won;
    the calls' `first` are the match's submission ids."""

    match_id: int
    judgement_id: int
    a: int
    b: int
    outcome: Winner
    consistent: bool
    judge: str
    criteria: str
    calls: list[Call]
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    created_at: float
    created_by: str | None = None  # a vote's API key name; null for a judge's verdict


class TournamentJudgementsOut(BaseModel):
    """One page of a tournament's judged matches, in match order; `next` is the next page's URL,
    null on the last."""

    tournament: int
    judgements: list[TournamentJudgement]
    next: str | None
