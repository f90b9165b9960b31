"""`joust import battles`: LLMFAO crowd votes reproduce evalica's golden Elo and Bradley-Terry
through the store (so the import keeps every verdict, its sides and its order); Arena-style JSON
imports; bad files store nothing and name their line; importing again adds nothing.

The LLMFAO tests run on tests/data/llmfao_tiny (a hand-made file of the same columns, its golden
scores worked out by hand: tests/data/README.md) in any checkout, and on the real crowd votes in
../shared/data, a required part (tests/required.py)."""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from leaderboard.keys import content_hash
from leaderboard.players import battles_at_level
from leaderboard.ratings import bradley_terry, online_elo
from leaderboard.spec import RunSpec
from leaderboard.types import Level, Pair, Winner
from service.cli import main
from service.store import NewJudgement, NewSubmission, Store
from service.store.imports import BatchConflict, ImportedJudgement
from service.usecases.importers.battles import PLACEHOLDER
from tests.required import SHARED_DATA, SYNTHETIC_DATA, skip_required


@dataclass(frozen=True)
class Votes:
    """An LLMFAO-style vote file, its golden scores, and what importing it must give."""

    path: Path
    golden: Path
    count: int  # votes
    layers: int  # child tournaments: the most votes one ordered pair got, less one


VOTES = {
    "synthetic": Votes(SYNTHETIC_DATA / "llmfao_tiny" / "comparisons.csv", SYNTHETIC_DATA / "llmfao_tiny" / "golden.csv",
                       21, 2),
    "shared": Votes(SHARED_DATA / "llmfao" / "crowd-comparisons.csv",
                    SHARED_DATA / "llmfao" / "evalica_golden" / "llmfao-golden.csv", 8931, 4),
}


@pytest.fixture(params=sorted(VOTES, reverse=True))
def votes(request: pytest.FixtureRequest) -> Votes:
    found = VOTES[request.param]
    for path in (found.path, found.golden):
        if not path.exists():
            skip_required("shared-data", f"missing {path}")
    return found


@pytest.fixture(autouse=True)
def _sqlite_in_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads the environment: make it use the SQLite file in --data-dir."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("JOUST_DATA_DIR", raising=False)


def joust(data_dir: Path, *args: str) -> int:
    return main([*args, "--data-dir", str(data_dir)])


def open_store(data_dir: Path) -> Store:
    return Store(f"sqlite:///{data_dir / 'joust.db'}")


def golden(votes: Votes, algorithm: str) -> dict[str, float]:
    with votes.golden.open() as fh:
        return {r["item"]: float(r["score"]) for r in csv.DictReader(fh) if r["algorithm"] == algorithm}


def test_llmfao_crowd_votes_reproduce_the_golden_scores(votes: Votes, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    assert joust(tmp_path, "import", "battles", str(votes.path)) == 0
    assert f"judgements {votes.count} new, 0 existing" in capsys.readouterr().out
    store = open_store(tmp_path)
    rows = store.side_rows(judge=f"import/{votes.path.stem}")
    assert len(rows) == votes.count
    battles = battles_at_level(rows, Level.MODEL)
    elo = online_elo(battles, k=4.0)
    expected_elo = golden(votes, "elo")
    assert set(elo) == set(expected_elo)
    assert max(abs(elo[m] - v) for m, v in expected_elo.items()) < 1e-6
    strengths = {m: 10 ** ((r - 1000.0) / 400.0) for m, r in bradley_terry(battles, ridge=0.0).items()}
    total = sum(strengths.values())
    for model, score in golden(votes, "bradley_terry").items():
        assert strengths[model] / total == pytest.approx(score, rel=1e-4), model
    store.close()


def test_llmfao_positions_and_tournament(votes: Votes, tmp_path: Path) -> None:
    """Side a is the model shown on the left and the call says so; the votes a pair gets (up to
    five in LLMFAO) spread over the import tournament and its layers, which the tournament board
    includes."""
    assert joust(tmp_path, "import", "battles", str(votes.path), "--judge", "crowd") == 0
    store = open_store(tmp_path)
    with votes.path.open() as fh:
        file_rows = list(csv.DictReader(fh))
    exported = store.export_judgements(judge="import/crowd")
    assert len(exported) == len(file_rows)
    for row, out in zip(file_rows, exported):
        assert (out["model_a"], out["model_b"], out["question_id"]) == (row["left"], row["right"], row["prompt"])
        assert out["outcome"] == {"left": "A", "right": "B", "tie": "TIE"}[row["winner"]]
        assert out["calls"][0]["first"] == out["a_id"]
        assert out["calls"][0]["fields"]["worker"] == row["worker"]
    tournament = store.list_tournaments()[-1]  # newest first: the import, then its layers
    assert tournament.spec.as_dict() == {"mode": "import", "source": votes.path.name, "judge": "import/crowd",
                                         "criteria": "overall"}
    assert tournament.status == "done"
    view = store.get_tournament(tournament.id)
    assert len(view.runs) == votes.layers
    assert len(store.side_rows(tournament_id=tournament.id)) == votes.count
    assert store.revision() == votes.count
    assert {s.output for s in store.list_submissions(limit=1000)} == {PLACEHOLDER}
    store.close()


def test_reimport_adds_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "arena.json"
    path.write_text(json.dumps(ARENA))
    assert joust(tmp_path, "import", "battles", str(path)) == 0
    store = open_store(tmp_path)
    before = (store.revision(), len(store.list_tournaments()), len(store.list_submissions()))
    capsys.readouterr()
    assert joust(tmp_path, "import", "battles", str(path)) == 0
    assert "judgements 0 new, 4 existing" in capsys.readouterr().out
    assert (store.revision(), len(store.list_tournaments()), len(store.list_submissions())) == before
    store.close()


ARENA = [
    {"question_id": "q1", "model_a": "vicuna-13b", "model_b": "alpaca-13b", "winner": "model_a", "judge": "u1",
     "turn": 1, "conversation_a": [{"role": "user", "content": "hi"}]},
    {"question_id": "q1", "model_a": "alpaca-13b", "model_b": "koala-13b", "winner": "tie (bothbad)", "judge": "u2"},
    {"question_id": "q2", "model_a": "koala-13b", "model_b": "vicuna-13b", "winner": "model_b", "judge": "u1"},
    {"question_id": "q2", "model_a": "vicuna-13b", "model_b": "koala-13b", "winner": "tie", "judge": "u3"},
]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_arena_style_json_imports(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"battles.{fmt}"
    text = json.dumps(ARENA, indent=1) if fmt == "json" else "\n".join(json.dumps(r) for r in ARENA) + "\n"
    path.write_text(text)
    assert joust(tmp_path, "import", "battles", str(path)) == 0
    store = open_store(tmp_path)
    # The `judge` column is the voter: each row is filed under its own judge, in file order.
    assert [len(store.side_rows(judge=f"import/{u}")) for u in ("u1", "u2", "u3", "battles")] == [2, 1, 1, 0]
    rows = store.side_rows()
    assert [(r.a_model, r.b_model, r.winner, r.question_id) for r in rows] == [
        ("vicuna-13b", "alpaca-13b", Winner.A, "q1"),
        ("alpaca-13b", "koala-13b", Winner.TIE, "q1"),
        ("koala-13b", "vicuna-13b", Winner.B, "q2"),
        ("vicuna-13b", "koala-13b", Winner.TIE, "q2"),
    ]
    calls = [r["calls"][0] for r in store.export_judgements()]
    assert [c["first"] for c in calls] == [None] * 4  # Arena files do not say who was shown first
    assert calls[1]["raw"] == "tie (bothbad)"
    assert calls[0]["fields"] == {"question_id": "q1", "judge": "u1", "turn": 1}  # no conversations
    assert len(store.list_submissions()) == 5  # (q1: 3 models) + (q2: 2 models)
    store.close()


def test_rows_without_question_ids_are_their_own_questions(tmp_path: Path) -> None:
    path = tmp_path / "votes.csv"
    path.write_text("model_a,model_b,winner\nm1,m2,model_a\nm1,m2,model_b\n")
    assert joust(tmp_path, "import", "battles", str(path)) == 0
    store = open_store(tmp_path)
    assert [r.question_id for r in store.side_rows()] == ["votes:2", "votes:3"]
    store.close()


BAD_FILES = {
    "missing-column.csv": ("model_a,model_b,result\nm1,m2,model_a\n", 1, "missing column 'winner'"),
    "unknown-winner.csv": ("model_a,model_b,winner\nm1,m2,model_a\nm1,m2,both\n", 3, "unknown winner 'both'"),
    "short-row.csv": ("model_a,model_b,winner\nm1,m2\n", 2, "expected 3 fields"),
    "same-model.csv": ("model_a,model_b,winner\nm1,m2,tie\nm1,m1,tie\n", 3, "both sides"),
    "broken.json": ('[\n {"model_a": "m1", "model_b": "m2", "winner": "tie"},\n {"model_a": "m1",\n]\n', 4,
                    "broken JSON"),
    "broken.jsonl": ('{"model_a": "m1", "model_b": "m2", "winner": "tie"}\n{"model_a": \n', 2, "broken JSON"),
    "missing-side.json": (('[{"model_a": "m1", "model_b": "m2", "winner": "tie"},\n {"model_a": "m1", '
                           '"winner": "tie"}]'), 2, "missing the two sides"),
    "not-objects.json": ('[["m1", "m2", "tie"]]', 1, "expected a JSON object"),
    "prompt-clash.csv": ("question_id,prompt,model_a,model_b,winner\nq,Hi?,m1,m2,tie\nq,Bye?,m1,m3,tie\n", 3,
                         "different question"),
    "no-model.csv": ("model_a,model_b,winner\nm1,m2,tie\n,m2,tie\n", 3, "missing 'model_a'"),
    "bad-first.csv": ("model_a,model_b,winner,first\nm1,m2,tie,a\nm1,m2,tie,c\n", 3, "unknown first 'c'"),
    "left-first-b.csv": ("left,right,winner,first\nm1,m2,left,b\n", 2, "left and right already say"),
    "inconsistent-win.csv": ("model_a,model_b,winner,consistent\nm1,m2,model_a,false\n", 2, "must be a tie"),
    "inconsistent-true.csv": ("model_a,model_b,winner,consistent\nm1,m2,tie (inconsistent),true\n", 2,
                              "orders disagreed"),
    "bad-consistent.csv": ("model_a,model_b,winner,consistent\nm1,m2,tie,maybe\n", 2, "true or false"),
    "outcome-clash.csv": ("model_a,model_b,winner,outcome\nm1,m2,model_a,B\n", 2, "disagrees with winner"),
    "turn-zero.csv": ("question_id,model_a,model_b,winner,turn\nq,m1,m2,tie,1\nq,m1,m2,tie,0\n", 3,
                      "'turn' must be 1 or more"),
    "turn-text.csv": ("question_id,model_a,model_b,winner,turn\nq,m1,m2,tie,two\n", 2, "must be a whole number"),
    "judge-voter.csv": ("model_a,model_b,winner,judge,voter\nm1,m2,tie,ann,bo\n", 2, "disagree"),
    "long-model.csv": (f"model_a,model_b,winner\n{'m' * 256},m2,tie\n", 2, "longer than 255"),
    "nul.jsonl": ('{"model_a": "m\\u0000", "model_b": "m2", "winner": "tie"}\n', 1, "NUL"),
    "bad-key.csv": ("model_a,model_b,winner,key\nm1,m2,tie,1\n", 2, "joust's judgement key"),
    "bad-order.csv": ("model_a,model_b,winner,order_policy\nm1,m2,tie,twice\n", 2, "unknown order_policy"),
    "bad-cost.csv": ("model_a,model_b,winner,cost_usd\nm1,m2,tie,-1\n", 2, "'cost_usd' must be a number >= 0"),
    "calls-not-json.csv": ("model_a,model_b,winner,calls\nm1,m2,tie,[{\n", 2, "'calls' is not JSON"),
    "calls-not-list.jsonl": ('{"model_a": "m1", "model_b": "m2", "winner": "tie", "calls": {"winner": "A"}}\n', 1,
                             "must be a list of objects"),
    "call-winner.jsonl": ('{"model_a": "m1", "model_b": "m2", "winner": "tie", "calls": [{"winner": "left"}]}\n', 1,
                          "call 1: winner 'left'"),
    "call-first.jsonl": (('{"a_id": 1, "b_id": 2, "model_a": "m1", "model_b": "m2", "winner": "tie", '
                          '"calls": [{"first": 3, "winner": "TIE"}]}\n'), 1, "call 1: first 3 is neither"),
    "calls-and-first.jsonl": (('{"model_a": "m1", "model_b": "m2", "winner": "tie", "first": "a", '
                               '"calls": [{"first": "a", "winner": "TIE"}]}\n'), 1,
                              "'first' is for a verdict of one call"),
    "flat-clash.csv": ('model_a,model_b,winner,call1_winner,calls\nm1,m2,tie,A,"[{""winner"": ""TIE""}]"\n', 2,
                       "call1_winner 'A' disagrees with calls ('TIE')"),
    # A row whose winner its own calls contradict (issue 24): the board would count the winner,
    # judge health the calls.
    "calls-contradict.jsonl": (('{"model_a": "m1", "model_b": "m2", "winner": "tie"}\n'
                                '{"model_a": "m1", "model_b": "m2", "winner": "model_a", '
                                '"calls": [{"first": "b", "winner": "A"}]}\n'), 2,
                               "winner 'model_a' contradicts call 1, which said b shown first, 'A': model_b won"),
    "calls-two-orders.jsonl": (('{"a_id": 7, "b_id": 9, "model_a": "m1", "model_b": "m2", "winner": "model_b", '
                                '"calls": [{"first": 7, "winner": "B"}, {"first": 9, "winner": "B"}]}\n'), 1,
                               "contradicts call 2, which said b shown first, 'B': model_a won"),
    "calls-said-tie.csv": ("model_a,model_b,winner,call1_first,call1_winner\nm1,m2,model_b,,TIE\n", 2,
                           "contradicts call 1, which said a tie"),
    "calls-named-winner.jsonl": ('{"model_a": "m1", "model_b": "m2", "winner": "tie", "calls": [{"winner": "A"}]}\n',
                                 1, "contradicts call 1, which said a winner, not a tie"),
    "calls-agree-inconsistent.jsonl": (('{"model_a": "m1", "model_b": "m2", "winner": "tie", "consistent": false, '
                                        '"calls": [{"first": "a", "winner": "A"}, {"first": "b", "winner": "B"}]}\n'),
                                       1, "consistent is false (the orders disagreed), but its calls agree"),
    "key-two-judges.jsonl": ((f'{{"model_a": "m1", "model_b": "m2", "winner": "tie", "key": "{"a" * 64}", '
                              f'"judge": "x"}}\n{{"model_a": "m1", "model_b": "m3", "winner": "tie", '
                              f'"key": "{"a" * 64}", "judge": "y"}}\n'), 2, "is also on line 1"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_files_name_the_line_and_store_nothing(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture
) -> None:
    text, line, message = BAD_FILES[name]
    path = tmp_path / name
    path.write_text(text)
    assert joust(tmp_path, "import", "battles", str(path)) == 2
    err = capsys.readouterr().err
    assert f"{path}:{line}: " in err and message in err, err
    store = open_store(tmp_path)
    assert (store.list_submissions(), store.list_tournaments(), store.revision()) == ([], [], 0)
    store.close()


def test_unknown_extension_needs_a_format(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "battles.txt"
    path.write_text("model_a,model_b,winner\nm1,m2,model_b\n")
    assert joust(tmp_path, "import", "battles", str(path)) == 2
    assert "--format" in capsys.readouterr().err
    assert joust(tmp_path, "import", "battles", str(path), "--format", "csv") == 0


def test_import_judgements_stamps_seq_and_layers(store: Store) -> None:
    """Store level: imported matches take the next block of `seq` after a worker's, count once,
    put a repeated ordered pair in a layer, and skip keys already stored."""
    (a, _), (b, _), (c, _) = store.add_submissions_bulk(
        [NewSubmission("q", "Q?", m, "default", f"out {m}") for m in ("m1", "m2", "m3")])
    tid = store.create_tournament("live", RunSpec(judge="anthropic/x"), [Pair(a, b)])
    jid, _ = store.save_judgement(NewJudgement("k0", "anthropic/x", "overall", "t", a, b, content_hash("out m1"),
                                               Winner.A, True, [{"first": a, "winner": "A"}]))
    assert store.resolve_match(store.pending_matches(tid)[0], jid, Winner.A, True)
    rows = [ImportedJudgement("k1", a, b, Winner.B, [{"first": None, "winner": "B"}]),
            ImportedJudgement("k0", a, b, Winner.A, []),  # already stored by the worker: skipped
            ImportedJudgement("k2", a, b, Winner.TIE, [{"first": a, "winner": "TIE"}]),
            ImportedJudgement("k3", b, c, Winner.A, [{"first": b, "winner": "A"}])]
    result = store.import_judgements(name="file", source="f.csv", judge="import/f", criteria="overall", rows=rows)
    assert (result.created, result.existing, len(result.layers)) == (3, 1, 1)
    assert store.revision() == 4
    exported = store.export_judgements(judge="import/f")
    assert [(r["seq"], r["outcome"], r["tournament_id"]) for r in exported] == [
        (2, "B", result.tournament_id), (3, "TIE", result.layers[0]), (4, "A", result.tournament_id)]
    assert store.get_tournament(result.tournament_id).runs == tuple(result.layers)
    assert len(store.side_rows()) == 4 and len(store.side_rows(tournament_id=result.tournament_id)) == 3
    again = store.import_judgements(name="file", source="f.csv", judge="import/f", criteria="overall", rows=rows)
    assert (again.tournament_id, again.created, again.existing) == (None, 0, 4)
    with pytest.raises(BatchConflict) as info:
        store.add_submissions_bulk([NewSubmission("n", "N?", "m1", "default", "x"),
                                    NewSubmission("n", "N?", "m1", "default", "y")])
    assert info.value.index == 1
    assert store.list_submissions(question_id="n") == []


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("model_a,model_b,winner\nm1,m\u00e92,tie\n".encode("latin-1"))
    assert joust(tmp_path, "import", "battles", str(path)) == 2
    assert f"{path}: not UTF-8 text" in capsys.readouterr().err


# ---- question text: a row without it meets the text known for its question ------------------
# Chatbot Arena's rows have no question text (the submission is filed with its question id as
# the text); a judge's file on the same questions may have it. The two must meet on one board.

Q1 = "What is q1?"


def battle_file(folder: Path, name: str, rows: list[dict]) -> Path:
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def battle(question_id: str, a: str, b: str, winner: str = "tie", **fields: str) -> dict:
    return {"question_id": question_id, "model_a": a, "model_b": b, "winner": winner, **fields}


def question_texts(data_dir: Path) -> dict[tuple[str, str], str]:
    store = open_store(data_dir)
    try:
        return {(s.question_id, s.model): s.question for s in store.list_submissions(limit=100)}
    finally:
        store.close()


def test_rows_without_question_text_take_the_one_the_file_gives(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    path = battle_file(tmp_path, "mixed.jsonl", [
        battle("q1", "m1", "m2", "model_a"),  # no text, before the row that gives it
        battle("q1", "m1", "m3", question=Q1),
        battle("q1", "m2", "m3", "model_b"),
        battle("q2", "m1", "m2")])  # no row gives q2's text: the id stands in for it
    assert joust(tmp_path, "import", "battles", str(path)) == 0
    out = capsys.readouterr().out
    assert "submissions 5 new, 0 existing" in out and "filled" not in out
    assert question_texts(tmp_path) == {("q1", "m1"): Q1, ("q1", "m2"): Q1, ("q1", "m3"): Q1,
                                        ("q2", "m1"): "q2", ("q2", "m2"): "q2"}


def test_rows_without_question_text_take_the_stored_one(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    outputs = {"output_a": "x", "output_b": "y"}
    judged = battle_file(tmp_path, "judged.jsonl", [battle("q1", "m1", "m2", "model_b", question=Q1, **outputs)])
    assert joust(tmp_path, "import", "battles", str(judged)) == 0
    arena = battle_file(tmp_path, "arena.jsonl", [battle("q1", "m1", "m2", "model_a", **outputs),
                                                  battle("q1", "m3", "m4")])  # new sides: the stored text too
    capsys.readouterr()
    assert joust(tmp_path, "import", "battles", str(arena)) == 0
    out = capsys.readouterr().out
    assert "submissions 2 new, 2 existing; judgements 2 new, 0 existing" in out and "filled" not in out
    assert set(question_texts(tmp_path).values()) == {Q1}
    store = open_store(tmp_path)
    assert {h.judge for h in store.judge_health()} == {"import/judged", "import/arena"}  # one board, two sources
    store.close()


@pytest.mark.parametrize("human", [False, True], ids=["judge", "human"])
def test_a_file_with_the_question_text_fills_in_the_stored_placeholders(
    tmp_path: Path, capsys: pytest.CaptureFixture, human: bool,
) -> None:
    arena = battle_file(tmp_path, "arena.jsonl", [battle("q1", "m1", "m2", "model_a"), battle("q1", "m2", "m3"),
                                                  battle("q2", "m1", "m2")])
    assert joust(tmp_path, "import", "battles", str(arena)) == 0
    texted = battle_file(tmp_path, "texted.jsonl", [battle("q1", "m1", "m2", "model_b", question=Q1)])
    capsys.readouterr()
    assert joust(tmp_path, "import", "battles", str(texted), *(["--human"] if human else [])) == 0
    out = capsys.readouterr().out
    assert "question text filled in for 3 stored submissions" in out, out  # m3 too: the question's, not the row's
    assert question_texts(tmp_path) == {("q1", "m1"): Q1, ("q1", "m2"): Q1, ("q1", "m3"): Q1,
                                        ("q2", "m1"): "q2", ("q2", "m2"): "q2"}
    store = open_store(tmp_path)
    # The question hash follows the text: the filled submissions are the text's, as any writer sees them.
    assert [created for _, created in store.add_submissions(
        [NewSubmission("q1", Q1, m, "default", PLACEHOLDER) for m in ("m1", "m2", "m3")])] == [False] * 3
    before = store.revision()
    store.close()
    assert joust(tmp_path, "import", "battles", str(arena)) == 0  # the file without the text: nothing new
    out = capsys.readouterr().out
    assert "judgements 0 new, 3 existing" in out and "filled" not in out
    assert set(question_texts(tmp_path).values()) == {Q1, "q2"}
    store = open_store(tmp_path)
    assert store.revision() == before
    store.close()


def test_a_stored_question_text_is_never_replaced(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A text of its own conflicts with another (the file's line named); a refused file changes
    nothing, not even the placeholders an earlier line of it would have filled in."""
    first = battle_file(tmp_path, "first.jsonl", [battle("q1", "m1", "m2", question=Q1), battle("q2", "m1", "m2")])
    assert joust(tmp_path, "import", "battles", str(first)) == 0
    texts = question_texts(tmp_path)
    store = open_store(tmp_path)
    before = (store.revision(), len(store.list_tournaments()))
    store.close()
    other = battle_file(tmp_path, "other.jsonl", [battle("q2", "m1", "m2", question="What is q2?"),
                                                  battle("q1", "m1", "m3", question="Something else?")])
    capsys.readouterr()
    assert joust(tmp_path, "import", "battles", str(other)) == 2
    err = capsys.readouterr().err
    assert f"{other}:2: " in err and "nothing was stored" in err, err
    assert ("(question_id='q1', model='m1', scenario='default') already holds a different question: "
            "'What is q1?', where this one says 'Something else?'") in err, err
    assert question_texts(tmp_path) == texts  # q2 still holds its id: the fill went with the refused file
    store = open_store(tmp_path)
    assert (store.revision(), len(store.list_tournaments())) == before
    store.close()


def test_a_submitted_text_that_is_its_question_id_is_not_filled_in(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    """Only an import's placeholder text is filled in: a submission posted with the text "q1"
    said so itself."""
    store = open_store(tmp_path)
    store.add_submissions([NewSubmission("q1", "q1", "m1", "default", "an answer")])
    store.close()
    path = battle_file(tmp_path, "texted.jsonl", [battle("q1", "m1", "m2", question=Q1, output_a="an answer")])
    assert joust(tmp_path, "import", "battles", str(path)) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: " in err and f"already holds a different question: 'q1', where this one says {Q1!r}" in err
    assert question_texts(tmp_path) == {("q1", "m1"): "q1"}
