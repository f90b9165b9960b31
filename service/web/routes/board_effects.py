"""`GET /api/leaderboard/effects`: the response of model and scenario effects, per group of systems.

Kept beside the leaderboard route rather than in it: the effects' response fields and the map
from `leaderboard.effects.Effects` (fitted per connected group, unbounded where the verdicts do
not bound them) to rows, which the page's effects tables share (`effect_rows`), so the API and
the page show one figure.
"""
from __future__ import annotations

import math

from pydantic import BaseModel, Field

from leaderboard.effects import Effect, Effects
from service.web.routes.board_slice import Votes
from service.web.routes.judge_choice import JudgedOut, with_judge_rule


class EffectRow(BaseModel):
    """An effect in Elo points with its 95% interval, within its group of systems (`component`,
    numbered as on the system board); `bounded` false: the verdicts do not bound it, and
    `effect`, `ci_low` and `ci_high` are null (the estimate would be the prior's)."""

    component: int = 1
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    bounded: bool = True


class ModelEffect(EffectRow):
    model: str


class ScenarioEffect(EffectRow):
    scenario: str


class EffectGroupOut(BaseModel):
    """One connected group of systems the effects were fitted in: its number on the system
    board, how many systems it holds and the judgements between them."""

    component: int
    systems: int
    battles: int


@with_judge_rule
class EffectsOut(JudgedOut):
    """How much each model and each scenario adds to a system's strength, by one judge's
    verdicts, fitted per connected group of systems as the board fits its groups: `groups`
    (1 first; `components` counts them), and the rows by group, largest first within one. A
    model (or scenario) appears once per group it played in; a group with one scenario (or one
    model) has no scenario (model) rows. Effects compare only within a group. `turn` and
    `votes`: which verdicts, as on the board (one turn; each pair's majority)."""

    tournament: int | None
    turn: int | None = None
    votes: Votes = Votes.EACH
    components: int = 0
    groups: list[EffectGroupOut] = Field(default_factory=list)
    models: list[ModelEffect]
    scenarios: list[ScenarioEffect]
    battles: int
    revision: int


EffectLine = tuple[str, float | None, float | None, float | None]


def effect_rows(effects: dict[str, Effect]) -> list[EffectLine]:
    """(name, effect, low, high) in the order given (best first), JSON-safe: None for what the
    verdicts do not bound."""
    return [(name, _finite(e.effect), _finite(e.low), _finite(e.high)) for name, e in effects.items()]


def effects_fields(effects: Effects) -> dict[str, object]:
    """The `EffectsOut` fields the effects themselves give: groups, rows and counts."""
    models, scenarios = [], []
    for group in effects.groups:
        for (name, e, low, high), found in zip(effect_rows(group.models), group.models.values()):
            models.append(ModelEffect(model=name, component=group.component, effect=e, ci_low=low, ci_high=high,
                                      bounded=found.bounded))
        for (name, e, low, high), found in zip(effect_rows(group.scenarios), group.scenarios.values()):
            scenarios.append(ScenarioEffect(scenario=name, component=group.component, effect=e, ci_low=low,
                                            ci_high=high, bounded=found.bounded))
    return {
        "components": len(effects.groups),
        "groups": [EffectGroupOut(component=g.component, systems=g.systems, battles=g.battles) for g in effects.groups],
        "models": models,
        "scenarios": scenarios,
        "battles": int(effects.battles),
    }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
