"""Model and scenario effects, fitted together: how much a prompt scenario is worth across models.

A system is a (model, scenario) pair. Ranking models alone mixes in which scenarios they were
run under, and ranking scenarios alone mixes in the models; the additive Bradley-Terry model
separates the two: a system's log-strength is its model's effect plus its scenario's effect,
P(s beats t) = σ(m_s + c_s - m_t - c_t). It is fitted by Newton on the system pair counts
(one n×n matrix over systems, never one row per judgement), ties half a win each way, with the
same ridge as the player ratings.

The effects follow the board's rules. Systems no chain of verdicts links are never compared:
each connected group of systems (the system board's component, numbered as there) is fitted on
its own, and its effects are centred to mean 0 within its models and within its scenarios and
reported on the Elo scale, so "scenario X is +40" means a system of that group gains 40 Elo
points by moving to X from the group's average scenario, whatever its model. A pooled fit would
place one group against another by the ridge alone, with intervals thousands of Elo wide. And
an effect the verdicts do not bound (a group that won every game against the rest, or a model
never seen apart from one scenario: `leaderboard.separation`) is reported unbounded, with no
number: its estimate would be the prior's. A kind with one member in a group (one scenario
only) has nothing to compare and no effect there.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .battles import CHANNELS, PairCounts, accumulate, unpack
from .components import components
from .fit import (
    DEFAULT_RIDGE,
    Method,
    covariance,
    elo_scale,
    fit_log_strengths,
    half_widths,
)
from .players import SideRow, player_of
from .separation import bounded_contrasts
from .types import Level


class Effect(NamedTuple):
    """An effect in Elo points with its interval, relative to the group's mean model (or mean
    scenario); `bounded` False: the verdicts do not bound it, and all three numbers are NaN."""

    effect: float
    low: float
    high: float
    bounded: bool = True


@dataclass(frozen=True)
class EffectGroup:
    """The effects within one connected group of systems: `component` is its number on the
    system board, `systems` how many it holds, `battles` the judgements between them. Models
    and scenarios best first (unbounded ones where their prior-set estimates put them)."""

    component: int
    systems: int
    models: dict[str, Effect]
    scenarios: dict[str, Effect]
    battles: int


@dataclass(frozen=True)
class Effects:
    """Model and scenario effects per connected group of systems (1 first), and how many
    judgements they rest on in all."""

    groups: tuple[EffectGroup, ...]
    battles: int

    def group(self, component: int) -> EffectGroup:
        """The group numbered `component` (KeyError when there is none)."""
        for found in self.groups:
            if found.component == component:
                return found
        raise KeyError(component)


def _system_counts(rows: Sequence[SideRow]) -> tuple[list[tuple[str, str]], PairCounts, int]:
    """(systems, their pair counts, judgements used); rows with one system on both sides are skipped."""
    index: dict[tuple[str, str], int] = {}
    a_ids: list[int] = []
    b_ids: list[int] = []
    scores: list[float] = []
    for row in rows:
        a, b = (row.a_model, row.a_scenario), (row.b_model, row.b_scenario)
        if a == b:
            continue
        scores.append(unpack((a, b, row.winner))[2])  # type: ignore[arg-type]
        a_ids.append(index.setdefault(a, len(index)))
        b_ids.append(index.setdefault(b, len(index)))
    systems = list(index)
    stack = np.zeros((CHANNELS, len(systems), len(systems)))
    scores_array = np.asarray(scores, dtype=float)
    accumulate(stack, np.asarray(a_ids, dtype=np.intp), np.asarray(b_ids, dtype=np.intp), scores_array, np.ones_like(scores_array))
    names = [f"{m}\x00{s}" for m, s in systems]
    return systems, PairCounts.from_stack(names, stack), len(scores)


def fit_effects(
    rows: Sequence[SideRow],
    *,
    ridge: float = DEFAULT_RIDGE,
    confidence: float = 0.95,
    base: float = 10.0,
    scale: float = 400.0,
    method: Method = "fisher",
    tol: float = 1e-10,
    max_iter: int = 100,
) -> Effects:
    """Additive Bradley-Terry effects of models and scenarios per connected group of systems,
    with closed-form intervals.

    Intervals are normal, from the inverse Hessian (`fisher`) or the sandwich, restricted to
    the centring constraints. An effect is only identified through systems that met: a model
    seen in one scenario only is compared through that scenario's other systems, and one the
    verdicts do not bound is NaN with `bounded` False (see the module's docstring).
    Raises `ConvergenceError` like `bradley_terry`, ValueError for an unknown winner.
    """
    systems, counts, used = _system_counts(rows)
    return fit_effects_counts(systems, counts, used, ridge=ridge, confidence=confidence, base=base, scale=scale,
                              method=method, tol=tol, max_iter=max_iter)


def fit_effects_counts(
    systems: Sequence[tuple[str, str]],
    counts: PairCounts,
    battles: int,
    *,
    ridge: float = DEFAULT_RIDGE,
    confidence: float = 0.95,
    base: float = 10.0,
    scale: float = 400.0,
    method: Method = "fisher",
    tol: float = 1e-10,
    max_iter: int = 100,
) -> Effects:
    """`fit_effects` from system pair counts already kept: `systems[i]` is the (model, scenario)
    of `counts.players[i]`, `battles` the judgements counted. Why: a service that keeps the
    system board's counts current one judgement at a time fits the effects from them without
    reading a million judgements again."""
    if len(systems) != len(counts.players):
        raise ValueError(f"{len(systems)} systems named for {len(counts.players)} players counted")
    if not systems:
        return Effects(groups=(), battles=0)
    # The system board's order (its players' names), so the groups are numbered as there.
    # sorted apart from np.array: inside its overloads mypy checks the lambda with i: Any and
    # misreads *systems[i] (python/mypy#14648)
    by_name = sorted(range(len(systems)), key=lambda i: player_of(*systems[i], Level.SYSTEM))
    order = np.array(by_name, dtype=np.intp)
    systems, counts = [systems[i] for i in order], counts.take(order)
    labels = components(counts.games)
    groups = []
    for piece in range(1, int(labels.max()) + 1):
        index = np.flatnonzero(labels == piece)
        groups.append(_fit_group(piece, [systems[i] for i in index], counts.take(index), ridge=ridge,
                                 confidence=confidence, base=base, scale=scale, method=method, tol=tol,
                                 max_iter=max_iter))
    return Effects(groups=tuple(groups), battles=battles)


def _fit_group(
    component: int, systems: list[tuple[str, str]], counts: PairCounts, *, ridge: float, confidence: float,
    base: float, scale: float, method: Method, tol: float, max_iter: int,
) -> EffectGroup:
    """The effects of one connected group of systems."""
    models = sorted({m for m, _ in systems})
    scenarios = sorted({s for _, s in systems})
    model_index = {m: i for i, m in enumerate(models)}
    scenario_index = {s: len(models) + i for i, s in enumerate(scenarios)}
    design = np.zeros((len(systems), len(models) + len(scenarios)))
    for row, (m, s) in enumerate(systems):
        design[row, model_index[m]] = 1.0
        design[row, scenario_index[s]] = 1.0
    kinds = np.repeat([0, 1], [len(models), len(scenarios)])
    beta = fit_log_strengths(counts.points, ridge=ridge, tol=tol, max_iter=max_iter, design=design, groups=kinds)
    cov = covariance(counts, beta, ridge=ridge, method=method, design=design, groups=kinds)
    half = half_widths(cov, confidence, base, scale)
    effect = beta * elo_scale(base, scale)
    centred = np.eye(len(kinds)) - (kinds[:, None] == kinds[None, :]) / np.bincount(kinds)[kinds][:, None]
    bounded = bounded_contrasts(counts.points, design, centred)
    nan = math.nan
    found = [Effect(float(e), float(e - h), float(e + h)) if ok else Effect(nan, nan, nan, False)
             for e, h, ok in zip(effect, half, bounded)]

    def best_first(names: list[str], offset: int) -> dict[str, Effect]:
        if len(names) < 2:  # one model (or scenario) in the group: nothing to compare it with
            return {}
        ranked = sorted(range(len(names)), key=lambda i: (-round(float(effect[offset + i]), 9), names[i]))
        return {names[i]: found[offset + i] for i in ranked}

    return EffectGroup(
        component=component,
        systems=len(systems),
        models=best_first(models, 0),
        scenarios=best_first(scenarios, len(models)),
        battles=int(round(float(np.triu(counts.games, 1).sum()))),
    )
