"""`joust import alpaca-outputs / alpaca-annotations` on AlpacaEval's original files: counts,
the preference -> winner mapping, and alpaca-7b's published win rates (AlpacaEval 1 and the
continuous AlpacaEval 2) recomputed from the imported judgements."""
from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

import pytest

from leaderboard.keys import default_question_id
from leaderboard.types import Winner
from service.cli import main
from service.importers.alpaca import winner_of
from service.store import Store
from tests.conftest import SHARED_DATA

ALPACA = SHARED_DATA / "alpaca_eval"
RESULTS = ALPACA / "originals" / "results"
A7B_OUTPUTS = RESULTS / "alpaca-7b" / "model_outputs.json"
AE1 = RESULTS / "alpaca-7b" / "alpaca_eval_gpt4" / "annotations.json"
AE2 = RESULTS / "alpaca-7b" / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
DAVINCI_OUTPUTS = RESULTS / "text_davinci_003" / "model_outputs.json"
AE1_BOARD = ALPACA / "leaderboards" / "data_AlpacaEval" / "alpaca_eval_gpt4_leaderboard.csv"
AE2_BOARD = ALPACA / "leaderboards" / "data_AlpacaEval_2" / "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"


@pytest.fixture(autouse=True)
def _sqlite_in_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("JOUST_DATA_DIR", raising=False)


@pytest.fixture
def data() -> None:
    for path in (A7B_OUTPUTS, AE1, AE2, DAVINCI_OUTPUTS, AE1_BOARD, AE2_BOARD):
        if not path.exists():
            pytest.skip(f"shared data missing: {path}")


def joust(data_dir: Path, *args: str) -> int:
    return main([*args, "--data-dir", str(data_dir)])


def published(board: Path, model: str) -> dict[str, str]:
    with board.open() as fh:
        return next(r for r in csv.DictReader(fh) if r[""] == model)


def test_preference_codes() -> None:
    assert [winner_of(p) for p in (1, 2, 0, 1.5)] == [Winner.A, Winner.B, Winner.TIE, Winner.TIE]
    assert [winner_of(p) for p in (1.0000001827, 1.4999, 1.5001, 1.99)] == [Winner.A, Winner.A, Winner.B, Winner.B]


def test_outputs_then_annotations(data: None, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert joust(tmp_path, "import", "alpaca-outputs", str(A7B_OUTPUTS)) == 0
    assert "submissions 805 new, 0 existing" in capsys.readouterr().out
    assert joust(tmp_path, "import", "alpaca-annotations", str(AE1)) == 0
    out = capsys.readouterr().out
    assert "submissions 805 new, 805 existing; judgements 805 new, 0 existing" in out  # alpaca-7b's already there
    assert "judge import/alpaca_eval/alpaca_eval_gpt4" in out
    store = Store(f"sqlite:///{tmp_path / 'joust.db'}")
    subs = store.list_submissions(limit=5000)
    assert {s["model"] for s in subs} == {"alpaca-7b", "text_davinci_003"}
    first = subs[0]
    assert first["question_id"] == default_question_id(first["question"])
    assert first["metadata"]["dataset"] == "helpful_base"
    rows = store.side_rows(judge="import/alpaca_eval/alpaca_eval_gpt4")
    assert len(rows) == 805
    assert {(r.a_model, r.b_model) for r in rows} == {("text_davinci_003", "alpaca-7b")}  # output_1 is side a
    store.close()


def win_rate(xs: list[float]) -> tuple[float, float]:
    """AlpacaEval's win rate and standard error of x = preference - 1 (in percent)."""
    return 100 * statistics.fmean(xs), 100 * statistics.stdev(xs) / math.sqrt(len(xs))


def test_alpaca_7b_reproduces_the_published_rows(data: None, tmp_path: Path) -> None:
    assert joust(tmp_path, "import", "alpaca-annotations", str(AE1)) == 0
    assert joust(tmp_path, "import", "alpaca-annotations", str(AE2)) == 0
    store = Store(f"sqlite:///{tmp_path / 'joust.db'}")
    # AlpacaEval 1: discrete preferences, so the judgements hold everything the row is made of.
    ae1 = store.side_rows(judge="import/alpaca_eval/alpaca_eval_gpt4")
    wins, losses, draws = (sum(r.winner is w for r in ae1) for w in (Winner.B, Winner.A, Winner.TIE))
    row = published(AE1_BOARD, "alpaca-7b")
    assert (wins, losses, draws, len(ae1)) == tuple(int(row[c]) for c in ("n_wins", "n_wins_base", "n_draws",
                                                                          "n_total"))
    rate, error = win_rate([{Winner.B: 1.0, Winner.A: 0.0, Winner.TIE: 0.5}[r.winner] for r in ae1])
    assert rate == pytest.approx(float(row["win_rate"]), abs=1e-9)
    assert error == pytest.approx(float(row["standard_error"]), abs=1e-9)
    # AlpacaEval 2 (weighted): the verdicts give the discrete win rate; the raw preferences kept
    # in the calls give the continuous one.
    ae2 = store.export_judgements(judge="import/alpaca_eval/weighted_alpaca_eval_gpt4_turbo")
    row = published(AE2_BOARD, "alpaca-7b")
    outcomes = [r["outcome"] for r in ae2]
    assert (outcomes.count("B"), outcomes.count("A"), outcomes.count("TIE")) == (
        int(row["n_wins"]), int(row["n_wins_base"]), int(row["n_draws"]))
    discrete, _ = win_rate([{"B": 1.0, "A": 0.0, "TIE": 0.5}[o] for o in outcomes])
    assert discrete == pytest.approx(float(row["discrete_win_rate"]), abs=1e-9)
    rate, error = win_rate([r["calls"][0]["preference"] - 1 for r in ae2])
    assert rate == pytest.approx(float(row["win_rate"]), abs=1e-9)
    assert error == pytest.approx(float(row["standard_error"]), abs=1e-9)
    store.close()


def test_a_different_run_of_a_generator_is_refused_then_kept_apart(
    data: None, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """AlpacaEval 1's text_davinci_003 outputs are not those of its model_outputs.json."""
    assert joust(tmp_path, "import", "alpaca-annotations", str(AE1)) == 0
    store = Store(f"sqlite:///{tmp_path / 'joust.db'}")
    before = len(store.list_submissions(limit=5000))
    assert joust(tmp_path, "import", "alpaca-outputs", str(DAVINCI_OUTPUTS)) == 2
    err = capsys.readouterr().err
    assert f"{DAVINCI_OUTPUTS}:2: " in err and "different output" in err
    assert len(store.list_submissions(limit=5000)) == before  # nothing stored
    assert joust(tmp_path, "import", "alpaca-outputs", str(DAVINCI_OUTPUTS), "--scenario", "reference") == 0
    assert len(store.list_submissions(limit=5000, scenario="reference")) == 805
    store.close()


def test_reimport_and_bad_annotations(data: None, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert joust(tmp_path, "import", "alpaca-annotations", str(AE1)) == 0
    capsys.readouterr()
    assert joust(tmp_path, "import", "alpaca-annotations", str(AE1)) == 0
    assert "judgements 0 new, 805 existing" in capsys.readouterr().out
    bad = tmp_path / "annotations.json"
    bad.write_text('[{"instruction": "Q?", "output_1": "a", "generator_1": "m1", "output_2": "b",\n'
                   '  "generator_2": "m2", "annotator": "x", "preference": 2},\n'
                   ' {"instruction": "Q?", "output_1": "a", "generator_1": "m1", "output_2": "c",\n'
                   '  "generator_2": "m3", "annotator": "x", "preference": "better"}]\n')
    assert joust(tmp_path, "import", "alpaca-annotations", str(bad)) == 2
    assert f"{bad}:3: preference 'better' is not a number" in capsys.readouterr().err
