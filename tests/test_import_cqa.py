"""`joust import cqa` on the Comparative-QA benchmark: the stored rubric scores reproduce every
(generator, scenario) mean and standard deviation the paper's notebook printed, for GPT-4
few-shot, Perplexity, GPT-3.5 and the human experts; the pairwise judgements derived from the
scores rank the generators as their mean scores do.

Each import test runs twice: on tests/data/cqa_tiny, a hand-made directory of the same layout
whose expected means were worked out from the totals its files hold (tests/data/README.md), in
any checkout; then on the real data in ../shared/data, a required part (tests/required.py)."""
from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from leaderboard.board import build_board
from leaderboard.players import battles_at_level
from leaderboard.types import Level, Winner
from service.cli import main
from service.store import Conflict, NewSubmission, Store
from service.store.imports import NewScore
from tests.required import SHARED_DATA, SYNTHETIC_DATA, shared_data

# Its module-scoped fixture is built once: every test of the module runs in one of the suite's processes.
pytestmark = pytest.mark.xdist_group("test_import_cqa")

CQA = SHARED_DATA / "cqa_evaluation"
NOTEBOOK = CQA / "published_results_notebook_outputs.txt"
JUDGES = {"few": "rubric/gpt-4-fewshot", "perplexity": "rubric/perplexity", "gpt-3.5": "rubric/gpt-3.5",
          "human": "rubric/human"}
Cells = dict[str, dict[tuple[str, str], tuple[float, float]]]  # judge -> (model, scenario) -> (mean, std)


def published_cells() -> dict[tuple[str, str], dict[str, float]]:
    """The (model, scenario) table of the notebook's cell 12, all column blocks joined."""
    text = shared_data("cqa_evaluation", NOTEBOOK.name).read_text()
    start = text.index("model scenario")
    table = text[text.rindex("=== cell", 0, start):text.index("=== cell", start)]
    header: list[str] = []
    rows: dict[int, dict[str, str]] = {}
    for line in table.splitlines()[1:]:
        tokens = line.replace("\\", " ").split()
        if not tokens:
            continue
        if tokens[0].isdigit() and header:
            rows.setdefault(int(tokens[0]), {}).update(zip(header, tokens[1:]))
        else:
            header = tokens
    return {(r["model"], r["scenario"]): {k: float(v) for k, v in r.items() if k not in ("model", "scenario")}
            for r in rows.values()}


def our_cell(model: str, scenario: str) -> tuple[str, str]:
    """The notebook's scenario "1" is ours "scenario_1"; human, cam and yahoo are "default"."""
    return model, f"scenario_{scenario}" if scenario.isdigit() else "default"


def notebook_cells() -> Cells:
    return {judge: {our_cell(*cell): (values[column], values[f"{column}-std"]) for cell, values in published_cells().items()}
            for column, judge in JUDGES.items()}


def expected_cells(path: Path) -> Cells:
    """tests/data/cqa_tiny/expected_means.csv: one row per (judge, model, scenario); no std for one score."""
    cells: Cells = {}
    with path.open(newline="") as fh:
        for r in csv.DictReader(fh):
            cells.setdefault(r["judge"], {})[(r["model"], r["scenario"])] = (
                float(r["mean"]), float(r["std"]) if r["std"] else math.nan)
    return cells


@dataclass(frozen=True)
class CqaData:
    """A CQA directory and what importing it must give."""

    root: Path
    cells: Cells
    submissions: int
    first_file: tuple[str, str, int]  # (model, scenario, summaries) of gpt4_scenario_1.json
    human_scores: int
    last_two: list[str]  # the generators at the bottom, by mean and on the board
    scenarios: set[str]  # perplexity's per-scenario board: its players, the best first
    best_scenario: str
    systems: int
    base: tuple[str, str, str, int, set[str]]  # model, object1 -> question, systems asked it, "-2" models


def synthetic() -> CqaData:
    root = SYNTHETIC_DATA / "cqa_tiny"
    return CqaData(root, expected_cells(root / "expected_means.csv"), 18, ("gpt4", "scenario_1", 4), 8,
                   ["cam", "yahoo"], {"scenario_1", "scenario_2", "default"}, "scenario_1", 5,
                   ("llama3-8b", "tea", "Compare tea and coffee with respect to taste", 5, {"gpt4"}))


def real() -> CqaData:
    shared_data("cqa_evaluation", "raw_summaries")
    return CqaData(CQA, notebook_cells(), 2158, ("gpt4", "scenario_1", 150), 367, ["cam", "yahoo"],
                   {"scenario_1", "scenario_2", "scenario_3", "scenario_4", "default"}, "scenario_3", 27,
                   ("llama3-8b", "baseball", "Compare baseball and softball with respect to most played sport", 26,
                    {"gpt3-5", "gpt4"}))  # 6 generators x 4 scenarios + human + cam (yahoo asked another aspect)


Imported = tuple[Store, CqaData]


@pytest.fixture(scope="module", params=["synthetic", "shared"])
def cqa(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Imported]:
    data = synthetic() if request.param == "synthetic" else real()
    data_dir = tmp_path_factory.mktemp("cqa")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("DATABASE_URL", raising=False)
        mp.delenv("JOUST_DATA_DIR", raising=False)
        assert main(["import", "cqa", str(data.root), "--data-dir", str(data_dir)]) == 0
    st = Store(f"sqlite:///{data_dir / 'joust.db'}")
    yield st, data
    st.close()


def test_the_notebook_table_is_read() -> None:
    cells = published_cells()
    assert len(cells) == 27
    assert cells[("gpt4", "1")]["few"] == 17.586667 and cells[("yahoo", "yahoo")]["gpt-3.5-std"] == 4.859012


def test_means_reproduce_every_published_cell(cqa: Imported) -> None:
    store, data = cqa
    for judge, published in data.cells.items():
        ours = {(r["model"], r["scenario"]): r for r in store.score_means(judge, "compqa")}
        assert set(ours) == set(published), judge
        for cell, (mean, std) in published.items():
            assert ours[cell]["mean"] == pytest.approx(mean, abs=1e-6), (cell, judge)
            assert ours[cell]["std"] == pytest.approx(std, abs=1e-6, nan_ok=True), (cell, judge)


def test_counts(cqa: Imported) -> None:
    store, data = cqa
    subs = store.list_submissions(limit=10_000)
    assert len(subs) == data.submissions  # every summary of every file, the three per pair of gpt3-5/gpt4 included
    model, scenario, count = data.first_file
    first = [s for s in subs if (s.model, s.scenario) == (model, scenario)]
    assert len(first) == count and len({s.question_id for s in first}) == count
    human = store.score_means("rubric/human", "compqa", by=())
    assert human[0]["n"] == data.human_scores  # summaries scored twice count both evaluations


def test_derived_judgements_rank_generators_as_their_means(cqa: Imported) -> None:
    store, data = cqa
    judge = "rubric/gpt-4-fewshot"
    means = {r["model"]: r["mean"] for r in store.score_means(judge, "compqa", by=("model",))}
    board = [r.player for r in build_board(battles_at_level(store.side_rows(judge=judge), Level.MODEL))]
    by_mean = sorted(means, key=means.get, reverse=True)
    assert set(board) == set(by_mean)
    assert board[0] == by_mean[0] == "gpt4"
    assert board[-2:] == by_mean[-2:] == data.last_two
    n = len(board)
    rank = {m: i for i, m in enumerate(board)}
    spearman = 1 - 6 * sum((rank[m] - i) ** 2 for i, m in enumerate(by_mean)) / (n * (n * n - 1))
    assert spearman > 0.9


def test_boards_by_scenario_and_system(cqa: Imported) -> None:
    store, data = cqa
    rows = store.side_rows(judge="rubric/perplexity")
    scenarios = build_board(battles_at_level(rows, Level.SCENARIO))
    assert {r.player for r in scenarios} == data.scenarios
    assert scenarios[0].player == data.best_scenario  # the best mean in every judge's per-scenario table
    systems = build_board(battles_at_level(rows, Level.SYSTEM))
    assert len(systems) == data.systems


def test_reimport_adds_nothing(cqa: Imported, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    store, data = cqa
    before = store.revision()
    data_dir = Path(store.url.removeprefix("sqlite:///")).parent
    capsys.readouterr()
    assert main(["import", "cqa", str(data.root), "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    assert f"submissions 0 new, {data.submissions} existing" in out
    assert "judgements 0 new" in out and "scores 0 new" in out
    assert store.revision() == before


def test_question_text_and_pairing(cqa: Imported) -> None:
    """The first summary of a comparison in each file meets all systems; the later ones of
    gpt3-5 and gpt4 (and human) meet only each other under "<id>-<k>"."""
    store, data = cqa
    model, object1, question, asked, later_models = data.base
    subs = store.list_submissions(limit=10_000)
    base = next(s for s in subs if s.model == model and s.metadata["object1"] == object1)
    assert base.question == question
    same = [s for s in subs if s.question_id == base.question_id]
    assert len(same) == asked
    later = [s for s in subs if s.question_id == base.question_id + "-2"]
    assert {s.model for s in later} == later_models
    assert all(re.fullmatch(r"cqa-[0-9a-f]{16}(-[234])?", s.question_id) for s in subs)


def test_scores_are_stored_once_and_summarised(store: Store) -> None:
    """Unit level, no shared data: the same score again is a no-op, a different one a conflict;
    several evaluations in one row count each; one value has no standard deviation."""
    (a, _), (b, _), (c, _) = store.add_submissions([
        NewSubmission("q1", "Q1?", "m1", "s1", "x"), NewSubmission("q2", "Q2?", "m1", "s1", "y"),
        NewSubmission("q1", "Q1?", "m2", "s1", "z")])
    rows = [NewScore(a, "rubric/j", "compqa", 10.0, {"criteria": {"C1": 1}}),
            NewScore(b, "rubric/j", "compqa", 13.0, {"evaluations": [{"total": 12.0}, {"total": 14.0}]}),
            NewScore(c, "rubric/j", "compqa", 7.0)]
    assert store.add_scores(rows) == (3, 0)
    assert store.add_scores(rows[:1]) == (0, 1)
    with pytest.raises(Conflict, match="different rubric/j compqa score"):
        store.add_scores([NewScore(c, "rubric/j", "compqa", 8.0), NewScore(b, "rubric/k", "compqa", 1.0)])
    assert store.score_means("rubric/k", "compqa") == []  # the batch stored nothing
    means = {r["model"]: r for r in store.score_means("rubric/j", "compqa", by=("model",))}
    assert means["m1"]["mean"] == pytest.approx(12.0) and means["m1"]["n"] == 3
    assert means["m1"]["std"] == pytest.approx(2.0)  # 10, 12, 14
    assert means["m2"]["n"] == 1 and means["m2"]["std"] != means["m2"]["std"]  # NaN
    with pytest.raises(ValueError):
        store.score_means("rubric/j", "compqa", by=("judge",))


def write_mini_cqa(root: Path, gpt4_c1: str = "1") -> Path:
    """Two systems on one comparison, scored by one LLM judge (one row unparsed)."""
    (root / "raw_summaries").mkdir(parents=True)
    (root / "compact").mkdir()
    pair = {"object1": "tea", "object2": "coffee", "aspect": "taste"}
    (root / "raw_summaries" / "gpt4_scenario_1.json").write_text(json.dumps([{**pair, "comparison": "Tea wins."}]))
    (root / "raw_summaries" / "cam.json").write_text(json.dumps([{**pair, "comparison": "Coffee wins."},
                                                                 {**pair, "comparison": "Both."}]))
    header = "judge,judge_setting,source_file,item,object1,object2," + ",".join(f"C{i}" for i in range(1, 16))
    rows = [f"gpt-4,,x/gpt4_scenario_1.json,0,tea,coffee,{gpt4_c1}" + ",1" * 14,
            "gpt-4,,x/cam.json,0,tea,coffee" + ",0" * 15,
            "gpt-4,,x/cam.json,1,tea,coffee" + "," * 15]
    (root / "compact" / "evaluated_summaries_scores.csv").write_text("\n".join([header, *rows]) + "\n")
    return root


def test_a_small_directory_and_a_changed_score(tmp_path: Path, capsys: pytest.CaptureFixture,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    data = tmp_path / "data"
    assert main(["import", "cqa", str(write_mini_cqa(tmp_path / "v1")), "--data-dir", str(data)]) == 0
    assert "scores 2 new, 0 existing; 1 rows skipped" in capsys.readouterr().out
    st = Store(f"sqlite:///{data / 'joust.db'}")
    means = {(r["model"], r["scenario"]): r["mean"] for r in st.score_means("rubric/gpt-4-fewshot", "compqa")}
    assert means == {("gpt4", "scenario_1"): 15.0, ("cam", "default"): 0.0}
    rows = st.side_rows(judge="rubric/gpt-4-fewshot")
    assert [(r.a_model, r.b_model, r.winner) for r in rows] == [("cam", "gpt4", Winner.B)]  # "Both." is "-2"
    before = st.revision()
    assert main(["import", "cqa", str(write_mini_cqa(tmp_path / "v2", gpt4_c1="0")), "--data-dir", str(data)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'v2' / 'compact' / 'evaluated_summaries_scores.csv'}:2: " in err and "different" in err
    assert st.revision() == before
    st.close()
