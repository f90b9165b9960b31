"""AlpacaEval metrics: by hand, and reproducing the published leaderboards from the annotations:
those of tests/data/alpaca_tiny (worked out by hand, tests/data/README.md) in any checkout, and
the real ones of ../shared/data, a required part (tests/required.py)."""
from __future__ import annotations

import csv
import gzip
import math
from collections import defaultdict
from pathlib import Path

import pytest

from leaderboard.winrate import WinRate, alpaca_metrics
from tests.required import SHARED_DATA, SYNTHETIC_DATA, skip_required

# source -> (its directory, {annotator_dir -> (leaderboard CSV, models reproduced, models known
# not to reproduce)}); the shared ones per ../shared/data/README.md section 1.
SOURCES = {
    "synthetic": (SYNTHETIC_DATA / "alpaca_tiny", {
        "tiny_gpt4": ("tiny_gpt4_leaderboard.csv", 2, {"m-mismatch"}),  # a row made not to match
        "tiny_weighted": ("tiny_weighted_leaderboard.csv", 2, set()),
    }),
    "shared": (SHARED_DATA / "alpaca_eval", {
        "alpaca_eval_gpt4": ("data_AlpacaEval/alpaca_eval_gpt4_leaderboard.csv", 52, set()),
        "weighted_alpaca_eval_gpt4_turbo": ("data_AlpacaEval_2/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv", 57, set()),
        "alpaca_eval_cot_gpt4_turbo_fn": ("data_AlpacaEval_2/alpaca_eval_cot_gpt4_turbo_fn_leaderboard.csv", 10, set()),
        # The annotations of this run do not match its leaderboard row (15.53 vs 19.63).
        "alpaca_eval_gpt4_turbo_fn": ("data_AlpacaEval_2/alpaca_eval_gpt4_turbo_fn_leaderboard.csv", 3,
                                      {"Mistral-7B-Instruct-v0.2"}),
    }),
}
CASES = [(source, annotator) for source, (_, cases) in SOURCES.items() for annotator in cases]


def test_by_hand() -> None:
    got = alpaca_metrics([2, 1, 0, 1.5, 2])  # x = 1, 0, ½, ½, 1
    assert got.win_rate == pytest.approx(60.0)
    sd = math.sqrt(sum((x - 0.6) ** 2 for x in (1, 0, 0.5, 0.5, 1)) / 4)
    assert got.standard_error == pytest.approx(100 * sd / math.sqrt(5))
    assert (got.n_wins, got.n_wins_base, got.n_draws, got.n_total) == (2, 1, 2, 5)
    assert got.discrete_win_rate == pytest.approx(60.0)


def test_weighted_preferences_strings_and_junk() -> None:
    # Continuous preferences count fractionally; the discrete rate rounds (half to even: 1.5 is a
    # draw by rule, 2.5 does not occur). Non-numeric and out-of-range values are dropped.
    got = alpaca_metrics(["1.9", 1.2, "1.5", None, "", "n/a", 3.0, 0.7, "1.6"])
    assert got.n_total == 4  # 1.9, 1.2, 1.5, 1.6
    assert got.win_rate == pytest.approx(100 * (0.9 + 0.2 + 0.5 + 0.6) / 4)
    assert (got.n_wins, got.n_wins_base, got.n_draws) == (2, 1, 1)
    # Discrete: 2, 1, draw, 2, and 0.7 rounds to 1 (a baseline win: AlpacaEval rounds before
    # it drops out-of-range values), so five valid preferences here.
    assert got.discrete_win_rate == pytest.approx(100 * (1 + 0 + 0.5 + 1 + 0) / 5)
    assert alpaca_metrics([0.0, "0"]).n_draws == 2  # the legacy draw code
    empty = alpaca_metrics([])
    assert empty.n_total == 0 and math.isnan(empty.win_rate) and math.isnan(empty.standard_error)


def load_preferences(root: Path) -> dict[str, dict[str, list[str]]]:
    """compact/preferences.csv(.gz): the preferences of each annotator_dir and results_model."""
    path = next((p for p in (root / "compact" / "preferences.csv.gz", root / "compact" / "preferences.csv")
                 if p.is_file()), None)
    if path is None:
        skip_required("shared-data", f"missing {root / 'compact' / 'preferences.csv.gz'}")
    grouped: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            grouped[row["annotator_dir"]][row["results_model"]].append(row["preference"])
    return grouped


def load_board(path: Path) -> dict[str, dict[str, str]]:
    if not path.exists():
        skip_required("shared-data", f"missing {path}")
    with path.open(newline="", encoding="utf-8") as handle:
        return {row[""]: row for row in csv.DictReader(handle)}


def reproduces(got: WinRate, row: dict[str, str]) -> bool:
    return (
        abs(got.win_rate - float(row["win_rate"])) < 1e-6
        and abs(got.standard_error - float(row["standard_error"])) < 1e-9
        and abs(got.discrete_win_rate - float(row["discrete_win_rate"])) < 1e-6
        and (got.n_wins, got.n_wins_base, got.n_draws, got.n_total)
        == tuple(int(float(row[c])) for c in ("n_wins", "n_wins_base", "n_draws", "n_total"))
    )


_loaded: dict[str, dict[str, dict[str, list[str]]]] = {}


def preferences(source: str) -> dict[str, dict[str, list[str]]]:
    """The source's preferences, read once per session (the real file holds 108,665 rows)."""
    if source not in _loaded:
        _loaded[source] = load_preferences(SOURCES[source][0])
    return _loaded[source]


@pytest.mark.parametrize(("source", "annotator"), CASES, ids=[f"{s}-{a}" for s, a in CASES])
def test_reproduces_the_published_leaderboard(source: str, annotator: str) -> None:
    root, cases = SOURCES[source]
    board_file, expected, exceptions = cases[annotator]
    board = load_board(root / "leaderboards" / board_file)
    runs = {model: alpaca_metrics(prefs) for model, prefs in preferences(source)[annotator].items() if model in board}
    matched = {model for model, got in runs.items() if reproduces(got, board[model])}
    assert len(matched) == expected
    assert set(runs) - matched == exceptions
