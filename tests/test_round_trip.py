"""Verdicts travel without loss: a store with live-like judgements (two judges, both orders shown
first, an inconsistent pair, a single-order judge, a `dimensions` judgement, a judgement a second
pair reused, human votes filed on the stored outputs, battles with placeholders, an MT-Bench
style file) is exported through the real CLI, imported into an empty database of the same
backend, and every board (per judge, pooled, per dimension, at every level) and every judge
health figure comes back identical; so does a second export. SQLite, then PostgreSQL."""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from leaderboard.board import build_board
from leaderboard.dimensions import DIMENSIONS
from leaderboard.keys import content_hash, judgement_key
from leaderboard.players import battles_at_level
from leaderboard.spec import RunSpec
from leaderboard.types import PLACEHOLDER_OUTPUT, Level, OrderPolicy, Pair, Winner
from service.cli import main
from service.store import NewJudgement, NewSubmission, Store
from service.usecases import exporters
from service.usecases.importers.battles import load_battles
from tests.required import require_module

X, Y = "anthropic/claude-x", "anthropic/claude-y"
A, B, TIE = Winner.A, Winner.B, Winner.TIE
OUTPUTS = {("q1", "m1", "plain"): "tea", ("q1", "m1", "cot"): "tea",  # the same text: one judgement, two pairs
           ("q1", "m2", "plain"): "coffee, then tea", ("q1", "m3", "plain"): "water, always water",
           ("q2", "m1", "plain"): "cats", ("q2", "m2", "plain"): "dogs, clearly dogs",
           ("q2", "m3", "plain"): "neither"}
QUESTIONS = {"q1": "Tea or coffee?", "q2": "Cats or dogs?"}
HUMAN_VOTES = ("question_id,model_a,scenario_a,model_b,scenario_b,winner,first,voter\n"
               "q1,m1,plain,m2,plain,model_a,b,alice\nq1,m1,plain,m2,plain,model_b,a,bob\n"
               "q2,m1,plain,m2,plain,tie,,alice\n")
ARENA = "question_id,model_a,model_b,winner\nq3,m1,m2,model_a\nq3,m2,m3,tie (bothbad)\n"
MT_BENCH = [{"question_id": 9, "model_a": "m1", "model_b": "m2", "winner": "tie (inconsistent)", "judge": "gpt4_pair",
             "turn": 2},
            {"question_id": 9, "model_a": "m1", "model_b": "m3", "winner": "model_a", "judge": "gpt4_pair", "turn": 1}]


@pytest.fixture
def empty_url(store_url: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A second empty database on the backend of `store_url`."""
    if store_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'restored.db'}"
        return
    server = request.getfixturevalue("postgres_server")
    name = server.create_database()
    try:
        yield server.url(name)
    finally:
        server.drop_database(name)


def judge_all(store: Store, judge: str, verdicts: list[tuple], *, criteria: str = "overall",
              order: OrderPolicy = OrderPolicy.BOTH) -> None:
    """A live run of `judge` over the pairs of `verdicts` ((a, b, calls, outcome, consistent), a
    call (first, winner, reminded[, dimensions])), stored as a worker stores them: one keyed
    judgement each (a pair with a judged pair's texts reuses its judgement), then its match."""
    ids = {s.id: s for s in store.list_submissions(limit=1000)}
    tid = store.create_tournament(f"{judge} {criteria}", RunSpec(judge=judge, criteria=criteria, order=order),
                                  [Pair(a, b) for a, b, *_ in verdicts])
    pending = {(ctx.a.id, ctx.b.id): ctx.match_id for ctx in map(store.match_context, store.pending_matches(tid))}
    for a, b, calls, outcome, consistent in verdicts:
        stored = [{"first": first, "winner": winner.value, "reason": f"{judge} saw {first} first", "raw": "{}",
                   "reminded": reminded, **({"dimensions": extra[0]} if extra else {})}
                  for first, winner, reminded, *extra in calls]
        key = judgement_key(judge, "v1", criteria, ids[a].question, ids[a].output, ids[b].output, order)
        jid, _ = store.save_judgement(NewJudgement(key, judge, criteria, "v1", a, b, content_hash(ids[a].output),
                                                   outcome, consistent, stored, input_tokens=100, output_tokens=20,
                                                   cost_usd=None if judge == Y else 0.0012, order=order))
        assert store.resolve_match(pending[a, b], jid, outcome, consistent)


def live_like(store: Store, tmp_path: Path) -> None:
    store.add_submissions([NewSubmission(q, QUESTIONS[q], m, sc, text) for (q, m, sc), text in OUTPUTS.items()])
    s = {(q, m, sc): i.id for i in store.list_submissions(limit=100) for (q, m, sc) in [
        (i.question_id, i.model, i.scenario)]}
    q1 = {m: s["q1", m, "plain"] for m in ("m1", "m2", "m3")}
    q2 = {m: s["q2", m, "plain"] for m in ("m1", "m2", "m3")}
    judge_all(store, X, [
        (q1["m1"], q1["m2"], [(q1["m2"], B, False), (q1["m1"], A, True)], A, True),  # m2 shown first, then m1
        (q1["m2"], q1["m3"], [(q1["m2"], A, False), (q1["m3"], A, False)], TIE, False),  # the first slot won twice
        (q2["m1"], q2["m2"], [(q2["m1"], TIE, False), (q2["m2"], TIE, False)], TIE, True),
        (q2["m3"], q2["m2"], [(q2["m2"], B, False), (q2["m3"], A, False)], A, True),
    ])
    # m1/cot answered q1 as m1/plain did: the run reuses the (m1, m2) judgement for a second pair.
    judge_all(store, X, [(s["q1", "m1", "cot"], q1["m2"], [(q1["m2"], B, False), (q1["m1"], A, True)], A, True)])
    judge_all(store, Y, [(q1["m1"], q1["m3"], [(q1["m3"], B, False)], A, True),
                         (q2["m1"], q2["m3"], [(q2["m1"], A, False)], A, True)], order=OrderPolicy.SINGLE)
    clarity_b = {"accuracy": "A", "completeness": "B", "clarity": "B", "conciseness": "TIE", "overall": "A"}
    judge_all(store, X, [(q2["m1"], q2["m2"], [(q2["m1"], A, False, clarity_b), (q2["m2"], B, False, clarity_b)],
                          A, True)], criteria="dimensions")
    for name, text in (("votes.csv", HUMAN_VOTES), ("arena.csv", ARENA),
                       ("mtbench.jsonl", "".join(json.dumps(r) + "\n" for r in MT_BENCH))):
        (tmp_path / name).write_text(text)
        load_battles(store, tmp_path / name, human=name == "votes.csv")


def boards(store: Store) -> dict:
    """Every board: per judge and pooled at every level (as `joust export board` writes them),
    each dimension's, and the rows they are made of."""
    judges = sorted({h.judge for h in store.judge_health()})
    out: dict = {("rows", j): store.side_rows(judge=j) for j in [None, *judges]}
    for judge in [None, *judges]:
        for level in Level:
            out[judge, level] = exporters.board_rows(store, level, k=32.0, judge=judge)
            for dimension in DIMENSIONS:
                out[judge, level, dimension] = build_board(
                    battles_at_level(store.dimension_side_rows(dimension, judge=judge), level))
    return out


def comparable(rows: list[dict]) -> list[dict]:
    """Export rows without the ids a store assigns, each call's `first` named by side."""
    out = []
    for row in rows:
        sides = {row["a_id"]: "a", row["b_id"]: "b"}
        calls = [{**c, "first": sides.get(c["first"])} for c in row["calls"]]
        out.append({k: v for k, v in row.items() if k not in ("judgement_id", "match_id", "tournament_id", "seq",
                                                               "a_id", "b_id")} | {"calls": calls})
    return out


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_export_then_import_into_an_empty_store_keeps_every_board_and_health_figure(
    store_url: str, empty_url: str, tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    if fmt == "parquet":
        require_module("pyarrow", "pyarrow")
    source = Store(store_url)
    live_like(source, tmp_path)
    health = source.judge_health()
    x = {h.judge: h for h in health}[X]
    # What there is to lose: positions, an inconsistent pair, reminders, lengths, human votes.
    assert (x.consistency, x.parse_failure_rate, x.human_votes) == (4 / 5, 1 / 10, 4)
    assert None not in (x.first_position_win_rate, x.longer_wins_rate, x.human_agreement)
    assert [h.judge for h in health] == [X, Y, "human/alice", "human/bob", "import/arena", "import/gpt4_pair"]
    out = tmp_path / f"export.{fmt}"
    monkeypatch.setenv("DATABASE_URL", store_url)
    assert main(["export", "judgements", "--format", fmt, "-o", str(out)]) == 0
    monkeypatch.setenv("DATABASE_URL", empty_url)
    assert main(["import", "battles", str(out)]) == 0
    line = capsys.readouterr().out
    assert "judgements 15 new, 0 existing" in line and "ignored columns" not in line, line

    restored = Store(empty_url)
    assert restored.judge_health() == health
    assert boards(restored) == boards(source)
    assert comparable(exporters.judgement_rows(restored)) == comparable(exporters.judgement_rows(source))
    texts = {(s.question_id, s.model, s.scenario): s.output for s in restored.list_submissions(limit=100)}
    assert {k: v for k, v in texts.items() if v != PLACEHOLDER_OUTPUT} == OUTPUTS
    assert {k for k, v in texts.items() if v == PLACEHOLDER_OUTPUT} == {
        ("q3", "m1", "default"), ("q3", "m2", "default"), ("q3", "m3", "default"), ("9#turn2", "m1", "default"),
        ("9#turn2", "m2", "default"), ("9", "m1", "default"), ("9", "m3", "default")}

    # The keys travel: importing again, or into the store the export came from, adds nothing.
    for url in (empty_url, store_url):
        monkeypatch.setenv("DATABASE_URL", url)
        assert main(["import", "battles", str(out)]) == 0
        assert "judgements 0 new, 15 existing" in capsys.readouterr().out
    assert (restored.revision(), source.revision()) == (15, 15)
    restored.close()
    source.close()


def test_a_csv_export_carries_the_calls_as_json_and_spelled_out(store: Store, tmp_path: Path) -> None:
    """The CSV keeps each call whole in `calls` and spells out first/winner/reason per call, long
    texts last; a placeholder's output is empty."""
    live_like(store, tmp_path)
    buffer = io.StringIO()
    exporters.write_judgements(exporters.judgement_rows(store, judge=X), "csv", buffer)
    rows = list(csv.DictReader(io.StringIO(buffer.getvalue())))
    header = buffer.getvalue().splitlines()[0].split(",")
    assert header[-5:] == ["question", "question_b", "output_a", "output_b", "calls"]
    first = rows[0]
    calls = json.loads(first["calls"])
    assert [c["reminded"] for c in calls] == [False, True]
    assert (first["call1_first"], first["call2_first"]) == (first["b_id"], first["a_id"])
    assert (first["output_a"], first["output_b"], first["order_policy"], first["template_version"]) == (
        "tea", "coffee, then tea", "both", "v1")
    buffer = io.StringIO()
    exporters.write_judgements(exporters.judgement_rows(store, judge="import/arena"), "csv", buffer)
    assert {r["output_a"] for r in csv.DictReader(io.StringIO(buffer.getvalue()))} == {""}


PLACEHOLDERS = "question_id,model_a,model_b,winner\nq1,m1,m2,model_a\nq1,m2,m3,tie\n"
# Votes carrying the question's text, on the placeholders (matched with --human) and on a new side.
TEXTED_VOTES = ("question_id,question,model_a,model_b,winner,voter\n"
                "q1,Tea or coffee?,m1,m2,model_b,alice\nq1,Tea or coffee?,m3,m4,model_a,bob\n"
                "q1,Tea or coffee?,m4,m1,tie,carol\n")


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_export_of_placeholders_and_texted_human_votes_reimports(
    store_url: str, empty_url: str, tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    """Placeholders hold the question id as their text until the votes, which carry the
    question's text, fill it in (a side the votes added holds it too): an empty store takes the
    export (issue 24) and gives back every board, every judge-health figure and every text."""
    source = Store(store_url)
    for name, text, human in (("arena.csv", PLACEHOLDERS, False), ("votes.csv", TEXTED_VOTES, True)):
        (tmp_path / name).write_text(text)
        load_battles(source, tmp_path / name, human=human)
    texts = {(s.question_id, s.model, s.scenario): s.question for s in source.list_submissions()}
    assert set(texts.values()) == {"Tea or coffee?"}
    out = tmp_path / f"export.{fmt}"
    monkeypatch.setenv("DATABASE_URL", store_url)
    assert main(["export", "judgements", "--format", fmt, "-o", str(out)]) == 0
    monkeypatch.setenv("DATABASE_URL", empty_url)
    assert main(["import", "battles", str(out)]) == 0, capsys.readouterr().err
    assert "judgements 5 new, 0 existing" in capsys.readouterr().out

    restored = Store(empty_url)
    assert restored.judge_health() == source.judge_health()
    assert boards(restored) == boards(source)
    assert comparable(exporters.judgement_rows(restored)) == comparable(exporters.judgement_rows(source))
    assert {(s.question_id, s.model, s.scenario): s.question
            for s in restored.list_submissions()} == texts
    restored.close()
    source.close()


# One question, two texts (its submissions may hold their own): a row whose sides hold different
# ones says side b's in `question_b`.
TWO_TEXTS = [{"question_id": "q1", "question": "Tea or coffee?", "model_a": "m1", "model_b": "m2", "winner": "model_a"},
             {"question_id": "q1", "question": "Coffee or tea?", "model_a": "m3", "model_b": "m4", "winner": "tie"},
             {"question_id": "q1", "question": "Tea or coffee?", "question_b": "Coffee or tea?", "model_a": "m1",
              "model_b": "m3", "winner": "model_b"}]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_question_with_two_texts_travels_side_by_side(
    store_url: str, empty_url: str, tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    """A file may give one question two texts on different submissions: no row without a text
    meets them, so none is chosen, and each side keeps its own; the export names side b's where
    a row's two differ (`question_b`), and an empty store takes every text back."""
    source = Store(store_url)
    (tmp_path / "two.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TWO_TEXTS))
    load_battles(source, tmp_path / "two.jsonl")
    texts = {(s.question_id, s.model, s.scenario): s.question for s in source.list_submissions()}
    assert set(texts.values()) == {"Tea or coffee?", "Coffee or tea?"}
    out = tmp_path / f"export.{fmt}"
    monkeypatch.setenv("DATABASE_URL", store_url)
    assert main(["export", "judgements", "--format", fmt, "-o", str(out)]) == 0
    assert [r["question_b"] for r in exporters.judgement_rows(source)] == [None, None, "Coffee or tea?"]
    monkeypatch.setenv("DATABASE_URL", empty_url)
    assert main(["import", "battles", str(out)]) == 0, capsys.readouterr().err
    restored = Store(empty_url)
    assert comparable(exporters.judgement_rows(restored)) == comparable(exporters.judgement_rows(source))
    assert {(s.question_id, s.model, s.scenario): s.question
            for s in restored.list_submissions()} == texts
    restored.close()
    source.close()


def test_a_panel_verdict_a_member_was_inconsistent_on_reimports(
    store_url: str, empty_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
) -> None:
    """A panel's majority names a winner while one member's two orders disagreed: stored with a
    winner and `consistent` false (as workers.panel stores it), its export re-imports as it was."""
    source = Store(store_url)
    source.add_submissions([NewSubmission("q1", QUESTIONS["q1"], m, "plain", OUTPUTS["q1", m, "plain"])
                            for m in ("m1", "m2")])
    a, b = (s.id for s in source.list_submissions(limit=10))
    tid = source.create_tournament("panel", RunSpec(judge="panel/trio"), [Pair(a, b)])
    calls = [{"first": None, "winner": "A", "reason": "majority of x: A, y: A, z: TIE", "members": []}]
    jid, _ = source.save_judgement(NewJudgement("f" * 64, "panel/trio", "overall", "panel-v1", a, b,
                                                content_hash(OUTPUTS["q1", "m1", "plain"]), A, False, calls))
    assert source.resolve_match(source.pending_matches(tid)[0], jid, A, False)
    out = tmp_path / "export.jsonl"
    monkeypatch.setenv("DATABASE_URL", store_url)
    assert main(["export", "judgements", "--format", "jsonl", "-o", str(out)]) == 0
    monkeypatch.setenv("DATABASE_URL", empty_url)
    assert main(["import", "battles", str(out)]) == 0, capsys.readouterr().err
    restored = Store(empty_url)
    assert restored.judge_health() == source.judge_health()
    assert boards(restored) == boards(source)
    assert comparable(exporters.judgement_rows(restored)) == comparable(exporters.judgement_rows(source))
    restored.close()
    source.close()
