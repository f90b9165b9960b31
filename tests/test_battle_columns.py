"""`joust import battles` columns beyond the sides and the winner: who was shown first in a
one-call verdict, MT-Bench's "tie (inconsistent)", `turn`, a per-row judge or voter, columns it
does not understand (named in the summary), calls spelled out in CSV, and `--human` votes filed
on the stored submissions. Through the real CLI, on a SQLite file in the data dir."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.keys import content_hash
from leaderboard.spec import RunSpec
from leaderboard.types import PLACEHOLDER_OUTPUT, Pair, Winner
from service.cli import main
from service.store import NewJudgement, NewSubmission, Store


@pytest.fixture(autouse=True)
def _sqlite_in_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("JOUST_DATA_DIR", raising=False)


def joust(data_dir: Path, *args: str) -> int:
    return main([*args, "--data-dir", str(data_dir)])


def open_store(data_dir: Path) -> Store:
    return Store(f"sqlite:///{data_dir / 'joust.db'}")


def write(tmp_path: Path, name: str, text: str | list[dict]) -> Path:
    path = tmp_path / name
    path.write_text(text if isinstance(text, str) else "".join(json.dumps(r) + "\n" for r in text))
    return path


def health(data_dir: Path) -> dict:
    store = open_store(data_dir)
    try:
        return {h.judge: h for h in store.judge_health()}
    finally:
        store.close()


def test_first_says_which_side_a_one_call_verdict_showed_first(tmp_path: Path) -> None:
    path = write(tmp_path, "shown.csv", "question_id,model_a,model_b,winner,first\n"
                                        "q1,m1,m2,model_a,b\nq2,m1,m2,model_b,model_a\nq3,m1,m2,model_a,\n")
    assert joust(tmp_path, "import", "battles", str(path)) == 0
    store = open_store(tmp_path)
    rows = store.export_judgements()
    # The call's winner is positional: m1 (side a) won while shown second, so the call says B.
    assert [(c["first"], c["winner"]) for r in rows for c in r["calls"]] == [
        (rows[0]["b_id"], "B"), (rows[1]["a_id"], "B"), (None, "A")]
    assert [r["outcome"] for r in rows] == ["A", "B", "A"]
    store.close()
    # Both known positions lost their call; the third is not counted.
    assert health(tmp_path)["import/shown"].first_position_win_rate == 0.0


def test_an_inconsistent_tie_is_a_tie_whose_orders_disagreed(tmp_path: Path) -> None:
    path = write(tmp_path, "gpt4_pair.jsonl", [
        {"question_id": 81, "model_a": "m1", "model_b": "m2", "winner": "tie (inconsistent)"},
        {"question_id": 82, "model_a": "m1", "model_b": "m2", "winner": "tie"},
        {"question_id": 83, "model_a": "m1", "model_b": "m2", "winner": "tie", "consistent": False},
    ])
    assert joust(tmp_path, "import", "battles", str(path)) == 0
    store = open_store(tmp_path)
    rows = store.export_judgements()
    assert [(r["outcome"], r["consistent"], len(r["calls"])) for r in rows] == [
        ("TIE", False, 0), ("TIE", True, 1), ("TIE", False, 0)]
    assert [r.winner for r in store.side_rows()] == [Winner.TIE] * 3
    store.close()
    judge = health(tmp_path)["import/gpt4_pair"]
    # Counted as stored (issue 24): each verdict without calls is one call, its tie; the judge of
    # an inconsistent tie judged both orders, so the consistent tie counts for consistency too.
    assert (judge.judgements, judge.calls, judge.tie_rate, judge.consistency) == (3, 3, 1.0, 1 / 3)


VOTES = "question_id,model_a,model_b,winner,turn\n81,m1,m2,model_a,1\n"
VERDICTS = "question_id,model_a,model_b,winner,turn\n81,m1,m2,model_a,2\n"


@pytest.mark.parametrize("turns", [True, False])
def test_a_later_turn_is_another_question(tmp_path: Path, turns: bool) -> None:
    """A turn-1 vote and a turn-2 verdict on the same models never count as the same pair; the
    same files without the turn column do (the control that shows the test can fail)."""
    strip = (lambda text: text) if turns else (lambda text: "\n".join(l.rsplit(",", 1)[0] for l in text.splitlines()))
    votes, verdicts = write(tmp_path, "votes.csv", strip(VOTES)), write(tmp_path, "judge.csv", strip(VERDICTS))
    assert joust(tmp_path, "import", "battles", str(votes), "--human") == 0
    assert joust(tmp_path, "import", "battles", str(verdicts)) == 0
    store = open_store(tmp_path)
    assert [r.question_id for r in store.side_rows()] == (["81", "81#turn2"] if turns else ["81", "81"])
    store.close()
    assert health(tmp_path)["import/judge"].human_pairs == (0 if turns else 1)


JUDGES = ("question_id,model_a,model_b,winner,judge,template_version\n"
          "q,m1,m2,model_a,gpt-4,\nq,m1,m2,model_b,anthropic/claude-x,\nq,m1,m2,tie,anthropic/claude-x,v3\n"
          "q,m1,m2,tie,human/crowd,\nq,m2,m1,tie,,\nq,m1,m3,tie,rubric/gpt-4-fewshot,import\n")


def test_a_judge_column_files_each_row_under_its_judge(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A bare name is an import; a row with a prompt version (an export's) keeps its judge as
    written, a live judge's or an import's; so does a human's; a row without one is the file's."""
    path = write(tmp_path, "panel.csv", JUDGES)
    assert joust(tmp_path, "import", "battles", str(path)) == 0
    assert "ignored columns" not in capsys.readouterr().out
    store = open_store(tmp_path)
    assert [(r["judge"], r["template_version"]) for r in store.export_judgements()] == [
        ("import/gpt-4", "import"), ("import/anthropic/claude-x", "import"), ("anthropic/claude-x", "v3"),
        ("human/crowd", "import"), ("import/panel", "import"), ("rubric/gpt-4-fewshot", "import")]
    store.close()


def test_voters_are_human_judges_unless_judge_names_one(tmp_path: Path) -> None:
    path = write(tmp_path, "votes.jsonl", [{"question_id": "q", "model_a": "m1", "model_b": "m2", "winner": w,
                                            "voter": v} for w, v in (("model_a", "ann"), ("tie", "bo"))])
    assert joust(tmp_path, "import", "battles", str(path), "--human") == 0
    assert joust(tmp_path, "import", "battles", str(path), "--human", "--judge", "panel") == 0
    store = open_store(tmp_path)
    assert [r["judge"] for r in store.export_judgements()] == ["human/ann", "human/bo", "human/panel", "human/panel"]
    store.close()


@pytest.mark.parametrize("name, text", [
    ("extra.csv", "model_a,model_b,winner,foo,tstamp\nm1,m2,tie,1,2\n"),
    ("extra.jsonl", [{"model_a": "m1", "model_b": "m2", "winner": "tie"},
                     {"model_a": "m1", "model_b": "m2", "winner": "tie", "tstamp": 2, "foo": [1]}]),
])
def test_columns_the_importer_does_not_understand_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture, name: str, text: str | list[dict]
) -> None:
    assert joust(tmp_path, "import", "battles", str(write(tmp_path, name, text))) == 0
    assert capsys.readouterr().out.split("; ")[-1].startswith("ignored columns: foo, tstamp (")


def test_csv_calls_spelled_out_stand_for_the_calls_column(tmp_path: Path) -> None:
    """An export written before `calls` was a column: call<i>_* with the export's ids."""
    path = write(tmp_path, "old.csv", "question_id,a_id,model_a,b_id,model_b,winner,consistent,call1_first,"
                                      "call1_winner,call1_reason,call2_first,call2_winner,call2_reason\n"
                                      "q,7,m1,9,m2,model_a,true,9,B,m1 is better,7,A,m1 again\n")
    assert joust(tmp_path, "import", "battles", str(path)) == 0
    store = open_store(tmp_path)
    (row,) = store.export_judgements()
    assert row["calls"] == [{"first": row["b_id"], "winner": "B", "reason": "m1 is better"},
                            {"first": row["a_id"], "winner": "A", "reason": "m1 again"}]
    store.close()
    assert health(tmp_path)["import/old"].consistency == 1.0


def stored_field(data_dir: Path) -> dict[tuple[str, str], int]:
    """Real outputs of m1 and m2 to q1, of m1 to q2, judged by a live judge on q1; their ids."""
    store = open_store(data_dir)
    ids = [i for i, _ in store.add_submissions([NewSubmission("q1", "Q1?", "m1", "default", "short"),
                                                NewSubmission("q1", "Q1?", "m2", "default", "a longer one"),
                                                NewSubmission("q2", "Q2?", "m1", "default", "other")])]
    tid = store.create_tournament("live", RunSpec(judge="anthropic/x"), [Pair(ids[0], ids[1])])
    jid, _ = store.save_judgement(NewJudgement("k" * 64, "anthropic/x", "overall", "v1", ids[0], ids[1],
                                               content_hash("short"), Winner.A, True,
                                               [{"first": ids[0], "winner": "A"}, {"first": ids[1], "winner": "B"}]))
    assert store.resolve_match(store.pending_matches(tid)[0], jid, Winner.A, True)
    store.close()
    return {("q1", "m1"): ids[0], ("q1", "m2"): ids[1], ("q2", "m1"): ids[2]}


HUMAN = "question_id,model_a,model_b,winner\nq1,m1,m2,model_a\nq2,m1,m3,tie\nq3,m1,m2,model_b\n"


def test_human_votes_are_filed_on_the_stored_submissions(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ids = stored_field(tmp_path)
    path = write(tmp_path, "crowd.csv", HUMAN)
    assert joust(tmp_path, "import", "battles", str(path), "--human") == 0
    assert "1 of 3 votes on stored submissions with outputs" in capsys.readouterr().out
    store = open_store(tmp_path)
    votes = store.export_judgements(judge="human/crowd")
    assert [(v["a_id"], v["b_id"]) for v in votes[:2]] == [(ids["q1", "m1"], ids["q1", "m2"]),
                                                           (ids["q2", "m1"], votes[1]["b_id"])]
    placeholders = {(s.question_id, s.model) for s in store.list_submissions(limit=100)
                    if s.output == PLACEHOLDER_OUTPUT}
    assert placeholders == {("q2", "m3"), ("q3", "m1"), ("q3", "m2")}
    store.close()
    live = health(tmp_path)["anthropic/x"]
    assert (live.human_agreement, live.human_pairs, live.longer_wins_rate) == (1.0, 1, 0.0)
    assert joust(tmp_path, "import", "battles", str(path), "--human") == 0  # again: nothing new
    assert "judgements 0 new, 3 existing" in capsys.readouterr().out


def test_without_human_a_stored_output_is_a_clash_that_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    stored_field(tmp_path)
    path = write(tmp_path, "crowd.csv", HUMAN)
    assert joust(tmp_path, "import", "battles", str(path)) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: " in err and "already holds a different" in err and "--human" in err, err
    changed = write(tmp_path, "changed.csv", "question_id,model_a,model_b,winner,output_a\nq1,m1,m2,tie,not short\n")
    assert joust(tmp_path, "import", "battles", str(changed), "--human") == 2  # voted on another text
    assert "already holds a different output: the vote was cast on another text" in capsys.readouterr().err
    store = open_store(tmp_path)
    assert (store.revision(), len(store.list_submissions())) == (1, 3)
    store.close()


def test_a_long_output_travels_in_csv(tmp_path: Path) -> None:
    """Python's csv reader refuses fields over 128 KiB unless told otherwise; outputs can be longer."""
    long = "word " * 60_000
    path = write(tmp_path, "long.csv", f"question_id,model_a,model_b,winner,output_a,output_b\nq,m1,m2,tie,{long},b\n")
    assert joust(tmp_path, "import", "battles", str(path)) == 0
    store = open_store(tmp_path)
    assert {s.output for s in store.list_submissions()} == {long, "b"}
    store.close()
