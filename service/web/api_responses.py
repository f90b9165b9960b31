"""The API's response shapes that are not the store's views (those are `service.web.api_views`):
errors, what a write returns, a stored submission, a plain board and health. Each route declares
its model, so the OpenAPI document states every answer; the requests are `service.web.api_models`.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ErrorDetail(BaseModel):
    """One validation problem: where (`submissions[2].model`) and what."""

    path: str
    message: str


class ErrorOut(BaseModel):
    """Every 4xx answer: what is wrong, in words (validation errors add `details`)."""

    error: str
    details: list[ErrorDetail] | None = None


class SubmissionRef(BaseModel):
    """Where a submission landed: `created` is False when the same content was already stored."""

    id: int
    created: bool


class SubmissionsCreated(BaseModel):
    """One entry per submission sent, in the order sent."""

    submissions: list[SubmissionRef]


class SubmissionOut(BaseModel):
    """A stored submission (`created_at`: Unix seconds)."""

    id: int
    question_id: str
    question: str
    model: str
    scenario: str
    output: str | list[dict[str, str]]  # a conversation: its turns, as sent
    reference: str | None = None
    metadata: dict[str, Any]
    created_at: float
    created_by: str | None = None  # the name of the API key that stored it ("admin": the admin key)


class SubmissionsOut(BaseModel):
    """One page of submissions, in id order; `next` is the next page's URL, null on the last."""

    submissions: list[SubmissionOut]
    next: str | None


class TournamentRetried(BaseModel):
    """A finished run handed out again: `retried` matches (its failed ones) are pending now."""

    id: int
    status: str
    retried: int


class TournamentCreated(BaseModel):
    """A started run; `queued` is False when Redis was down (the scheduler hands it out later)."""

    id: int
    status: str
    matches_total: int
    queued: bool


class DryRunOut(BaseModel):
    """What a run would take if started now (`POST /api/tournaments?dry_run=true`); nothing is
    created. `cached`: matches a judgement answers without a call; `calls` as the criteria set
    spends them (`leaderboard.callplan`); `estimated_cost_usd` is null when the judge has no
    price (`priced` false); `seed` is the sampled plan's seed, to send back so the run plans the
    same pairs; `placeholders_skipped`: submissions the filters admit that no live run pairs
    (those of imported battles, which have no output to judge). `delivery`: live or batch, as
    the run would be judged; a batch run's estimate is at the batch price (half the list price)."""

    matches: int
    calls: int
    cached: int
    estimated_cost_usd: float | None
    judge: str
    priced: bool
    placeholders_skipped: int
    seed: int | None
    delivery: str


class AnalysisQueued(BaseModel):
    """A tie analysis on its way: follow `GET /api/judgements/{judgement_id}`."""

    judgement_id: int
    status: str
    job_id: str


class LeaderboardRow(BaseModel):
    """One player; None stands for a number that could not be estimated. `rating` (Bradley-Terry)
    ranks the board; `elo` is the online Elo, the verdicts replayed in the order they arrived:
    order-dependent, it can rank players otherwise (the last verdicts weigh most), so it is kept
    for comparison, not for ranking. `win_rate`: (wins + ½ ties) / matches, as the export has it."""

    player: str
    rating: float | None
    ci_low: float | None
    ci_high: float | None
    elo: float | None
    wins: int
    losses: int
    ties: int
    matches: int
    win_rate: float | None


class LeaderboardOut(BaseModel):
    """Rows best first; `judgements` counts the judgements that counted at this level."""

    by: str
    tournament: int | None
    judge: str | None
    rows: list[LeaderboardRow]
    judgements: int


class ShortageOut(BaseModel):
    """A part that cannot write for want of space (`service.store.shortage.Shortage`)."""

    part: str
    where: str
    reason: str


class HealthOut(BaseModel):
    """The API is up; `database` and `redis` say whether each answered ("ok", "down", or "full":
    out of space); `out_of_space`, only when one is, says which, where and why."""

    status: str
    database: str
    redis: str
    out_of_space: list[ShortageOut] | None = None
