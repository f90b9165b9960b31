"""Krippendorff's alpha in GET /api/judges, over verdicts imported into the real store: on
LLMFAO it equals `leaderboard.agreement.krippendorff_alpha` computed here from the files; a
planted judge that copies the human votes gets 1 and a coin-flipping judge about 0. SQLite,
then PostgreSQL."""
from __future__ import annotations

import csv
import random
from collections import defaultdict
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from leaderboard.agreement import krippendorff_alpha
from service.usecases.importers.battles import load_battles
from tests.api_fixtures import store_of
from tests.required import shared_data

FILES = {"human/crowd": ("crowd-comparisons.csv", "crowd", True),
         "import/gpt4": ("gpt4-crowd-comparisons.csv", "gpt4", False),
         "import/gpt3": ("gpt3-crowd-comparisons.csv", "gpt3", False)}
MIRRORED = {"first": "second", "second": "first", "tie": "tie"}


def values_by_pair(path: Path) -> dict[tuple[str, frozenset[str]], list[str]]:
    """Each pair's verdicts in the file: "first" when the model first by name won, "second", "tie"."""
    found: dict[tuple[str, frozenset[str]], list[str]] = defaultdict(list)
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            names = sorted((row["left"], row["right"]))
            value = "tie" if row["winner"] == "tie" else ("first" if row[row["winner"]] == names[0] else "second")
            found[(row["prompt"], frozenset(names))].append(value)
    return found


def alpha_here(*raters: dict, rng=None):
    """`krippendorff_alpha` over the pairs every rater judged, each pair counted twice, as is and
    seen from its other side (as judge health counts it), one row per value slot."""
    units = []
    for pair in sorted(set.intersection(*(set(r) for r in raters)), key=str):
        values = [v for r in raters for v in r[pair]]
        units += [values, [MIRRORED[v] for v in values]]
    slots = max(len(u) for u in units)
    rows = [[u[i] if i < len(u) else None for u in units] for i in range(slots)]
    return krippendorff_alpha(rows, rng), len(units) // 2


def test_llmfao_alpha_between_gpt4_and_the_crowd(client: TestClient) -> None:
    data = shared_data("llmfao")
    store = store_of(client)
    for name, judge, human in FILES.values():
        load_battles(store, data / name, judge=judge, human=human)
    body = client.get("/api/judges").json()
    health = {h["judge"]: h for h in body["judges"]}
    crowd, gpt4, gpt3 = (values_by_pair(data / FILES[j][0]) for j in ("human/crowd", "import/gpt4", "import/gpt3"))
    for judge, verdicts in (("import/gpt4", gpt4), ("import/gpt3", gpt3)):
        expected, pairs = alpha_here(verdicts, crowd)
        found = health[judge]
        assert pairs == found["human_alpha_pairs"] == 2139
        assert found["human_alpha"] == pytest.approx(expected.alpha, abs=1e-12)
        assert found["human_alpha_low"] < found["human_alpha"] < found["human_alpha_high"]
    assert 0.1 < health["import/gpt4"]["human_alpha"] < 0.5
    assert health["human/crowd"]["human_alpha"] is None  # the reference itself
    [between] = body["judge_agreement"]
    expected, pairs = alpha_here(gpt3, gpt4)
    assert (between["judge"], between["other"], between["pairs"]) == ("import/gpt3", "import/gpt4", pairs)
    assert between["alpha"] == pytest.approx(expected.alpha, abs=1e-12)
    assert between["ci_low"] < between["alpha"] < between["ci_high"]
    assert client.get("/api/judges").json() == body  # seeded: the same verdicts, the same intervals
    only = client.get("/api/judges", params={"judge": "import/gpt4"}).json()
    assert only["judge_agreement"] == [between] and [h["judge"] for h in only["judges"]] == ["import/gpt4"]


def planted(tmp_path: Path, name: str, winners: list[str]) -> Path:
    path = tmp_path / f"{name}.csv"
    path.write_text("model_a,model_b,winner,question_id\n"
                    + "".join(f"x,y,{w},q{i}\n" for i, w in enumerate(winners)))
    return path


def test_a_copying_judge_gets_one_and_a_coin_about_zero(client: TestClient, tmp_path: Path) -> None:
    rng = random.Random(11)
    outcomes = ["model_a", "model_b", "tie"]
    votes = rng.choices(outcomes, weights=[0.45, 0.35, 0.2], k=400)
    coin = rng.choices(outcomes, weights=[0.45, 0.35, 0.2], k=400)
    store = store_of(client)
    for name, winners, human in (("voter", votes, True), ("copier", votes, False), ("coin", coin, False)):
        load_battles(store, planted(tmp_path, name, winners), judge=name, human=human)
    body = client.get("/api/judges").json()
    health = {h["judge"]: h for h in body["judges"]}
    copier, flipper = health["import/copier"], health["import/coin"]
    # every resample of 400 agreeing pairs gives 1: no interval, said why (not a zero-width [1, 1])
    assert (copier["human_alpha"], copier["human_alpha_low"], copier["human_alpha_high"],
            copier["human_alpha_ci_missing"]) == (1.0, None, None, "no_spread")
    assert flipper["human_alpha_ci_missing"] is None
    assert copier["human_alpha_pairs"] == flipper["human_alpha_pairs"] == 400
    assert abs(flipper["human_alpha"]) < 0.1 and flipper["human_alpha_low"] < 0 < flipper["human_alpha_high"]
    [between] = body["judge_agreement"]
    assert (between["judge"], between["other"], between["pairs"]) == ("import/coin", "import/copier", 400)
    assert between["alpha"] == pytest.approx(flipper["human_alpha"], abs=1e-12)  # the copier is the voter
    # the page shows the figure, compactly, with its 95% interval where it has one
    page = client.get("/judges").text
    assert '<td class="num">1.00</td>' in page and "[1.00, 1.00]" not in page
    assert "Agreement between judges" in page and "import/coin · import/copier" in page


def test_no_judgements_no_alpha(client: TestClient) -> None:
    body = client.get("/api/judges").json()
    assert (body["judges"], body["judge_agreement"]) == ([], [])
