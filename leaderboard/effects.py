"""Model and scenario effects, fitted together: how much a prompt scenario is worth across models.

A system is a (model, scenario) pair. Ranking models alone mixes in which scenarios they were
run under, and ranking scenarios alone mixes in the models; the additive Bradley-Terry model
separates the two: a system's log-strength is its model's effect plus its scenario's effect,
P(s beats t) = σ(m_s + c_s - m_t - c_t). It is fitted by Newton on the system pair counts
(one n×n matrix over systems, never one row per judgement), ties half a win each way, with the
same ridge as the player ratings. Effects are centred to mean 0 within the models and within
the scenarios and reported on the Elo scale, so "scenario X is +40" means a system gains 40 Elo
points by moving to X from the average scenario, whatever its model.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .battles import CHANNELS, PairCounts, accumulate, unpack
from .fit import (
    DEFAULT_RIDGE,
    Method,
    covariance,
    elo_scale,
    fit_log_strengths,
    half_widths,
)
from .players import SideRow

Effect = tuple[float, float, float]
"""(effect, low, high) in Elo points, relative to the mean model or the mean scenario."""


@dataclass(frozen=True)
class Effects:
    """Model and scenario effects with their intervals, and how many judgements they rest on."""

    models: dict[str, Effect]
    scenarios: dict[str, Effect]
    battles: int


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
    """Additive Bradley-Terry effects of models and scenarios, with closed-form intervals.

    Intervals are normal, from the inverse Hessian (`fisher`) or the sandwich, restricted to
    the centring constraints. An effect is only identified through systems that met: a model
    seen in one scenario only is compared through that scenario's other systems.
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
        return Effects(models={}, scenarios={}, battles=0)
    models = sorted({m for m, _ in systems})
    scenarios = sorted({s for _, s in systems})
    model_index = {m: i for i, m in enumerate(models)}
    scenario_index = {s: len(models) + i for i, s in enumerate(scenarios)}
    design = np.zeros((len(systems), len(models) + len(scenarios)))
    for row, (m, s) in enumerate(systems):
        design[row, model_index[m]] = 1.0
        design[row, scenario_index[s]] = 1.0
    groups = np.repeat([0, 1], [len(models), len(scenarios)])
    beta = fit_log_strengths(counts.points, ridge=ridge, tol=tol, max_iter=max_iter, design=design, groups=groups)
    cov = covariance(counts, beta, ridge=ridge, method=method, design=design, groups=groups)
    half = half_widths(cov, confidence, base, scale)
    effect = beta * elo_scale(base, scale)
    triples = [(float(e), float(e - h), float(e + h)) for e, h in zip(effect, half)]
    return Effects(
        models=dict(zip(models, triples[: len(models)])),
        scenarios=dict(zip(scenarios, triples[len(models):])),
        battles=battles,
    )
