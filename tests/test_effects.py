"""Model and scenario effects fitted together: additive truth recovered, interactions not invented,
and the board's rules kept: each connected group of systems fitted apart, and an effect the
verdicts do not bound reported unbounded (checked against scipy's linear programming)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from leaderboard.effects import EffectGroup, Effects, fit_effects
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


def only(effects: Effects) -> EffectGroup:
    """The one group of systems the effects were fitted in."""
    assert len(effects.groups) == 1, effects.groups
    return effects.groups[0]


def test_recovers_known_additive_effects() -> None:
    rows = simulate(np.random.default_rng(20240607), additive(), 20_000)
    fitted_all = fit_effects(rows)
    effects = only(fitted_all)
    assert isinstance(fitted_all, Effects) and fitted_all.battles == effects.battles == len(rows)
    assert (effects.component, effects.systems) == (1, 9)
    assert set(effects.models) == set(MODELS) and set(effects.scenarios) == set(SCENARIOS)
    for truth, fitted in ((MODELS, effects.models), (SCENARIOS, effects.scenarios)):
        assert sum(e for e, _, _, _ in fitted.values()) == pytest.approx(0.0, abs=1e-6)  # centred
        assert [e for e, _, _, _ in fitted.values()] == sorted((e for e, _, _, _ in fitted.values()), reverse=True)
        for name, (effect, low, high, bounded) in fitted.items():
            assert bounded
            assert low < effect < high
            assert 5 < high - low < 40  # ~2,200 games per level: a standard error of a few points
            assert abs(effect - truth[name]) < 15, name
            assert low < truth[name] < high, name


def test_intervals_cover_at_the_nominal_rate() -> None:
    rng = np.random.default_rng(3)
    covered = total = 0
    for _ in range(60):
        effects = only(fit_effects(simulate(rng, additive(), 1_500)))
        for truth, fitted in ((MODELS, effects.models), (SCENARIOS, effects.scenarios)):
            covered += sum(low < truth[n] < high for n, (_, low, high, _) in fitted.items())
            total += len(fitted)
    assert 0.90 < covered / total < 0.99  # 360 intervals at 95%: sd of the rate ~1.1%


def test_pure_interaction_has_no_main_effects() -> None:
    # Non-additive: each model is strong in "its" scenario only (a crossed 2×2 design). Main
    # effects are zero by symmetry; the additive model must not invent them, while the system
    # ratings show the interaction plainly.
    strength = {("m1", "s1"): 100.0, ("m1", "s2"): -100.0, ("m2", "s1"): -100.0, ("m2", "s2"): 100.0}
    rows = simulate(np.random.default_rng(11), strength, 12_000)
    effects = only(fit_effects(rows))
    for fitted in (effects.models, effects.scenarios):
        for effect, low, high, _ in fitted.values():
            assert abs(effect) < 15 and low < 0 < high
    systems = bradley_terry([(f"{r.a_model}/{r.a_scenario}", f"{r.b_model}/{r.b_scenario}", r.winner) for r in rows])
    assert systems["m1/s1"] - systems["m1/s2"] > 150  # the interaction is real, effects can't show it


def test_additive_effects_sum_to_system_ratings() -> None:
    rows = simulate(np.random.default_rng(5), additive(), 20_000)
    effects = only(fit_effects(rows))
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
    # a/x-b/y and a/y-b/x never met: two groups of two systems, and in each the model and the
    # scenario changed together, so the verdicts cannot tell one effect from the other
    assert [(g.component, g.systems, g.battles) for g in effects.groups] == [(1, 2, 1), (2, 2, 1)]
    for group in effects.groups:
        for fitted in (group.models, group.scenarios):
            assert [e.bounded for e in fitted.values()] == [False, False]
            assert all(math.isnan(number) for e in fitted.values() for number in e[:3])
    # Same model, two scenarios: 3 points to 1 for y, so y - x = 400·log10(3) (no ridge), ±half.
    rows = [SideRow("a", "y", "a", "x", Winner.A, "q")] * 2 + [SideRow("a", "x", "a", "y", Winner.TIE, "q")] * 2
    got = only(fit_effects(rows, ridge=0.0))
    assert got.scenarios["y"][0] == pytest.approx(200 * math.log10(3), abs=1e-6)
    assert got.scenarios["x"][0] == pytest.approx(-200 * math.log10(3), abs=1e-6)
    assert got.models == {}  # one model: nothing to compare


def test_no_rows() -> None:
    assert fit_effects([]) == Effects(groups=(), battles=0)
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
    for mine, theirs in ((only(got).models, only(want).models), (only(got).scenarios, only(want).scenarios)):
        assert mine.keys() == theirs.keys()
        for name, triple in theirs.items():
            assert mine[name] == pytest.approx(triple, abs=1e-6)
    with pytest.raises(ValueError, match="systems named"):
        fit_effects_counts(systems[:-1], counts, used)


def round_robin(rng: np.random.Generator, strength: dict[tuple[str, str], float], questions: int,
                prefix: str) -> list[SideRow]:
    """Every pair of systems once per question, Bradley-Terry on the given ratings, a tie one time in ten."""
    systems = list(strength)
    rows = []
    for q in range(questions):
        for i, (am, asc) in enumerate(systems):
            for bm, bsc in systems[i + 1:]:
                p = 1.0 / (1.0 + 10 ** ((strength[(bm, bsc)] - strength[(am, asc)]) / 400))
                u = rng.random()
                winner = Winner.TIE if u < 0.1 else (Winner.A if u < 0.1 + 0.9 * p else Winner.B)
                rows.append(SideRow(am, asc, bm, bsc, winner, f"{prefix}{q}"))
    return rows


FOUR_BY_TWO = {(m, s): e + f for m, e in {"gpt4": 120.0, "claude": 60.0, "llama": -60.0, "mistral": -120.0}.items()
               for s, f in {"s1": 50.0, "s2": -50.0}.items()}
ORDERED = [SideRow("p1", "z", "p2", "z", Winner.A, "o1"), SideRow("p2", "z", "p3", "z", Winner.A, "o2"),
           SideRow("p1", "z", "p3", "z", Winner.A, "o3")]  # three planted players in a perfect order


def pooled_widths(rows: list[SideRow]) -> dict[str, float]:
    """The model effects' interval widths of one additive fit over every system, linked or not
    (what the effects were before they followed the board's groups), written out plainly."""
    from leaderboard.battles import pair_counts
    from leaderboard.fit import covariance, fit_log_strengths, half_widths

    battles = [((r.a_model, r.a_scenario), (r.b_model, r.b_scenario), r.winner) for r in rows]
    counts = pair_counts([(f"{a[0]}\x00{a[1]}", f"{b[0]}\x00{b[1]}", w) for a, b, w in battles])
    systems = [tuple(name.split("\x00")) for name in counts.players]
    models, scenarios = sorted({m for m, _ in systems}), sorted({s for _, s in systems})
    design = np.zeros((len(systems), len(models) + len(scenarios)))
    for i, (m, s) in enumerate(systems):
        design[i, models.index(m)] = design[i, len(models) + scenarios.index(s)] = 1.0
    kinds = np.repeat([0, 1], [len(models), len(scenarios)])
    beta = fit_log_strengths(counts.points, design=design, groups=kinds)
    half = half_widths(covariance(counts, beta, ridge=0.01, design=design, groups=kinds), 0.95, 10.0, 400.0)
    return {m: 2 * float(h) for m, h in zip(models, half)}


def test_each_group_of_systems_is_fitted_apart_as_the_board_does() -> None:
    rng = np.random.default_rng(24)
    main = round_robin(rng, FOUR_BY_TWO, 20, "q")
    other = round_robin(rng, {("x1", "t1"): 50.0, ("x1", "t2"): 0.0, ("x2", "t1"): 0.0, ("x2", "t2"): -50.0}, 10, "r")
    alone = only(fit_effects(main))
    together = fit_effects(main + other + ORDERED)
    assert [(g.component, g.systems, g.battles) for g in together.groups] == [
        (1, 8, len(main)), (2, 4, len(other)), (3, 3, 3)]
    assert together.battles == len(main + other + ORDERED)
    # the tournament's effects are the same whatever else the store holds
    first = together.group(1)
    for mine, theirs in ((first.models, alone.models), (first.scenarios, alone.scenarios)):
        assert list(mine) == list(theirs)
        for name, effect in theirs.items():
            assert mine[name] == pytest.approx(effect, abs=1e-6)
            assert effect.bounded and 0 < effect.high - effect.low < 200, (name, effect)
    # pooled into one fit, the groups' offsets rest on the ridge alone: thousands of Elo wide
    assert min(pooled_widths(main + other + ORDERED)[m] for m in alone.models) > 1000
    # the groups are the system board's components, numbered alike
    from leaderboard.board import build_board

    board = build_board([(f"{r.a_model} + {r.a_scenario}", f"{r.b_model} + {r.b_scenario}", r.winner, r.question_id)
                         for r in main + other + ORDERED])
    for group in together.groups:
        members = {r.player for r in board if r.component == group.component}
        assert {p.split(" + ")[0] for p in members} == set(group.models)


def test_a_perfectly_ordered_group_has_unbounded_effects() -> None:
    rng = np.random.default_rng(5)
    main = round_robin(rng, FOUR_BY_TWO, 20, "q")
    effects = fit_effects(main + ORDERED)
    ordered = effects.group(2)
    assert (ordered.systems, list(ordered.models), ordered.scenarios) == (3, ["p1", "p2", "p3"], {})
    for effect in ordered.models.values():  # the board calls this group unbounded; so do its effects
        assert not effect.bounded and all(math.isnan(number) for number in effect[:3])
    assert all(e.bounded for e in effects.group(1).models.values())  # the other group keeps its own


@pytest.mark.parametrize(("order", "bounded"), [
    ([("m1", "s1"), ("m1", "s2"), ("m2", "s1"), ("m2", "s2")], False),  # additive: m1 and s1 better by any amount
    ([("m1", "s1"), ("m2", "s2"), ("m1", "s2"), ("m2", "s1")], True),  # no additive fit follows it all the way
])
def test_a_clean_order_bounds_the_effects_only_when_no_additive_fit_follows_it(
        order: list[tuple[str, str]], bounded: bool) -> None:
    rows = [SideRow(*order[i], *order[j], Winner.A, f"q{i}{j}") for i in range(4) for j in range(i + 1, 4)]
    group = only(fit_effects(rows))
    assert [e.bounded for e in (*group.models.values(), *group.scenarios.values())] == [bounded] * 4
    if bounded:  # then the plain maximum exists: the ridge-free fit converges to nearly the same effects
        free = only(fit_effects(rows, ridge=0.0))
        assert [e.effect for e in free.models.values()] == pytest.approx(
            [e.effect for e in group.models.values()], abs=5)


def test_one_unbeaten_system_leaves_the_effects_bounded() -> None:
    # m1/s1 beat every other system, which beat each other in a cycle: the system board cannot bound
    # m1/s1, but m1 and s1 are each pinned by their other systems, so every effect is bounded
    a, b, c, d = ("m1", "s1"), ("m1", "s2"), ("m2", "s1"), ("m2", "s2")
    rows = [SideRow(*w, *l, Winner.A, f"q{i}") for i, (w, l) in enumerate([(a, b), (a, c), (a, d), (b, c), (c, d), (d, b)])]
    group = only(fit_effects(rows))
    assert all(e.bounded and math.isfinite(e.high - e.low) for e in (*group.models.values(), *group.scenarios.values()))


def test_bounded_contrasts_agree_with_a_linear_programme() -> None:
    """An effect is unbounded when some direction of the parameters keeps every verdict's winner
    at or above its loser and moves it: asked of scipy's linprog on every verdict directly (no
    strongly connected pieces, no null spaces), over 120 small random stores."""
    linprog = pytest.importorskip("scipy.optimize").linprog
    from leaderboard.components import components
    from leaderboard.separation import bounded_contrasts

    rng = np.random.default_rng(11)
    seen = {True: 0, False: 0}
    for _ in range(120):
        models, scenarios = int(rng.integers(2, 4)), int(rng.integers(2, 4))
        systems = [(m, s) for m in range(models) for s in range(scenarios)]
        points = np.zeros((len(systems), len(systems)))
        for _ in range(int(rng.integers(2, 14))):
            i, j = rng.choice(len(systems), size=2, replace=False)
            if rng.random() < 0.15:
                points[i, j] += 0.5
                points[j, i] += 0.5
            else:
                points[i, j] += 1.0
        members = np.flatnonzero(components(points + points.T) == 1)
        design = np.zeros((members.size, models + scenarios))
        for row, k in enumerate(members):
            design[row, systems[k][0]] = design[row, models + systems[k][1]] = 1.0
        design = design[:, design.any(axis=0)]
        kinds = np.repeat([0, 1], [int(design[:, :models].any(axis=0).sum()), design.shape[1] - int(
            design[:, :models].any(axis=0).sum())])
        contrasts = np.eye(len(kinds)) - (kinds[:, None] == kinds[None, :]) / np.bincount(kinds)[kinds][:, None]
        sub = points[np.ix_(members, members)]
        winners, losers = np.nonzero(sub > 0)
        keeps_order = -(design[winners] - design[losers])  # -(x_w - x_l) <= 0
        got = bounded_contrasts(sub, design, contrasts)
        for k, contrast in enumerate(contrasts):
            reach = [linprog(sign * contrast, A_ub=keeps_order, b_ub=np.zeros(len(winners)),
                             bounds=[(-1, 1)] * design.shape[1], method="highs").fun for sign in (1, -1)]
            want = max(-value for value in reach) < 1e-7
            assert got[k] == want, (systems, sub, k)
            seen[want] += 1
    assert min(seen.values()) > 100, seen  # both kinds of effect, many times
