"""`joust import alpaca-outputs / alpaca-annotations` on AlpacaEval's original files: counts,
the preference -> winner mapping, and alpaca-7b's published win rates (AlpacaEval 1 and the
continuous AlpacaEval 2) recomputed from the imported judgements.

Each file test runs twice: on tests/data/alpaca_tiny (hand-made files of the same layout, five
instructions, its leaderboard rows worked out by hand: tests/data/README.md), in any checkout;
then on the real files in ../shared/data, a required part (tests/required.py)."""
from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import pytest

from leaderboard.keys import default_question_id
from leaderboard.types import Winner
from service.cli import main
from service.store import Store
from service.usecases.importers.alpaca import winner_of
from tests.required import SYNTHETIC_DATA, shared_data, skip_required


@dataclass(frozen=True)
class AlpacaFiles:
    """One model's AlpacaEval files, the baseline run that clashes with AlpacaEval 1's, and the
    published rows to reproduce."""

    model: str
    baseline: str  # AlpacaEval 1's output_1
    outputs: Path
    ae1: Path
    ae2: Path
    baseline_outputs: Path  # another run of `baseline`: its outputs differ from those in ae1
    ae1_board: Path
    ae2_board: Path
    count: int  # instructions
    first_dataset: str

    @property
    def ae1_judge(self) -> str:
        return f"import/alpaca_eval/{self.ae1.parent.name}"

    @property
    def ae2_judge(self) -> str:
        return f"import/alpaca_eval/{self.ae2.parent.name}"


def files(root: Path, model: str, baseline: str, annotators: tuple[str, str], boards: tuple[str, str], count: int,
          first_dataset: str) -> AlpacaFiles:
    results = root / "originals" / "results" if (root / "originals").is_dir() else root / "results"
    return AlpacaFiles(model, baseline, results / model / "model_outputs.json",
                       *(results / model / a / "annotations.json" for a in annotators),
                       results / baseline / "model_outputs.json", *(root / "leaderboards" / b for b in boards),
                       count, first_dataset)


@pytest.fixture(params=["synthetic", "shared"])
def data(request: pytest.FixtureRequest) -> AlpacaFiles:
    if request.param == "synthetic":
        return files(SYNTHETIC_DATA / "alpaca_tiny", "tiny-7b", "tiny-davinci", ("tiny_gpt4", "tiny_weighted"),
                     ("tiny_gpt4_leaderboard.csv", "tiny_weighted_leaderboard.csv"), 5, "helpful_base")
    found = files(shared_data("alpaca_eval"), "alpaca-7b", "text_davinci_003",
                  ("alpaca_eval_gpt4", "weighted_alpaca_eval_gpt4_turbo"),
                  ("data_AlpacaEval/alpaca_eval_gpt4_leaderboard.csv",
                   "data_AlpacaEval_2/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"), 805, "helpful_base")
    for path in (found.outputs, found.ae1, found.ae2, found.baseline_outputs, found.ae1_board, found.ae2_board):
        if not path.is_file():
            skip_required("shared-data", f"missing {path}")
    return found


@pytest.fixture(autouse=True)
def _sqlite_in_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("JOUST_DATA_DIR", raising=False)


def joust(data_dir: Path, *args: str) -> int:
    return main([*args, "--data-dir", str(data_dir)])


def published(board: Path, model: str) -> dict[str, str]:
    with board.open() as fh:
        return next(r for r in csv.DictReader(fh) if r[""] == model)


def test_preference_codes() -> None:
    assert [winner_of(p) for p in (1, 2, 0, 1.5)] == [Winner.A, Winner.B, Winner.TIE, Winner.TIE]
    assert [winner_of(p) for p in (1.0000001827, 1.4999, 1.5001, 1.99)] == [Winner.A, Winner.A, Winner.B, Winner.B]


def test_outputs_then_annotations(data: AlpacaFiles, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    n = data.count
    assert joust(tmp_path, "import", "alpaca-outputs", str(data.outputs)) == 0
    assert f"submissions {n} new, 0 existing" in capsys.readouterr().out
    assert joust(tmp_path, "import", "alpaca-annotations", str(data.ae1)) == 0
    out = capsys.readouterr().out
    assert f"submissions {n} new, {n} existing; judgements {n} new, 0 existing" in out  # the model's already there
    assert f"judge {data.ae1_judge}" in out
    store = Store(f"sqlite:///{tmp_path / 'joust.db'}")
    subs = store.list_submissions(limit=5000)
    assert {s.model for s in subs} == {data.model, data.baseline}
    first = subs[0]
    assert first.question_id == default_question_id(first.question)
    assert first.metadata["dataset"] == data.first_dataset
    rows = store.side_rows(judge=data.ae1_judge)
    assert len(rows) == n
    assert {(r.a_model, r.b_model) for r in rows} == {(data.baseline, data.model)}  # output_1 is side a
    store.close()


def win_rate(xs: list[float]) -> tuple[float, float]:
    """AlpacaEval's win rate and standard error of x = preference - 1 (in percent)."""
    return 100 * statistics.fmean(xs), 100 * statistics.stdev(xs) / math.sqrt(len(xs))


def test_the_models_published_rows_are_reproduced(data: AlpacaFiles, tmp_path: Path) -> None:
    assert joust(tmp_path, "import", "alpaca-annotations", str(data.ae1)) == 0
    assert joust(tmp_path, "import", "alpaca-annotations", str(data.ae2)) == 0
    store = Store(f"sqlite:///{tmp_path / 'joust.db'}")
    # AlpacaEval 1: discrete preferences, so the judgements hold everything the row is made of.
    ae1 = store.side_rows(judge=data.ae1_judge)
    wins, losses, draws = (sum(r.winner is w for r in ae1) for w in (Winner.B, Winner.A, Winner.TIE))
    row = published(data.ae1_board, data.model)
    assert (wins, losses, draws, len(ae1)) == tuple(int(row[c]) for c in ("n_wins", "n_wins_base", "n_draws",
                                                                          "n_total"))
    rate, error = win_rate([{Winner.B: 1.0, Winner.A: 0.0, Winner.TIE: 0.5}[r.winner] for r in ae1])
    assert rate == pytest.approx(float(row["win_rate"]), abs=1e-9)
    assert error == pytest.approx(float(row["standard_error"]), abs=1e-9)
    # AlpacaEval 2 (weighted): the verdicts give the discrete win rate; the raw preferences kept
    # in the calls give the continuous one.
    ae2 = store.export_judgements(judge=data.ae2_judge)
    row = published(data.ae2_board, data.model)
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
    data: AlpacaFiles, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """AlpacaEval 1's text_davinci_003 outputs are not those of its model_outputs.json."""
    assert joust(tmp_path, "import", "alpaca-annotations", str(data.ae1)) == 0
    store = Store(f"sqlite:///{tmp_path / 'joust.db'}")
    before = len(store.list_submissions(limit=5000))
    assert joust(tmp_path, "import", "alpaca-outputs", str(data.baseline_outputs)) == 2
    err = capsys.readouterr().err
    assert f"{data.baseline_outputs}:2: " in err and "different output" in err
    assert len(store.list_submissions(limit=5000)) == before  # nothing stored
    assert joust(tmp_path, "import", "alpaca-outputs", str(data.baseline_outputs), "--scenario", "reference") == 0
    assert len(store.list_submissions(limit=5000, scenario="reference")) == data.count
    store.close()


def test_reimport_and_bad_annotations(data: AlpacaFiles, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert joust(tmp_path, "import", "alpaca-annotations", str(data.ae1)) == 0
    capsys.readouterr()
    assert joust(tmp_path, "import", "alpaca-annotations", str(data.ae1)) == 0
    assert f"judgements 0 new, {data.count} existing" in capsys.readouterr().out
    bad = tmp_path / "annotations.json"
    bad.write_text('[{"instruction": "Q?", "output_1": "a", "generator_1": "m1", "output_2": "b",\n'
                   '  "generator_2": "m2", "annotator": "x", "preference": 2},\n'
                   ' {"instruction": "Q?", "output_1": "a", "generator_1": "m1", "output_2": "c",\n'
                   '  "generator_2": "m3", "annotator": "x", "preference": "better"}]\n')
    assert joust(tmp_path, "import", "alpaca-annotations", str(bad)) == 2
    assert f"{bad}:3: preference 'better' is not a number" in capsys.readouterr().err
