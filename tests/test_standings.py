"""Round-robin standings: counts, points, win rates and head-to-head matrices; evalica's golden
points and average win rates, on tests/data/llmfao_tiny (by hand) and on LLMFAO's crowd votes in
../shared/data (a required part, tests/required.py)."""
from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from leaderboard.standings import Record, round_robin_ranking, standings
from leaderboard.types import Battle, Winner
from tests.required import SHARED_DATA, SYNTHETIC_DATA, skip_required

# name -> (comparisons, golden scores)
GOLDENS = {
    "tiny": (SYNTHETIC_DATA / "llmfao_tiny" / "comparisons.csv", SYNTHETIC_DATA / "llmfao_tiny" / "golden.csv"),
    "llmfao": (SHARED_DATA / "llmfao" / "crowd-comparisons.csv",
               SHARED_DATA / "llmfao" / "evalica_golden" / "llmfao-golden.csv"),
}
POSITION = {"left": "A", "right": "B", "tie": "TIE"}

# a beats b twice, a ties c, b beats c, c beats a.
SMALL = [("a", "b", "A"), ("a", "b", "A"), ("a", "c", "TIE"), ("b", "c", "A"), ("c", "a", "A")]
NAN = math.nan


def test_records_by_hand() -> None:
    table = standings(SMALL)
    assert table.players == ["a", "b", "c"]
    assert table.records == {
        "a": Record("a", wins=2, losses=1, ties=1),
        "b": Record("b", wins=1, losses=2, ties=0),
        "c": Record("c", wins=1, losses=1, ties=1),
    }
    a, b, c = (table.records[p] for p in "abc")
    assert (a.matches, a.points, a.win_rate) == (4, 2.5, 0.625)
    assert (b.matches, b.points, b.win_rate) == (3, 1.0, pytest.approx(1 / 3))
    assert (c.matches, c.points, c.win_rate) == (3, 1.5, 0.5)
    assert [r.player for r in table.ranked()] == ["a", "c", "b"]


def test_matrices_by_hand() -> None:
    table = standings(SMALL)
    np.testing.assert_array_equal(table.count_matrix, [[0, 2, 2], [2, 0, 1], [2, 1, 0]])
    np.testing.assert_allclose(
        table.win_rate_matrix,
        [[NAN, 1.0, 0.25], [0.0, NAN, 1.0], [0.75, 0.0, NAN]],  # a vs c: a tie and a loss
    )
    assert table.average_win_rate() == pytest.approx({"a": 0.625, "b": 0.5, "c": 0.375})


def test_win_rates_are_complementary() -> None:
    rng = np.random.default_rng(0)
    names = list("pqrstu")
    battles = [
        (names[i], names[(i + d) % 6], str(rng.choice(["A", "B", "TIE"])))
        for i, d in zip(rng.integers(0, 6, 300), rng.integers(1, 6, 300))
    ]
    table = standings(battles)
    rates = table.win_rate_matrix
    met = table.count_matrix > 0
    np.testing.assert_allclose((rates + rates.T)[met], 1.0)
    assert np.isnan(rates[~met]).all()
    assert table.count_matrix.sum() == 2 * len(battles)
    assert sum(r.points for r in table.records.values()) == len(battles)


def test_standings_count_judgements_not_weights() -> None:
    table = standings([Battle("a", "b", Winner.A, weight=5.0), Battle("a", "b", Winner.TIE, weight=0.5)])
    assert table.records["a"] == Record("a", wins=1, losses=0, ties=1)


def test_standings_of_nothing() -> None:
    table = standings([])
    assert table.players == [] and table.records == {}
    assert table.count_matrix.shape == (0, 0) and table.win_rate_matrix.shape == (0, 0)
    assert Record("idle", 0, 0, 0).win_rate == 0.0


def _golden(name: str) -> tuple[list[tuple[str, str, str]], dict[str, dict[str, float]]]:
    comparisons, scores = GOLDENS[name]
    for path in (comparisons, scores):
        if not path.exists():
            skip_required("shared-data", f"missing {path}")
    with comparisons.open(newline="", encoding="utf-8") as handle:
        battles = [(r["left"], r["right"], POSITION[r["winner"]]) for r in csv.DictReader(handle)]
    golden: dict[str, dict[str, float]] = {}
    with scores.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            golden.setdefault(row["algorithm"], {})[row["item"]] = float(row["score"])
    return battles, golden


@pytest.mark.parametrize("name", sorted(GOLDENS, reverse=True))
def test_points_and_average_win_rate_reproduce_evalica(name: str) -> None:
    battles, golden = _golden(name)
    table = standings(battles)
    points = {p: r.points for p, r in table.records.items()}
    assert points == pytest.approx(golden["counting"], abs=1e-9)  # evalica "counting" = wins + ½ ties
    assert table.average_win_rate() == pytest.approx(golden["average_win_rate"], abs=1e-9)
    assert sum(r.matches for r in table.records.values()) == 2 * len(battles)


def test_round_robin_ranking_is_wins_then_ties_then_name() -> None:
    battles = [
        ("ann", "bea", "A"), ("ann", "cid", "A"),        # ann 2 wins
        ("dan", "bea", "A"), ("dan", "cid", "TIE"),      # dan 1 win 1 tie
        ("eve", "cid", "A"), ("eve", "bea", "TIE"),      # eve 1 win 1 tie: level with dan, name decides
        ("bea", "cid", "TIE"), ("cid", "fay", "B"),      # fay 1 win, no tie
        ("cid", "gus", "TIE"),                           # cid 0 wins 3 ties, bea 0-2, gus 0-1
    ]
    # By points cid (1.5) would be level with dan and eve and above fay (1.0): wins come first here.
    assert round_robin_ranking(battles) == ["ann", "dan", "eve", "fay", "cid", "bea", "gus"]
    assert round_robin_ranking([]) == []
    weighted = [Battle("a", "b", Winner.A, weight=9.0), Battle("b", "a", Winner.A), Battle("b", "a", Winner.A)]
    assert round_robin_ranking(weighted) == ["b", "a"]  # judgements are counted, weights ignored
