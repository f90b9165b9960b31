"""Rating maths: online Elo and Bradley-Terry, golden cases, simulations and published figures.

The golden files: tests/data/llmfao_tiny (hand-made, its Elo replayed by hand and its
Bradley-Terry scores exact by construction: tests/data/README.md) in any checkout, and evalica's
goldens in ../shared/data, a required part (tests/required.py)."""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from leaderboard.ratings import (
    ConvergenceError,
    bootstrap_intervals,
    bradley_terry,
    bradley_terry_intervals,
    online_elo,
)
from leaderboard.types import Battle, Winner
from tests.required import SHARED_DATA, SYNTHETIC_DATA, skip_required

GOLDEN = SHARED_DATA / "llmfao" / "evalica_golden"
TINY = SYNTHETIC_DATA / "llmfao_tiny"
POSITION = {"left": "A", "right": "B", "tie": "TIE"}  # llmfao / evalica: winner names a display slot
LOG10_3 = math.log10(3.0)


def load_comparisons(path: Path) -> list[Battle]:
    """Battles (left, right) in file order; `prompt` as the question when the file has one."""
    if not path.exists():
        skip_required("shared-data", f"missing {path}")
    with path.open(newline="", encoding="utf-8") as handle:
        return [
            Battle(a=row["left"], b=row["right"], winner=Winner(POSITION[row["winner"]]), question_id=row.get("prompt"))
            for row in csv.DictReader(handle)
        ]


def load_golden(dataset: str, algorithm: str) -> dict[str, float]:
    path = DATASETS[dataset][1]
    if not path.exists():
        skip_required("shared-data", f"missing {path}")
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["item"]: float(row["score"]) for row in csv.DictReader(handle) if row["algorithm"] == algorithm}


# name -> (comparisons, golden scores); "tiny" is in the repo, the others in ../shared/data.
DATASETS = {
    "tiny": (TINY / "comparisons.csv", TINY / "golden.csv"),
    "llmfao": (SHARED_DATA / "llmfao" / "crowd-comparisons.csv", GOLDEN / "llmfao-golden.csv"),
    "simple": (GOLDEN / "simple.csv", GOLDEN / "simple-golden.csv"),
    "food": (GOLDEN / "food.csv", GOLDEN / "food-golden.csv"),
}


# ---------------------------------------------------------------- online Elo


def test_online_elo_by_hand() -> None:
    battles = [("a", "b", "A"), ("a", "c", "TIE"), ("c", "b", "B")]
    # 1. a-b at 1000/1000: expected 0.5, a wins: a = 1000 + 32*0.5 = 1016, b = 984.
    # 2. a-c tie: E_a = 1/(1 + 10^((1000-1016)/400)) = 1/(1 + 10^-0.04) = 0.5230095873;
    #    delta = 32*(0.5 - 0.5230095873) = -0.7363067935: a = 1015.2636932065, c = 1000.7363067935.
    # 3. c-b, b wins: E_c = 1/(1 + 10^((984 - 1000.7363067935)/400)) = 0.5240668692;
    #    delta = 32*(0 - 0.5240668692) = -16.7701398146: c = 983.9661669789, b = 1000.7701398146.
    assert online_elo(battles) == pytest.approx(
        {"a": 1015.2636932065, "b": 1000.7701398146, "c": 983.9661669789}, abs=1e-6
    )


def test_online_elo_k_initial_and_order() -> None:
    assert online_elo([("x", "y", Winner.B)], k=10, initial=1500) == {"x": 1495.0, "y": 1505.0}
    forward = online_elo([("a", "b", "A"), ("a", "b", "B")])
    backward = online_elo([("a", "b", "B"), ("a", "b", "A")])
    assert forward["a"] < 1000 < backward["a"]  # the later result counts more: order matters


def test_online_elo_takes_battles_tuples_and_weights_alike() -> None:
    battles = [Battle("a", "b", Winner.A), Battle("b", "c", Winner.TIE), Battle("c", "a", Winner.A)]
    tuples = [("a", "b", "A"), ("b", "c", "TIE"), ("c", "a", Winner.A)]
    assert online_elo(battles) == online_elo(tuples)
    assert online_elo([Battle("a", "b", Winner.A, weight=2.0)]) == online_elo([("a", "b", "A")], k=64)


@pytest.mark.parametrize("bad", [("a", "b", "left"), ("a", "a", "A"), Battle("a", "b", Winner.A, weight=-1.0)])
def test_malformed_battles_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError):
        online_elo([bad])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        bradley_terry([bad])  # type: ignore[list-item]


@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_online_elo_reproduces_evalica(dataset: str) -> None:
    battles = load_comparisons(DATASETS[dataset][0])
    golden = load_golden(dataset, "elo")
    ours = online_elo(battles, k=4.0)
    assert set(ours) == set(golden)
    assert max(abs(ours[p] - golden[p]) for p in golden) < 1e-6


# ---------------------------------------------------------------- Bradley-Terry


def test_bradley_terry_symmetric_cases_are_level() -> None:
    assert bradley_terry([]) == {}
    for ridge in (0.0, 0.01, 1.0):
        assert bradley_terry([("a", "b", "A"), ("a", "b", "B")], ridge=ridge) == pytest.approx({"a": 1000.0, "b": 1000.0})
        cycle = [("rock", "scissors", "A"), ("scissors", "paper", "A"), ("paper", "rock", "A")]
        assert bradley_terry(cycle, ridge=ridge) == pytest.approx({p: 1000.0 for p in ("rock", "paper", "scissors")})
        assert bradley_terry([("a", "b", "TIE")], ridge=ridge) == pytest.approx({"a": 1000.0, "b": 1000.0})


def test_bradley_terry_two_players_by_hand() -> None:
    # a took 3 of 4: the MLE odds are 3, so a - b = 400*log10(3) = 190.85 around a mean of 1000.
    battles = [("a", "b", "A")] * 3 + [("a", "b", "B")]
    assert bradley_terry(battles, ridge=0) == pytest.approx({"a": 1000 + 200 * LOG10_3, "b": 1000 - 200 * LOG10_3}, abs=1e-6)
    # Same data on the natural-log scale, centred elsewhere: a - b = ln 3.
    natural = bradley_terry(battles, ridge=0, base=math.e, scale=1.0, mean=0.0)
    assert natural == pytest.approx({"a": math.log(3) / 2, "b": -math.log(3) / 2}, abs=1e-9)


def test_bradley_terry_ties_weights_and_tuples() -> None:
    reference = bradley_terry([("a", "b", "A")] * 3 + [("a", "b", "B")], ridge=0)
    ties = [("a", "b", "A")] * 2 + [("b", "a", "TIE")] * 2  # 2 wins + 2 ties = 3 points to 1
    assert bradley_terry(ties, ridge=0) == pytest.approx(reference, abs=1e-6)
    weighted = [Battle("a", "b", Winner.A, weight=3.0), Battle("b", "a", Winner.A)]
    assert bradley_terry(weighted, ridge=0) == pytest.approx(reference, abs=1e-6)


def test_bradley_terry_ratings_average_to_mean() -> None:
    battles = [("a", "b", "A"), ("b", "c", "A"), ("c", "a", "B"), ("c", "d", "TIE"), ("d", "a", "B"), ("b", "d", "B")]
    for mean in (0.0, 1000.0, 1500.0):
        ratings = bradley_terry(battles, ridge=0.1, mean=mean)
        assert sum(ratings.values()) / len(ratings) == pytest.approx(mean, abs=1e-9)


def test_ridge_shrinks_towards_the_mean() -> None:
    battles = [("a", "b", "A")] * 3 + [("a", "b", "B")]
    plain = bradley_terry(battles, ridge=0)["a"] - 1000
    small = bradley_terry(battles, ridge=0.01)["a"] - 1000
    strong = bradley_terry(battles, ridge=1.0)["a"] - 1000
    assert 0 < strong < small < plain
    assert small == pytest.approx(plain, rel=0.01)  # the default ridge barely moves a played player


UNBEATEN = [("champ", "b", "A")] * 5 + [("b", "c", "A"), ("c", "b", "A"), ("champ", "c", "A")]


def test_ridge_keeps_an_unbeaten_player_finite_and_first() -> None:
    ratings = bradley_terry(UNBEATEN)
    assert all(math.isfinite(r) for r in ratings.values())
    assert max(ratings, key=ratings.get) == "champ"
    assert ratings["champ"] - ratings["b"] > 400


def test_plain_mle_with_an_unbeaten_player_raises() -> None:
    # Decided: ridge=0 raises rather than returning ratings that run off to infinity.
    with pytest.raises(ConvergenceError, match="ridge"):
        bradley_terry(UNBEATEN, ridge=0)
    with pytest.raises(ConvergenceError):
        bradley_terry([("a", "b", "A"), ("c", "d", "TIE")], ridge=0)  # two islands: no common scale
    with pytest.raises(ValueError):
        bradley_terry(UNBEATEN, ridge=-1)


def test_non_convergence_raises() -> None:
    battles = [("a", "b", "A")] * 9 + [("a", "b", "B"), ("b", "c", "A"), ("c", "b", "A")]
    with pytest.raises(ConvergenceError, match="converge"):
        bradley_terry(battles, ridge=0, max_iter=1)


def simulate(rng: np.random.Generator, truth: dict[str, float], count: int, tie_rate: float = 0.0) -> list[Battle]:
    """Battles drawn from a Bradley-Terry model with Elo-scale ratings; a question id per 50 battles."""
    names = list(truth)
    strengths = np.array([truth[n] for n in names])
    a = rng.integers(0, len(names), size=count)
    b = (a + rng.integers(1, len(names), size=count)) % len(names)
    p_a = 1.0 / (1.0 + 10 ** ((strengths[b] - strengths[a]) / 400))
    u = rng.random(count)
    tie = rng.random(count) < tie_rate
    winners = np.where(tie, "TIE", np.where(u < p_a, "A", "B"))
    return [Battle(names[i], names[j], Winner(w), f"q{k // 50}") for k, (i, j, w) in enumerate(zip(a, b, winners))]


TRUTH = {"p1300": 1300.0, "p1150": 1150.0, "p1050": 1050.0, "p950": 950.0, "p850": 850.0, "p700": 700.0}


def test_bradley_terry_recovers_simulated_strengths() -> None:
    battles = simulate(np.random.default_rng(20240601), TRUTH, 30_000)
    ratings = bradley_terry(battles)
    assert sorted(ratings, key=ratings.get, reverse=True) == list(TRUTH)
    # ~10,000 games each: a standard error of about 5 points, so 20 points is ~4 of them.
    assert max(abs(ratings[p] - TRUTH[p]) for p in TRUTH) < 20


@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_bradley_terry_reproduces_evalica(dataset: str) -> None:
    battles = load_comparisons(DATASETS[dataset][0])
    golden = load_golden(dataset, "bradley_terry")  # evalica MM scores, normalised to sum 1
    ratings = bradley_terry(battles, ridge=0)
    strengths = {p: 10 ** ((r - 1000) / 400) for p, r in ratings.items()}
    total = sum(strengths.values())
    assert set(strengths) == set(golden)
    assert max(abs(strengths[p] / total - golden[p]) / golden[p] for p in golden) < 1e-4


# ---------------------------------------------------------------- intervals


def test_closed_form_interval_two_players_by_hand() -> None:
    # 4 games at p = 3/4: information on d = a - b (nats) is 4 * 3/4 * 1/4 = 3/4; with the sum
    # fixed, a = d/2, so var(a) = 1/(4 * 3/4) = 1/3. Half-width = 1.959964 * 400/ln 10 * sqrt(1/3).
    half = 1.959963984540054 * 400 / math.log(10) * math.sqrt(1 / 3)  # 196.5766
    battles = [("a", "b", "A")] * 3 + [("a", "b", "B")]
    got = bradley_terry_intervals(battles, ridge=0)
    rating = 1000 + 200 * LOG10_3
    assert got["a"] == pytest.approx((rating, rating - half, rating + half), abs=1e-6)
    assert got["b"] == pytest.approx((2000 - rating, 2000 - rating - half, 2000 - rating + half), abs=1e-6)


def test_closed_form_interval_shrinks_with_data_and_confidence() -> None:
    battles = simulate(np.random.default_rng(7), TRUTH, 3_000)
    once = bradley_terry_intervals(battles, ridge=0)
    tenfold = bradley_terry_intervals(battles * 10, ridge=0)
    narrow = bradley_terry_intervals(battles, ridge=0, confidence=0.5)
    z_ratio = 0.6744897501960817 / 1.959963984540054
    for player, (rating, low, high) in once.items():
        assert low < rating < high
        assert tenfold[player][0] == pytest.approx(rating, abs=1e-6)
        assert tenfold[player][2] - tenfold[player][1] == pytest.approx((high - low) / math.sqrt(10), rel=1e-6)
        assert narrow[player][2] - narrow[player][1] == pytest.approx((high - low) * z_ratio, rel=1e-9)


def test_sandwich_equals_fisher_without_ties_and_is_narrower_with_them() -> None:
    battles = [("a", "b", "A")] * 3 + [("a", "b", "B")]
    fisher = bradley_terry_intervals(battles, ridge=0)
    sandwich = bradley_terry_intervals(battles, ridge=0, method="sandwich")
    assert sandwich["a"] == pytest.approx(fisher["a"], abs=1e-6)
    tied = [("a", "b", "A")] * 2 + [("a", "b", "TIE")] * 2
    fisher_t = bradley_terry_intervals(tied, ridge=0)["a"]
    sandwich_t = bradley_terry_intervals(tied, ridge=0, method="sandwich")["a"]
    assert sandwich_t[2] - sandwich_t[1] < fisher_t[2] - fisher_t[1]
    with pytest.raises(ValueError):
        bradley_terry_intervals(battles, method="jackknife")  # type: ignore[arg-type]


def test_closed_form_interval_coverage_is_nominal_on_simulated_data() -> None:
    rng = np.random.default_rng(11)
    covered = total = 0
    for _ in range(200):
        intervals = bradley_terry_intervals(simulate(rng, TRUTH, 1_500))
        # Intervals are for ratings relative to the field's mean, which is 1000 in TRUTH too.
        covered += sum(low < TRUTH[p] < high for p, (_, low, high) in intervals.items())
        total += len(intervals)
    assert 0.93 < covered / total < 0.97  # 1,200 intervals at 95%: sd of the rate ~0.6%


def test_bootstrap_is_reproducible_and_brackets_the_fit() -> None:
    battles = simulate(np.random.default_rng(3), TRUTH, 5_000)  # 100 questions of 50 battles
    first = bootstrap_intervals(battles, np.random.default_rng(0), rounds=40)
    again = bootstrap_intervals(battles, np.random.default_rng(0), rounds=40)
    assert first == again
    fitted = bradley_terry(battles)
    assert all(low < fitted[p] < high for p, (low, high) in first.items())


def test_bootstrap_resamples_questions_not_battles() -> None:
    battles = simulate(np.random.default_rng(5), TRUTH, 600)
    one_question = [Battle(b.a, b.b, b.winner, "only") for b in battles]
    no_question = [Battle(b.a, b.b, b.winner) for b in battles]
    fixed = bootstrap_intervals(one_question, np.random.default_rng(1), rounds=20)
    assert all(high - low < 1e-6 for low, high in fixed.values())  # one question: nothing to vary
    loose = bootstrap_intervals(no_question, np.random.default_rng(1), rounds=20)
    assert all(high - low > 10 for low, high in loose.values())  # each battle its own question


def test_bootstrap_keeps_each_question_whole() -> None:
    # Every question holds a win and a loss for each pair: any resample of whole questions is
    # balanced, so all ratings stay at 1000; resampling battles one by one would unbalance them.
    battles = [
        Battle(a, b, winner, f"q{q}")
        for q in range(30)
        for a, b in (("a", "b"), ("b", "c"), ("a", "c"))
        for winner in (Winner.A, Winner.B)
    ]
    intervals = bootstrap_intervals(battles, np.random.default_rng(2), rounds=30)
    assert set(intervals) == set("abc")
    assert [bound for p in "abc" for bound in intervals[p]] == pytest.approx([1000.0] * 6, abs=1e-6)


def test_bootstrap_of_nothing() -> None:
    assert bootstrap_intervals([], np.random.default_rng(0)) == {}


def test_bootstrap_from_question_counts_equals_refitting_every_battle() -> None:
    # The bootstrap folds battles into per-(question, pair) points once; a round must equal the
    # naive refit with each battle weighted by how often its question was drawn.
    battles = simulate(np.random.default_rng(8), TRUTH, 3_000)  # 60 questions
    rounds = 25
    got = bootstrap_intervals(battles, np.random.default_rng(4), rounds=rounds)
    draws = np.random.default_rng(4).multinomial(60, np.full(60, 1 / 60), size=rounds)
    samples = {p: [] for p in TRUTH}
    for r in range(rounds):
        weighted = [Battle(b.a, b.b, b.winner, weight=float(draws[r, int(b.question_id[1:])])) for b in battles]
        for p, rating in bradley_terry(weighted).items():
            samples[p].append(rating)
    for p in TRUTH:
        low, high = np.quantile(samples[p], [0.025, 0.975])
        assert got[p] == pytest.approx((low, high), abs=1e-6)


def test_tuples_may_carry_a_question_and_a_weight() -> None:
    tuples = [("a", "b", "A", "q1"), ("b", "c", "TIE", "q1", 2.0), ("c", "a", "B", None, 1.0), ("a", "c", "B", "q2")]
    battles = [Battle("a", "b", Winner.A, "q1"), Battle("b", "c", Winner.TIE, "q1", 2.0), Battle("c", "a", Winner.B), Battle("a", "c", Winner.B, "q2")]
    assert bradley_terry(tuples) == bradley_terry(battles)
    assert online_elo(tuples) == online_elo(battles)
    assert bootstrap_intervals(tuples, np.random.default_rng(0), rounds=5) == bootstrap_intervals(battles, np.random.default_rng(0), rounds=5)
