"""The API's request and response shapes.

Requests are strict (no coercion: `3` is not a model name, `"3"` is not a number of opponents)
and reject unknown fields, so a typo such as `"scenerio"` is an error instead of a silently
defaulted value. Text that becomes a key (model, scenario, question_id) is limited to 255
characters, the column width in PostgreSQL.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    model_validator,
)

from service.cron import is_valid as is_valid_cron

JUDGE_PROVIDERS = ("anthropic", "openai", "offline")
KEY_MAX = 255
_STRICT = ConfigDict(extra="forbid", strict=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or blank")
    return value


def check_judge_spec(spec: str) -> str:
    """Accept "provider/model" with a known provider and a model without spaces; the model
    may itself contain "/" (e.g. "openai/meta-llama/Llama-3"). The service checks only the
    shape: it never imports the workers or an SDK."""
    provider, slash, model = spec.partition("/")
    if not slash or not provider or not model:
        raise ValueError(f"{spec!r} must look like 'provider/model', e.g. 'anthropic/claude-sonnet-4-5'")
    if provider not in JUDGE_PROVIDERS:
        raise ValueError(f"{spec!r}: unknown provider {provider!r} (known: {', '.join(JUDGE_PROVIDERS)})")
    if re.search(r"\s", model):
        raise ValueError(f"{spec!r}: the model name must not contain spaces")
    return spec


def _check_cron(expression: str) -> str:
    if not is_valid_cron(expression):
        raise ValueError(f"{expression!r} is not a valid five-field cron expression (e.g. '0 3 * * *')")
    return expression


Text = Annotated[StrictStr, AfterValidator(_not_blank)]
Key = Annotated[StrictStr, Field(max_length=KEY_MAX), AfterValidator(_not_blank)]
Filter = Annotated[list[Key], Field(min_length=1)]
JudgeSpec = Annotated[StrictStr, Field(max_length=KEY_MAX), AfterValidator(check_judge_spec)]
Cron = Annotated[StrictStr, AfterValidator(_check_cron)]


# ---- requests -------------------------------------------------------------------------------


class SubmissionIn(BaseModel):
    """One generator model's output for one question, under one prompt scenario."""

    model_config = _STRICT

    question: Text
    question_id: Key | None = None  # default: leaderboard.keys.default_question_id(question)
    model: Key
    scenario: Key = "default"
    output: Text
    metadata: dict[str, Any] | None = None


class TournamentIn(BaseModel):
    """A tournament to start now, and to re-run at each due time when `schedule` is set."""

    model_config = _STRICT

    name: Key = "tournament"
    mode: Literal["round_robin", "sampled", "adaptive", "anchored"] = "round_robin"
    opponents: Annotated[StrictInt, Field(ge=1)] | None = None
    seed: Annotated[StrictInt, Field(ge=0, lt=2**63)] | None = None
    judge: JudgeSpec | None = None  # default: settings.judge
    order: Literal["both", "single"] = "both"
    # workers.criteria.CRITERIA: the pairwise prompt, five dimensions, the Comparative-QA rubric,
    # or FactSim (summaries against their sources).
    criteria: Literal["overall", "dimensions", "compqa", "factsim"] = "overall"
    models: Filter | None = None
    scenarios: Filter | None = None
    questions: Filter | None = None
    schedule: Cron | None = None
    # USD a run may spend on judge calls; the run stops (stopped_reason "budget") once reached.
    budget: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    # adaptive and anchored (service.rounds): the level ranked, pairs per adaptive round, the
    # judge calls an adaptive run may make, its target interval width (Elo; default: separated
    # intervals), and the anchor players (>= 3) an anchored run holds fixed.
    level: Literal["model", "scenario", "model+scenario"] | None = None
    round_size: Annotated[StrictInt, Field(ge=1, le=10_000)] | None = None
    max_calls: Annotated[StrictInt, Field(ge=1)] | None = None
    target_ci_width: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    anchors: Annotated[list[Key], Field(min_length=3)] | None = None
    # This run's own limits on its judge, across every worker: requests and input+output tokens
    # per minute (over JOUST_JUDGE_RPM / JOUST_JUDGE_TPM and the judge's JOUST_JUDGE_ENDPOINTS).
    rpm: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    tpm: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    # "live" (the Messages API, calls in flight at the provider's limit) or "batch" (Anthropic's
    # Message Batches: half the price, results within hours). Default: batch for a scheduled
    # tournament with an anthropic/ judge, live otherwise.
    delivery: Literal["live", "batch"] | None = None

    @model_validator(mode="after")
    def _mode_options(self) -> TournamentIn:
        only = {"adaptive": ("round_size", "max_calls", "target_ci_width"), "anchored": ("anchors",)}
        for mode, names in only.items():
            extra = [name for name in names if self.mode != mode and getattr(self, name) is not None]
            if extra:
                raise ValueError(f"{' and '.join(extra)}: only for mode '{mode}'")
        if self.level is not None and self.mode not in only:
            raise ValueError("level: only for modes 'adaptive' and 'anchored'")
        if self.mode == "anchored" and self.anchors is None:
            raise ValueError("anchors: required when mode is 'anchored' (at least 3 players)")
        return self

    @model_validator(mode="after")
    def _sampled_needs_opponents(self) -> TournamentIn:
        if self.mode == "sampled" and self.opponents is None:
            raise ValueError("opponents: required when mode is 'sampled'")
        if self.mode != "sampled":
            extra = [name for name in ("opponents", "seed") if getattr(self, name) is not None]
            if extra:
                verb = "applies" if len(extra) == 1 else "apply"
                raise ValueError(f"{' and '.join(extra)}: only {verb} to mode 'sampled'")
        return self


# ---- responses ------------------------------------------------------------------------------


class ErrorOut(BaseModel):
    """Every 4xx answer: what is wrong, in words (validation errors add `details`)."""

    error: str


class SubmissionRef(BaseModel):
    """Where a submission landed: `created` is False when the same content was already stored."""

    id: int
    created: bool


class SubmissionsCreated(BaseModel):
    """One entry per submission sent, in the order sent."""

    submissions: list[SubmissionRef]


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
    same pairs."""

    matches: int
    calls: int
    cached: int
    estimated_cost_usd: float | None
    judge: str
    priced: bool
    seed: int | None


class AnalysisQueued(BaseModel):
    """A tie analysis on its way: follow `GET /api/judgements/{judgement_id}`."""

    judgement_id: int
    status: str
    job_id: str


class LeaderboardRow(BaseModel):
    """One player; None stands for a number that could not be estimated."""

    player: str
    rating: float | None
    ci_low: float | None
    ci_high: float | None
    elo: float | None
    wins: int
    losses: int
    ties: int
    matches: int


class LeaderboardOut(BaseModel):
    """Rows best first; `judgements` counts the judgements that counted at this level."""

    by: str
    tournament: int | None
    judge: str | None
    rows: list[LeaderboardRow]
    judgements: int


class HealthOut(BaseModel):
    """The API is up; `database` and `redis` say whether each answered."""

    status: str
    database: str
    redis: str
