"""`joust export`: judgements and boards as CSV and JSONL, and the round trip: exported
judgements re-imported as a battle file give the same battles, in the same order."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from leaderboard.board import build_board
from leaderboard.keys import content_hash
from leaderboard.players import battles_at_level
from leaderboard.ratings import online_elo
from leaderboard.spec import RunSpec
from leaderboard.types import Level, Pair, Winner
from service.cli import main
from service.store import NewJudgement, NewSubmission, Store
from service.store.imports import ImportedJudgement
from tests.conftest import SHARED_DATA
from tests.required import skip_required

CROWD = SHARED_DATA / "llmfao" / "crowd-comparisons.csv"


@pytest.fixture(autouse=True)
def _sqlite_in_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("JOUST_DATA_DIR", raising=False)


def joust(data_dir: Path, *args: str) -> int:
    return main([*args, "--data-dir", str(data_dir)])


def open_store(data_dir: Path) -> Store:
    data_dir.mkdir(parents=True, exist_ok=True)
    return Store(f"sqlite:///{data_dir / 'joust.db'}")


def seed(store: Store) -> int:
    """Two scenarios of two models on two questions, imported through the store's API."""
    subs = [NewSubmission(q, f"{q}?", m, sc, f"{q} {m} {sc}") for q in ("q1", "q2") for m in ("m1", "m2")
            for sc in ("plain", "cot")]
    ids = {(s.question_id, s.model, s.scenario): i for s, (i, _) in zip(subs, store.add_submissions_bulk(subs))}
    verdicts = [("q1", ("m1", "plain"), ("m2", "plain"), Winner.A), ("q1", ("m1", "cot"), ("m2", "plain"), Winner.A),
                ("q1", ("m2", "cot"), ("m1", "plain"), Winner.TIE), ("q2", ("m1", "cot"), ("m2", "cot"), Winner.B),
                ("q2", ("m2", "plain"), ("m1", "cot"), Winner.B), ("q2", ("m1", "plain"), ("m2", "cot"), Winner.A)]
    rows = [ImportedJudgement(content_hash(f"k{i}"), ids[(q, *a)], ids[(q, *b)], w,
                              [{"first": ids[(q, *a)], "winner": w.value, "reason": f"why {i}"}])
            for i, (q, a, b, w) in enumerate(verdicts)]
    return store.import_judgements(name="seed", source="test", judge="import/seed", criteria="overall",
                                   rows=rows).tournament_id or 0


def side_tuples(store: Store, judge: str) -> list[tuple]:
    return [(r.a_model, r.a_scenario, r.b_model, r.b_scenario, r.winner, r.question_id)
            for r in store.side_rows(judge=judge)]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_judgements_round_trip_through_a_battle_file(tmp_path: Path, fmt: str) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    store = open_store(first)
    seed(store)
    out = tmp_path / f"seed-export.{fmt}"
    assert joust(first, "export", "judgements", "--format", fmt, "-o", str(out)) == 0
    assert joust(second, "import", "battles", str(out), "--judge", "seed") == 0
    again = open_store(second)
    assert side_tuples(again, "import/seed") == side_tuples(store, "import/seed")
    for level in Level:
        ours = build_board(battles_at_level(store.side_rows(), level))
        theirs = build_board(battles_at_level(again.side_rows(), level))
        assert [(r.player, r.wins, r.losses, r.ties) for r in ours] == [(r.player, r.wins, r.losses, r.ties)
                                                                       for r in theirs]
        assert [r.rating for r in ours] == pytest.approx([r.rating for r in theirs])
    store.close()
    again.close()


def test_llmfao_round_trip_keeps_the_order(tmp_path: Path) -> None:
    """Online Elo depends on the order: the re-imported export replays the same ratings."""
    if not CROWD.exists():
        skip_required("shared-data", f"missing {CROWD}")
    first, second = tmp_path / "a", tmp_path / "b"
    assert joust(first, "import", "battles", str(CROWD)) == 0
    out = tmp_path / "crowd-export.csv"
    assert joust(first, "export", "judgements", "-o", str(out)) == 0
    assert joust(second, "import", "battles", str(out)) == 0
    one, two = open_store(first), open_store(second)
    elo_one = online_elo(battles_at_level(one.side_rows(), Level.MODEL), k=4)
    # The export names its judge: the votes come back as import/crowd-comparisons, not the export's name.
    assert two.side_rows(judge="import/crowd-export") == []
    elo_two = online_elo(battles_at_level(two.side_rows(judge="import/crowd-comparisons"), Level.MODEL), k=4)
    assert elo_two == pytest.approx(elo_one, abs=1e-9)
    one.close()
    two.close()


def test_judgement_rows_in_csv_and_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A worker's two-call judgement exports both calls, `first` named by the match's ids."""
    store = open_store(tmp_path)
    (a, _), (b, _) = store.add_submissions([NewSubmission("q", "Q?", "m1", "default", "x"),
                                            NewSubmission("q", "Q?", "m2", "default", "y")])
    tid = store.create_tournament("live", RunSpec(judge="anthropic/x"), [Pair(a, b)])
    calls = [{"first": b, "winner": "B", "reason": "x is better"}, {"first": a, "winner": "A", "reason": "x, again"}]
    jid, _ = store.save_judgement(NewJudgement("k", "anthropic/x", "overall", "v1", a, b, content_hash("x"),
                                               Winner.A, True, calls, input_tokens=10, output_tokens=4))
    store.resolve_match(store.pending_matches(tid)[0], jid, Winner.A, True)
    seed(store)
    assert joust(tmp_path, "export", "judgements", "--judge", "anthropic/x") == 0
    (row,) = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert row["winner"] == "model_a" and row["outcome"] == "A" and row["consistent"] == "true"
    assert (row["model_a"], row["model_b"], row["judge"], row["input_tokens"]) == ("m1", "m2", "anthropic/x", "10")
    assert (row["call1_first"], row["call1_winner"], row["call2_first"], row["call2_reason"]) == (
        str(b), "B", str(a), "x, again")
    assert joust(tmp_path, "export", "judgements", "--tournament", str(tid), "--format", "jsonl") == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["calls"] == calls
    assert joust(tmp_path, "export", "judgements", "--format", "jsonl") == 0
    assert len(capsys.readouterr().out.splitlines()) == 7
    store.close()


@pytest.mark.parametrize("by", ["model", "scenario", "model+scenario"])
def test_board_export_matches_the_board(tmp_path: Path, by: str, capsys: pytest.CaptureFixture) -> None:
    store = open_store(tmp_path)
    tid = seed(store)
    expected = build_board(battles_at_level(store.side_rows(), Level(by)), k=32.0)
    assert joust(tmp_path, "export", "board", "--by", by) == 0
    out, err = capsys.readouterr()
    assert err == "joust export: the board of judge import/seed (latest tournament); other judges (--judge): none\n"
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["player"] for r in rows] == [r.player for r in expected]
    assert {(r["judge"], r["component"]) for r in rows} == {("import/seed", "1")}
    assert [int(r["rank"]) for r in rows] == list(range(1, len(expected) + 1))
    assert [float(r["rating"]) for r in rows] == pytest.approx([r.rating for r in expected])
    assert [int(r["wins"]) for r in rows] == [r.wins for r in expected]
    out = tmp_path / "board.jsonl"
    assert joust(tmp_path, "export", "board", "--by", by, "--tournament", str(tid), "--format", "jsonl",
                 "-o", str(out)) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["player"] for x in lines] == [r.player for r in expected]
    assert lines[0]["elo"] == pytest.approx(expected[0].elo)
    store.close()


def test_unknown_tournament_and_judge(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    seed(open_store(tmp_path))
    assert joust(tmp_path, "export", "board", "--tournament", "999") == 2
    assert "no tournament 999" in capsys.readouterr().err
    assert joust(tmp_path, "export", "judgements", "--tournament", "999") == 2
    capsys.readouterr()
    assert joust(tmp_path, "export", "board", "--judge", "nobody", "--format", "jsonl") == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "joust export: no verdicts from judge 'nobody' here; judges with verdicts: import/seed\n"


def test_a_board_export_is_one_judges(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Another judge imported later becomes the default; each judge, and the human voters
    together, export their own verdicts only."""
    store = open_store(tmp_path)
    seed(store)
    subs = {(s.question_id, s.model, s.scenario): s.id for s in store.list_submissions()}
    m1, m2 = subs[("q1", "m1", "plain")], subs[("q1", "m2", "plain")]
    for judge, winner in (("import/other", Winner.B), ("human/alice", Winner.B), ("human/bob", Winner.B)):
        store.import_judgements(name=judge, source="test", judge=judge, criteria="overall", rows=[
            ImportedJudgement(f"{judge}-1", m1, m2, winner, [{"first": m1, "winner": winner.value}])])
    store.close()

    def board(*args: str) -> tuple[list[dict], str]:
        assert joust(tmp_path, "export", "board", "--format", "jsonl", *args) == 0
        out, err = capsys.readouterr()
        return [json.loads(line) for line in out.splitlines()], err

    rows, err = board()
    assert err == ("joust export: the board of judge import/other (latest tournament); other judges (--judge): "
                   "import/seed, human, human/alice, human/bob\n")
    assert [(r["player"], r["wins"], r["losses"], r["judge"]) for r in rows] == [
        ("m2", 1, 0, "import/other"), ("m1", 0, 1, "import/other")]
    rows, err = board("--judge", "import/seed")
    assert err == "" and sum(r["matches"] for r in rows) == 2 * 6
    rows, _ = board("--judge", "human")
    assert [(r["player"], r["wins"], r["judge"]) for r in rows] == [("m2", 2, "human"), ("m1", 0, "human")]


def test_jsonl_says_what_each_judgement_was(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """One JSON line per judgement: time, question, both labels, the order shown, the winner,
    the reason and both output lengths (besides the columns every format has)."""
    store = open_store(tmp_path)
    (a, _), (b, _) = store.add_submissions([NewSubmission("q", "Tea or coffee?", "m1", "terse", "tea"),
                                            NewSubmission("q", "Tea or coffee?", "m2", "default", "coffee, then tea")])
    tid = store.create_tournament("live", RunSpec(judge="anthropic/x"), [Pair(a, b)])
    calls = [{"first": b, "winner": "B", "reason": "tea is enough"}, {"first": a, "winner": "A", "reason": "still tea"}]
    # Judged with the sides the other way round: the export re-orients everything to the match.
    jid, _ = store.save_judgement(NewJudgement("k", "anthropic/x", "overall", "v1", b, a, content_hash("coffee, then tea"),
                                               Winner.B, True, calls, cost_usd=0.002))
    store.resolve_match(store.pending_matches(tid)[0], jid, Winner.A, True)
    assert joust(tmp_path, "export", "judgements", "--format", "jsonl") == 0
    (line,) = capsys.readouterr().out.splitlines()
    row = json.loads(line)
    assert row["time"].endswith("+00:00") and row["time"][:4].isdigit() and "T" in row["time"]
    assert (row["question"], row["label_a"], row["label_b"]) == ("Tea or coffee?", "m1/terse", "m2/default")
    assert (row["order"], row["winner"], row["reason"]) == (["b", "a"], "model_a", "tea is enough")
    assert (row["len_a"], row["len_b"], row["cost_usd"]) == (3, 16, 0.002)
    assert row["question_id"] == "q" and row["calls"] == calls  # the existing fields stay
    assert joust(tmp_path, "export", "judgements") == 0  # CSV keeps its columns
    assert "label_a" not in capsys.readouterr().out.splitlines()[0]
    store.close()
