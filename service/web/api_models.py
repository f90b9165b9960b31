"""The API's request shapes and the fixed vocabularies of its query parameters (its response
shapes: `service.web.api_responses`, `service.web.api_views`).

Requests are strict (no coercion: `3` is not a model name, `"3"` is not a number of opponents)
and reject unknown fields, so a typo such as `"scenerio"` is an error instead of a silently
defaulted value. Text that becomes a key (model, scenario, question_id) is limited to 255
characters, the column width in PostgreSQL. Every text must be storable on every backend: valid
Unicode (JSON's `\ud800` escapes can carry a lone surrogate, which no UTF-8 encoder accepts) and,
outside metadata, no NUL character (PostgreSQL's text cannot hold one). Metadata is at most
`METADATA_MAX_DEPTH` levels deep and `METADATA_MAX_BYTES` long as compact JSON.
"""
from __future__ import annotations

import json
import re
import time
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    TypeAdapter,
    WrapValidator,
    model_validator,
)

from leaderboard.conversation import TurnsError, first_question, turns_of
from leaderboard.dimensions import DIMENSIONS
from leaderboard.panel import panel_of
from leaderboard.text_rules import KEY_MAX, check_text, name_problem, unicode_problem
from leaderboard.types import Level
from service.ops.cron import HORIZON_S, next_due_within
from service.ops.cron import is_valid as is_valid_cron
from service.store.judgement_lists import Shown

JUDGE_PROVIDERS = ("anthropic", "openai", "offline")
# Metadata: objects and arrays nested at most this deep (the metadata object is level 1), and at
# most this many bytes as compact UTF-8 JSON.
METADATA_MAX_DEPTH = 32
METADATA_MAX_BYTES = 64 * 1024
_STRICT = ConfigDict(extra="forbid", strict=True)


def check_name(value: str) -> str:
    problem = name_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or blank")
    return value


def _where(path: tuple[str | int, ...]) -> str:
    """A path inside metadata as a client writes it: `metadata.tags[0]`."""
    return "metadata" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """At most METADATA_MAX_DEPTH levels of objects and arrays, valid Unicode in every key and
    string, finite numbers, and at most METADATA_MAX_BYTES as compact JSON. Walked without
    recursion, so no depth makes it fail in another way."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, (dict, list)) and depth > METADATA_MAX_DEPTH:
            raise ValueError(f"nested more than {METADATA_MAX_DEPTH} levels deep: flatten it")
        if isinstance(node, dict):
            for key, item in node.items():
                problem = unicode_problem(key)
                if problem is not None:
                    raise ValueError(f"a key of {_where(path)}: {problem}")
                stack.append((item, depth + 1, (*path, key)))
        elif isinstance(node, list):
            stack.extend((item, depth + 1, (*path, i)) for i, item in enumerate(node))
        elif isinstance(node, str):
            problem = unicode_problem(node)
            if problem is not None:
                raise ValueError(f"{_where(path)}: {problem}")
    try:
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8"))
    except ValueError:
        raise ValueError("numbers must be finite (no NaN or Infinity)") from None
    if size > METADATA_MAX_BYTES:
        raise ValueError(f"{size} bytes as JSON: at most {METADATA_MAX_BYTES}")
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
    if next_due_within(expression, time.time()) is None:
        days = HORIZON_S // 86400
        raise ValueError(f"{expression!r} does not fire within the next {days} days: a schedule must fire at least "
                         "once a year (e.g. '0 3 * * *', daily at 03:00 UTC)")
    return expression


# What the OpenAPI document says of texts (the validators above say more, in words): no NUL and
# some character that is not ASCII whitespace; of a judge, its provider. Each admits everything the
# validators admit, so a request the schema refuses is always refused.
TEXT_SCHEMA = {"minLength": 1, "pattern": "^[^\\x00]*[^\\x00\\t\\n\\v\\f\\r ][^\\x00]*$"}
_NOT_IN_NAMES = "\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028-\\u202e\\u2066-\\u2069"
KEY_SCHEMA = {"minLength": 1, "pattern": f"^[^{_NOT_IN_NAMES}]*[^{_NOT_IN_NAMES} ][^{_NOT_IN_NAMES}]*$"}
JUDGE_SCHEMA = {"pattern": f"^({'|'.join(JUDGE_PROVIDERS)})/[^\\x00]+$"}
Text = Annotated[StrictStr, Field(json_schema_extra=TEXT_SCHEMA), AfterValidator(check_text), AfterValidator(_not_blank)]
Key = Annotated[
    StrictStr, Field(max_length=KEY_MAX, json_schema_extra=KEY_SCHEMA), AfterValidator(check_text),
    AfterValidator(check_name), AfterValidator(_not_blank),
]
Filter = Annotated[list[Key], Field(min_length=1)]
JudgeSpec = Annotated[
    StrictStr, Field(max_length=KEY_MAX, json_schema_extra=JUDGE_SCHEMA), AfterValidator(check_text),
    AfterValidator(check_judge_spec),
]
Cron = Annotated[StrictStr, Field(max_length=KEY_MAX), AfterValidator(check_text), AfterValidator(_check_cron)]
Metadata = Annotated[dict[str, Any], AfterValidator(check_metadata)]


# ---- query parameters with a fixed vocabulary -----------------------------------------------


class Vocabulary(str, Enum):
    """A query parameter's fixed values, listed as an enum in the OpenAPI document. A value
    that differs only in case or spacing is taken as the same ("Model", "model + scenario")."""

    @classmethod
    def _missing_(cls, value: object) -> Vocabulary | None:
        if not isinstance(value, str):
            return None
        wanted = re.sub(r"\s*\+\s*", "+", " ".join(value.split()).lower())
        return next((member for member in cls if member.value == wanted), None)


class By(Vocabulary):
    """`by=`: who plays (a board's level, a grouping of scores). `system` is another name for
    `model+scenario`, and `model scenario` is what `model+scenario` becomes in a URL whose `+`
    was not percent-encoded."""

    MODEL = "model"
    SCENARIO = "scenario"
    SYSTEM = "model+scenario"
    SYSTEM_NAME = "system"
    SYSTEM_UNENCODED = "model scenario"

    @property
    def level(self) -> Level:
        return {By.MODEL: Level.MODEL, By.SCENARIO: Level.SCENARIO}.get(self, Level.SYSTEM)


# `dimension=`: one dimension of the `dimensions` criteria set (leaderboard.dimensions).
Dimension = Vocabulary("Dimension", {name.upper(): name for name in DIMENSIONS})  # type: ignore[misc]


# `filter=` of GET /api/judgements: which judgements a list keeps (the store's `Shown`).
JudgementFilter = Vocabulary("JudgementFilter", {kind.name: kind.value for kind in Shown})  # type: ignore[misc]


class Criteria(Vocabulary):
    """`criteria=`: a criteria set (workers.criteria.CRITERIA)."""

    OVERALL = "overall"
    DIMENSIONS = "dimensions"
    COMPQA = "compqa"
    FACTSIM = "factsim"


# ---- requests -------------------------------------------------------------------------------


class TurnIn(BaseModel):
    """One turn of a conversation (`leaderboard.conversation`)."""

    model_config = ConfigDict(**_STRICT)

    role: Literal["user", "assistant"]
    content: Text


_TEXT, _TURNS = TypeAdapter(Text), TypeAdapter(list[TurnIn])


def _text_or_turns(value: Any, _handler: Any) -> str | list[TurnIn]:
    """A list is a conversation, anything else must be text: each fails with its own message."""
    return _TURNS.validate_python(value) if isinstance(value, list) else _TEXT.validate_python(value)


Output = Annotated[Text | list[TurnIn], WrapValidator(_text_or_turns)]


class SubmissionIn(BaseModel):
    """One generator model's output for one question, under one prompt scenario."""

    model_config = ConfigDict(**_STRICT, json_schema_extra={"examples": [
        {"question": "Is Python or Java better for a first course?", "model": "llama3-8b", "scenario": "terse",
         "output": "Python: less syntax between the student and the idea.", "metadata": {"temperature": 0.2}},
    ]})

    question: Text | None = None  # required, but for a conversation: its first user turn
    question_id: Key | None = None  # default: leaderboard.keys.default_question_id(question)
    model: Key
    scenario: Key = "default"
    output: Output  # a conversation: its turns, judged as a whole
    reference: Text | None = None  # the question's reference answer (the judge checks against it)
    metadata: Metadata | None = None

    @model_validator(mode="after")
    def _conversation(self) -> SubmissionIn:
        if isinstance(self.output, list):
            try:
                turns = turns_of([turn.model_dump() for turn in self.output])
            except TurnsError as exc:
                raise ValueError(f"output: {exc}") from None
            if self.question is None:
                self.question = first_question(turns)
        elif self.question is None:
            raise ValueError("question: required (it may be left out only when output is a conversation)")
        return self


class TournamentIn(BaseModel):
    """A tournament to start now, and to re-run at each due time when `schedule` is set."""

    model_config = ConfigDict(**_STRICT, json_schema_extra={"examples": [
        {"name": "nightly", "judge": "anthropic/claude-sonnet-4-5", "schedule": "0 3 * * *", "budget": 5.0},
    ]})

    name: Key = "tournament"
    mode: Literal["round_robin", "sampled", "adaptive", "anchored", "baseline"] = "round_robin"
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
    # adaptive and anchored (service.usecases.rounds): the level ranked, pairs per adaptive round, the
    # judge calls an adaptive run may make, its target interval width (Elo; default: separated
    # intervals), and the anchor players (>= 3) an anchored run holds fixed.
    level: Literal["model", "scenario", "model+scenario"] | None = None
    round_size: Annotated[StrictInt, Field(ge=1, le=10_000)] | None = None
    max_calls: Annotated[StrictInt, Field(ge=1)] | None = None
    target_ci_width: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    anchors: Annotated[list[Key], Field(min_length=3)] | None = None
    # baseline: the player (at `level`) every other player meets on each question both answered:
    # n-1 pairs a question instead of n(n-1)/2 (AlpacaEval, arena-hard-auto). Checked against
    # the field in service.usecases.tournament_requests.check_baseline.
    baseline: Key | None = None
    # This run's own limits on its judge, across every worker: requests and input+output tokens
    # per minute (over JOUST_JUDGE_RPM / JOUST_JUDGE_TPM and the judge's JOUST_JUDGE_ENDPOINTS).
    rpm: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    tpm: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    # "live" (the Messages API, calls in flight at the provider's limit) or "batch" (Anthropic's
    # Message Batches: half the price, results within hours). Default: batch for a scheduled
    # tournament with an anthropic/ judge, live otherwise.
    delivery: Literal["live", "batch"] | None = None
    # The model whose output on each question is the judge's reference answer (under
    # reference_scenario, default "default"); its own submissions are not judged.
    reference_model: Key | None = None
    reference_scenario: Key | None = None
    # A judge panel instead of one judge (leaderboard.panel): its members, "majority" (default)
    # or "separate", and its name (default: the sorted members joined by "+"); the panel's
    # verdicts are filed under the judge "panel/<name>".
    judges: list[JudgeSpec] | None = None
    aggregation: StrictStr | None = None
    panel: Annotated[StrictStr, Field(max_length=KEY_MAX)] | None = None

    @model_validator(mode="after")
    def _panel_options(self) -> TournamentIn:
        if self.judges is None:
            extra = [name for name in ("aggregation", "panel") if getattr(self, name) is not None]
            if extra:
                raise ValueError(f"{' and '.join(extra)}: only with judges (a panel)")
            return self
        if self.judge is not None:
            raise ValueError("judge and judges: name one judge or a panel of judges, not both")
        panel_of(self.judges, self.aggregation or "majority", self.panel)  # a PanelError names the problem
        if self.mode in ("adaptive", "anchored", "baseline"):  # baseline: not yet tried with a panel
            raise ValueError(f"judges: a panel runs modes 'round_robin' and 'sampled', not {self.mode!r}")
        if self.delivery == "batch":
            raise ValueError("judges: a panel's runs are judged live; delivery 'batch' is not supported")
        return self

    @model_validator(mode="after")
    def _reference_options(self) -> TournamentIn:
        if self.reference_scenario is not None and self.reference_model is None:
            raise ValueError("reference_scenario: only with reference_model")
        return self

    @model_validator(mode="after")
    def _mode_options(self) -> TournamentIn:
        only = {"adaptive": ("round_size", "max_calls", "target_ci_width"), "anchored": ("anchors",), "baseline": ()}
        for mode, names in only.items():
            extra = [name for name in names if self.mode != mode and getattr(self, name) is not None]
            if extra:
                raise ValueError(f"{' and '.join(extra)}: only for mode '{mode}'")
        if self.level is not None and self.mode not in only:
            raise ValueError("level: only for modes 'adaptive', 'anchored' and 'baseline'")
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
