"""AlpacaEval metrics: by hand, and reproducing the published leaderboards from the annotations."""
from __future__ import annotations

import csv
import gzip
import math
from collections import defaultdict
from pathlib import Path

import pytest

from leaderboard.winrate import WinRate, alpaca_metrics

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
ALPACA = DATA / "alpaca_eval"
PREFERENCES = ALPACA / "compact" / "preferences.csv.gz"
BOARDS = ALPACA / "leaderboards"

# annotator_dir -> (leaderboard CSV, models reproduced, models known not to reproduce), per
# ../shared/data/README.md section 1.
CASES = {
    "alpaca_eval_gpt4": ("data_AlpacaEval/alpaca_eval_gpt4_leaderboard.csv", 52, set()),
    "weighted_alpaca_eval_gpt4_turbo": ("data_AlpacaEval_2/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv", 57, set()),
    "alpaca_eval_cot_gpt4_turbo_fn": ("data_AlpacaEval_2/alpaca_eval_cot_gpt4_turbo_fn_leaderboard.csv", 10, set()),
    # The annotations of this run do not match its leaderboard row (15.53 vs 19.63).
    "alpaca_eval_gpt4_turbo_fn": ("data_AlpacaEval_2/alpaca_eval_gpt4_turbo_fn_leaderboard.csv", 3, {"Mistral-7B-Instruct-v0.2"}),
}


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


def load_preferences() -> dict[str, dict[str, list[str]]]:
    if not PREFERENCES.exists():
        pytest.skip(f"data dir is missing: {PREFERENCES} (see ../shared/data/README.md)")
    grouped: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    with gzip.open(PREFERENCES, "rt", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            grouped[row["annotator_dir"]][row["results_model"]].append(row["preference"])
    return grouped


def load_board(name: str) -> dict[str, dict[str, str]]:
    path = BOARDS / name
    if not path.exists():
        pytest.skip(f"data dir is missing: {path} (see ../shared/data/README.md)")
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


@pytest.fixture(scope="module")
def preferences() -> dict[str, dict[str, list[str]]]:
    return load_preferences()


@pytest.mark.parametrize("annotator", sorted(CASES))
def test_reproduces_the_published_leaderboard(annotator: str, preferences: dict[str, dict[str, list[str]]]) -> None:
    board_file, expected, exceptions = CASES[annotator]
    board = load_board(board_file)
    runs = {model: alpaca_metrics(prefs) for model, prefs in preferences[annotator].items() if model in board}
    matched = {model for model, got in runs.items() if reproduces(got, board[model])}
    assert len(matched) == expected
    assert set(runs) - matched == exceptions

