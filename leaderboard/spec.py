"""A tournament's spec as one typed value: what a run plans and judges with.

It is built from a request (`service.usecases.tournament_requests.build_spec`), the scheduler (a
nightly re-run is the same spec with `rerun`), the anchored check (`anchor_ratings`) and the
importers (mode `import`), stored as JSON in the tournament's row (`to_json`) and parsed back once, where the
store reads the row (`from_json`). Every default lives here, once. Parsing refuses a key it does
not know and a value of the wrong type, naming it, so a misspelt key never passes silently as
its default. The JSON keeps the layout joust has always written (every request field, `null`
when unset; the adaptive, anchored and baseline options only for those modes; `rerun` and the reference
model only when set), so stored rows need no migration and the API shows the same `spec` as
before.
"""
from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

from .panel import Aggregation, Panel, panel_of
from .types import Delivery, Level, Mode, OrderPolicy

ROUND_SIZE = 20
"""Pairs per adaptive round when the spec does not say."""

# What every live run writes (in this order), then what its mode adds; an import writes its own.
_BASE = ("mode", "judge", "order", "criteria", "models", "scenarios", "questions", "opponents", "seed", "budget",
         "rpm", "tpm", "delivery")
_MODE_KEYS = {Mode.ADAPTIVE: ("level", "round_size", "max_calls", "target_ci_width"),
              Mode.ANCHORED: ("level", "anchors", "anchor_ratings"),
              Mode.BASELINE: ("level", "baseline")}
_IMPORT_KEYS = ("mode", "source", "judge", "criteria", "layer")
_PANEL_KEYS = ("judges", "aggregation", "panel")  # only for a panel's run


class SpecError(ValueError):
    """A stored spec that joust cannot read: an unknown key, or a value of the wrong type."""


@dataclass(frozen=True)
class RunSpec:
    """What a tournament run plans and judges with; every field but `judge` has its default.

    Filters (`models`, `scenarios`, `questions`): None admits all. `opponents` and `seed`: the
    sampled mode's plan. `budget` (USD), `rpm`, `tpm`: the run's own limits. Adaptive: `level`,
    `round_size`, `max_calls`, `target_ci_width`; anchored: `level`, `anchors` and the ratings
    they are held at (`anchor_ratings`, taken when the run is created); baseline: `level` and the
    player every other meets (`baseline`, `leaderboard.pairing.against_baseline`). `rerun`: a scheduled
    re-run, which spends only on new submissions and unsettled pairs. `source` and `layer`: an
    import's file and, for a pair repeated in it, the child tournament holding the repeat (for a
    `separate` panel: the run copying its k-th member's verdicts).
    `reference_model` (under `reference_scenario`): the model whose output on each question is
    the judge's reference answer; its own submissions (under that scenario) are left out of the
    field. `judges`, `aggregation`, `panel`: a judge panel's run (`leaderboard.panel`): its
    members, how their verdicts combine and its name; `judge` is then `panel/<name>`, and each
    member judges the pairs in a run of its own (`for_member`).
    """

    judge: str
    mode: Mode = Mode.ROUND_ROBIN
    order: OrderPolicy = OrderPolicy.BOTH
    criteria: str = "overall"
    models: tuple[str, ...] | None = None
    scenarios: tuple[str, ...] | None = None
    questions: tuple[str, ...] | None = None
    opponents: int | None = None
    seed: int | None = None
    budget: float | None = None
    rpm: float | None = None
    tpm: float | None = None
    delivery: Delivery = Delivery.LIVE
    level: Level = Level.MODEL
    round_size: int = ROUND_SIZE
    max_calls: int | None = None
    target_ci_width: float | None = None
    anchors: tuple[str, ...] | None = None
    anchor_ratings: Mapping[str, float] | None = field(default=None, hash=False)
    baseline: str | None = None
    rerun: bool = False
    source: str | None = None
    layer: int | None = None
    reference_model: str | None = None
    reference_scenario: str = "default"
    judges: tuple[str, ...] | None = None
    aggregation: Aggregation | None = None
    panel: str | None = None

    def __post_init__(self) -> None:
        """Enums from their values and lists as tuples, so code may pass either."""
        for name, kind in (("mode", Mode), ("order", OrderPolicy), ("delivery", Delivery), ("level", Level)):
            object.__setattr__(self, name, kind(getattr(self, name)))
        if self.aggregation is not None:
            object.__setattr__(self, "aggregation", Aggregation(self.aggregation))
        for name in ("models", "scenarios", "questions", "anchors", "judges"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(value))
        if self.anchor_ratings is not None:
            object.__setattr__(self, "anchor_ratings", MappingProxyType(dict(self.anchor_ratings)))

    # ---- what the fields mean together --------------------------------------------------

    @property
    def adaptive(self) -> bool:
        return self.mode is Mode.ADAPTIVE

    @property
    def anchored(self) -> bool:
        return self.mode is Mode.ANCHORED

    @property
    def against_baseline(self) -> bool:
        return self.mode is Mode.BASELINE

    @property
    def jury(self) -> Panel | None:
        """The judge panel this run is the panel verdicts of (None: a run of one judge)."""
        if self.judges is None:
            return None
        return panel_of(self.judges, self.aggregation or Aggregation.MAJORITY, self.panel)

    def for_member(self, member: str) -> RunSpec:
        """The spec of a panel member's own run: this one, judged by `member` alone."""
        return self.with_(judge=member, judges=None, aggregation=None, panel=None)

    @property
    def batch(self) -> bool:
        """Whether the run's calls go through the provider's batch API."""
        return self.delivery is Delivery.BATCH

    @property
    def calls_per_judgement(self) -> int:
        """Judge calls one new pairwise judgement costs: 2 for order both, 1 for single."""
        return 2 if self.order is OrderPolicy.BOTH else 1

    def with_(self, **changes: Any) -> RunSpec:
        """A copy with `changes` (a spec is never changed in place)."""
        return dataclasses.replace(self, **changes)

    def is_reference(self, model: str, scenario: str) -> bool:
        """Whether a submission of (model, scenario) is the run's reference answer."""
        return model == self.reference_model and scenario == self.reference_scenario

    # ---- JSON, as stored ----------------------------------------------------------------

    def as_dict(self) -> dict[str, Any]:
        """The spec as the JSON object joust stores and the API shows (module docstring)."""
        if self.mode is Mode.IMPORT:
            names = [n for n in _IMPORT_KEYS if n != "layer" or self.layer is not None]
        else:
            names = [*_BASE, *_MODE_KEYS.get(self.mode, ())]
            if self.anchored and self.anchor_ratings is None:
                names.remove("anchor_ratings")
            if self.rerun:
                names.append("rerun")
            if self.reference_model is not None:  # only when set: older specs read as before
                names += ["reference_model", "reference_scenario"]
            if self.judges is not None:
                names += list(_PANEL_KEYS) + (["layer"] if self.layer is not None else [])
        return {name: _plain(getattr(self, name)) for name in names}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunSpec:
        """Parse a stored spec; `SpecError` naming the key for an unknown key or a bad value."""
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"tournament spec is not JSON: {exc}") from None
        return cls.from_dict(value)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> RunSpec:
        """A spec from its JSON object (see `from_json`)."""
        if not isinstance(value, Mapping):
            raise SpecError(f"tournament spec must be a JSON object, not {type(value).__name__}")
        unknown = sorted(set(value) - _READERS.keys())
        if unknown:
            raise SpecError(f"tournament spec: unknown key {', '.join(map(repr, unknown))} "
                            f"(known: {', '.join(sorted(_READERS))})")
        if "judge" not in value:
            raise SpecError("tournament spec: 'judge' is missing")
        fields: dict[str, Any] = {}
        for name, raw in value.items():
            if raw is None and name in _DEFAULT_WHEN_NULL:
                continue  # an unset value stored as null: the field's default
            try:
                fields[name] = _READERS[name](raw)
            except (TypeError, ValueError) as exc:
                raise SpecError(f"tournament spec: {name!r}: {exc}") from None
        return cls(**fields)


def _plain(value: Any) -> Any:
    """A field's value as JSON holds it."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


# ---- reading stored values: strict, as the API's requests are --------------------------


def _text(raw: Any) -> str:
    if not isinstance(raw, str) or not raw:
        raise TypeError(f"expected a non-empty string, got {raw!r}")
    return raw


def _integer(raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise TypeError(f"expected an integer, got {raw!r}")
    return raw


def _number(raw: Any) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise TypeError(f"expected a finite number, got {raw!r}")
    return float(raw)


def _flag(raw: Any) -> bool:
    if not isinstance(raw, bool):
        raise TypeError(f"expected true or false, got {raw!r}")
    return raw


def _names(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise TypeError(f"expected a list of names, got {raw!r}")
    return tuple(_text(item) for item in raw)


def _ratings(raw: Any) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise TypeError(f"expected an object of ratings, got {raw!r}")
    return {_text(name): _number(rating) for name, rating in raw.items()}


def _optional(read: Any) -> Any:
    return lambda raw: None if raw is None else read(raw)


def _enum(kind: type[Enum]) -> Any:
    def read(raw: Any) -> Enum:
        try:
            return kind(raw)
        except ValueError:
            raise ValueError(f"{raw!r} is not one of {', '.join(repr(m.value) for m in kind)}") from None

    return read


_READERS: dict[str, Any] = {
    "judge": _text,
    "mode": _enum(Mode),
    "order": _enum(OrderPolicy),
    "criteria": _text,
    "models": _optional(_names),
    "scenarios": _optional(_names),
    "questions": _optional(_names),
    "opponents": _optional(_integer),
    "seed": _optional(_integer),
    "budget": _optional(_number),
    "rpm": _optional(_number),
    "tpm": _optional(_number),
    "delivery": _enum(Delivery),
    "level": _enum(Level),
    "round_size": _integer,
    "max_calls": _optional(_integer),
    "target_ci_width": _optional(_number),
    "anchors": _optional(_names),
    "anchor_ratings": _optional(_ratings),
    "baseline": _optional(_text),
    "rerun": _flag,
    "source": _optional(_text),
    "layer": _optional(_integer),
    "reference_model": _optional(_text),
    "reference_scenario": _text,
    "judges": _optional(_names),
    "aggregation": _optional(_enum(Aggregation)),
    "panel": _optional(_text),
}
# Fields with a default that older rows (and unset options) may store as null.
_DEFAULT_WHEN_NULL = frozenset({"delivery", "level", "round_size"})
