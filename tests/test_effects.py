"""Model and scenario effects fitted together: additive truth recovered, interactions not invented."""
from __future__ import annotations

import math

import numpy as np
import pytest

from leaderboard.effects import Effects, fit_effects
from leaderboard.players import SideRow
from leaderboard.ratings import bradley_terry
from leaderboard.types import Winner

MODELS = {"big": 150.0, "mid": 30.0, "small": -180.0}          # Elo points, mean 0
SCENARIOS = {"cot": 80.0, "plain": -20.0, "terse": -60.0}      # Elo points, mean 0


def simulate(rng: np.random.Generator, strength: dict[tuple[str, str], float], count: int, tie_rate: float = 0.0) -> list[SideRow]:
    """Judgements between random distinct systems drawn from Bradley-Terry on the given ratings."""
    systems = list(strength)
    rows = []
    for q in range(count):
        i, j = rng.choice(len(systems), size=2, replace=False)
        (am, asc), (bm, bsc) = systems[i], systems[j]
        p = 1.0 / (1.0 + 10 ** ((strength[systems[j]] - strength[systems[i]]) / 400))
        u = rng.random()
        winner = Winner.TIE if u < tie_rate else (Winner.A if rng.random() < p else Winner.B)
        rows.append(SideRow(am, asc, bm, bsc, winner, f"q{q % 200}"))
    return rows


def additive() -> dict[tuple[str, str], float]:
    return {(m, s): MODELS[m] + SCENARIOS[s] for m in MODELS for s in SCENARIOS}


def test_recovers_known_additive_effects() -> None:
    rows = simulate(np.random.default_rng(20240607), additive(), 20_000)
    effects = fit_effects(rows)
    assert isinstance(effects, Effects) and effects.battles == len(rows)
    assert set(effects.models) == set(MODELS) and set(effects.scenarios) == set(SCENARIOS)
    for truth, fitted in ((MODELS, effects.models), (SCENARIOS, effects.scenarios)):
        assert sum(e for e, _, _ in fitted.values()) == pytest.approx(0.0, abs=1e-6)  # centred
        for name, (effect, low, high) in fitted.items():
            assert low < effect < high
            assert 5 < high - low < 40  # ~2,200 games per level: a standard error of a few points
            assert abs(effect - truth[name]) < 15, name
            assert low < truth[name] < high, name


def test_intervals_cover_at_the_nominal_rate() -> None:
    rng = np.random.default_rng(3)
    covered = total = 0
    for _ in range(60):
        effects = fit_effects(simulate(rng, additive(), 1_500))
        for truth, fitted in ((MODELS, effects.models), (SCENARIOS, effects.scenarios)):
            covered += sum(low < truth[n] < high for n, (_, low, high) in fitted.items())
            total += len(fitted)
    assert 0.90 < covered / total < 0.99  # 360 intervals at 95%: sd of the rate ~1.1%


def test_pure_interaction_has_no_main_effects() -> None:
    # Non-additive: each model is strong in "its" scenario only (a crossed 2×2 design). Main
    # effects are zero by symmetry; the additive model must not invent them, while the system
    # ratings show the interaction plainly.
    strength = {("m1", "s1"): 100.0, ("m1", "s2"): -100.0, ("m2", "s1"): -100.0, ("m2", "s2"): 100.0}
    rows = simulate(np.random.default_rng(11), strength, 12_000)
    effects = fit_effects(rows)
    for fitted in (effects.models, effects.scenarios):
        for effect, low, high in fitted.values():
            assert abs(effect) < 15 and low < 0 < high
    systems = bradley_terry([(f"{r.a_model}/{r.a_scenario}", f"{r.b_model}/{r.b_scenario}", r.winner) for r in rows])
    assert systems["m1/s1"] - systems["m1/s2"] > 150  # the interaction is real, effects can't show it


def test_additive_effects_sum_to_system_ratings() -> None:
    rows = simulate(np.random.default_rng(5), additive(), 20_000)
    effects = fit_effects(rows)
    systems = bradley_terry([(f"{r.a_model}/{r.a_scenario}", f"{r.b_model}/{r.b_scenario}", r.winner) for r in rows])
    for (m, s) in additive():
        predicted = 1000 + effects.models[m][0] + effects.scenarios[s][0]
        assert systems[f"{m}/{s}"] == pytest.approx(predicted, abs=25)


def test_ties_count_half_and_same_system_rows_are_skipped() -> None:
    level = [
        SideRow("a", "x", "b", "y", Winner.TIE, "q1"),
        SideRow("a", "y", "b", "x", Winner.TIE, "q1"),
        SideRow("a", "x", "a", "x", Winner.A, "q2"),  # one system on both sides: skipped
    ]
    effects = fit_effects(level)
    assert effects.battles == 2
    for fitted in (effects.models, effects.scenarios):
        assert [e for e, _, _ in fitted.values()] == pytest.approx([0.0, 0.0], abs=1e-9)
    # Same model, two scenarios: 3 points to 1 for y, so y - x = 400·log10(3) (no ridge), ±half.
    rows = [SideRow("a", "y", "a", "x", Winner.A, "q")] * 2 + [SideRow("a", "x", "a", "y", Winner.TIE, "q")] * 2
    got = fit_effects(rows, ridge=0.0)
    assert got.scenarios["y"][0] == pytest.approx(200 * math.log10(3), abs=1e-6)
    assert got.scenarios["x"][0] == pytest.approx(-200 * math.log10(3), abs=1e-6)
    assert got.models["a"] == pytest.approx((0.0, 0.0, 0.0), abs=1e-6)  # one model: nothing to compare


def test_no_rows() -> None:
    assert fit_effects([]) == Effects(models={}, scenarios={}, battles=0)
    with pytest.raises(ValueError):
        fit_effects([SideRow("a", "x", "b", "x", "left", "q")])  # type: ignore[arg-type]


def test_effects_from_kept_counts_equal_effects_from_rows() -> None:
    """`fit_effects_counts` on the counts of the same rows, systems in any order, is `fit_effects`."""
    from leaderboard.effects import _system_counts, fit_effects_counts

    rng = np.random.default_rng(7)
    rows = simulate(rng, additive(), 1_500)
    systems, counts, used = _system_counts(rows)
    order = rng.permutation(len(systems))  # a service's tally keeps its systems in name order, not these
    got = fit_effects_counts([systems[i] for i in order], counts.take(order), used)
    want = fit_effects(rows)
    assert got.battles == want.battles == used
    for mine, theirs in ((got.models, want.models), (got.scenarios, want.scenarios)):
        assert mine.keys() == theirs.keys()
        for name, triple in theirs.items():
            assert mine[name] == pytest.approx(triple, abs=1e-6)
    with pytest.raises(ValueError, match="systems named"):
        fit_effects_counts(systems[:-1], counts, used)
