"""The judges page's health tables and the board page's rubric scores, over a real app and real
store data: verdicts imported with the positions they were shown in, verdicts stored and resolved
the way a worker stores them (jobs taken from the real Redis queue), and rubric scores added to
the store. The board itself: tests/test_page_board.py."""
from __future__ import annotations

import statistics

import pytest
from fastapi.testclient import TestClient
from rq import Queue

from leaderboard.keys import content_hash
from leaderboard.types import Winner
from service.config import DEFAULT_JUDGE, Settings
from service.store import NewJudgement, Store
from service.store.imports import ImportedJudgement, NewScore
from tests.api_fixtures import app_state_of, store_of
from tests.page_text import heads, rows_of, tables, visible

KEY = "page-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
QUEUE = "joust-page-test"
JUDGE, PANEL = "import/gpt4", "human/panel"
EVIL = "<script>alert('judge')</script>"


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(api_key=KEY, queue_name=QUEUE)


def submit(client: TestClient, outputs: dict[str, str], question: str = "q1", scenario: str = "default") -> dict[str, int]:
    """One submission per model for `question`; their ids by model."""
    batch = [{"question": f"text of {question}", "question_id": question, "model": model, "scenario": scenario,
              "output": output} for model, output in outputs.items()]
    response = client.post("/api/submissions", json=batch, headers=AUTH)
    assert response.status_code == 201, response.text
    return {model: s["id"] for model, s in zip(outputs, response.json()["submissions"])}


def page(client: TestClient, path: str = "/") -> str:
    response = client.get(path)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def health_rows(text: str) -> dict[str, list[str]]:
    """The judges page's rows by judge: LLM and imported judges, then human voters."""
    found = tables(text)
    rows = found["LLM and imported judges"] + found.get("Human voters", [])
    return {row[0]: row[1:] for row in rows if len(row) > 1}


def call(first: int | None, winner: str, **extra: object) -> dict:
    return {"first": first, "winner": winner, **extra}


def import_battles(client: TestClient) -> dict[str, int]:
    """Four answers of one question (lengths d 40 > c 35 > a 30 > b 20), a judge's verdicts
    with the positions shown, and three human votes on two of its pairs."""
    ids = submit(client, {"a": "a" * 30, "b": "b" * 20, "c": "c" * 35, "d": "d" * 40})
    a, b, c, d = (ids[m] for m in "abcd")
    store = store_of(client)
    store.import_judgements(name="battles", source="test", judge=JUDGE, criteria="overall", rows=[
        # both orders, each won by the answer shown first: inconsistent, counted as a tie
        ImportedJudgement("j1", a, b, Winner.TIE, [call(a, "A"), call(b, "A")], consistent=False),
        # both orders agree on a; the second call is won by the answer shown second
        ImportedJudgement("j2", a, c, Winner.A, [call(a, "A"), call(c, "B")]),
        # one order, a tie
        ImportedJudgement("j3", b, d, Winner.TIE, [call(d, "TIE")]),
    ])
    store.import_judgements(name="votes", source="test", judge=PANEL, criteria="overall", rows=[
        ImportedJudgement("v1", a, c, Winner.A, [call(None, "A")]),  # agrees with j2
        ImportedJudgement("v2", c, a, Winner.B, [call(None, "B")]),  # a again, the other way round: agrees
        ImportedJudgement("v3", a, b, Winner.B, [call(None, "B")]),  # b; the judge said tie: disagrees
    ])
    return ids


def test_judge_health_shows_each_judges_figures(client: TestClient) -> None:
    import_battles(client)
    text = page(client, "/judges")
    rows = health_rows(text)
    assert list(rows) == [JUDGE, PANEL]  # one row per judge: LLM judges, then people
    # calls, consistency, first position, ties, parse failures, longer wins, human agreement (with
    # ties, without)
    assert rows[JUDGE] == [
        "5",
        "50.0%",  # j1's orders disagree, j2's agree
        "75.0%",  # 4 calls name a winner; the first-shown answer won 3
        "20.0%",  # 1 tie in 5 calls
        "—",  # imported: never parsed by joust
        "25.0%",  # j1: a (longer) once, b once; j2: a beat the longer c twice
        "66.7% (2 pairs)",  # 3 votes on 2 pairs, 2 agree
        "100.0% (1 pair)",  # without ties: the judge's tie on (a, b) goes; a over c twice, as voted
        # Krippendorff's alpha over (a, c): judge A, votes A, A and (a, b): judge tie, vote B, each
        # pair also seen from its other side: 1 - (10 - 1) * 4 / (100 - 36) = 7/16; resampled, the
        # 2 pairs give -0.4 (both (a, b)) to 1 (both (a, c))
        "0.44 [-0.40, 1.00]",
    ]
    assert rows[PANEL] == ["3", "—", "—", "0.0%", "—", "0.0%", "—", "—", "—"]  # the longer answer never won a vote
    # the same judges as the API serves, with the same figures
    api = {h["judge"]: h for h in client.get("/api/judges").json()["judges"]}
    assert sorted(api) == sorted(rows)
    assert api[JUDGE]["first_position_win_rate"] == 0.75 and api[JUDGE]["human_pairs"] == 2
    assert (api[JUDGE]["human_alpha"], api[JUDGE]["human_alpha_pairs"]) == (pytest.approx(7 / 16), 2)
    assert "First position of the calls naming a winner, the share won by the answer shown first; 50% means no " \
           "position bias." in visible(text)  # each figure explained in one line


def test_user_text_in_the_new_tables_is_escaped(client: TestClient) -> None:
    ids = submit(client, {"<img src=x onerror=alert(1)>": "one answer", "plain": "another answer, longer"},
                 scenario="<i>terse</i>")
    shown, other = ids.values()
    store = store_of(client)
    store.import_judgements(name="evil", source="test", judge=EVIL, criteria="overall", rows=[
        ImportedJudgement("e1", shown, other, Winner.B, [call(shown, "B")]),
    ])
    store.add_scores([NewScore(shown, "rubric/<b>bold</b>", "compqa", 11.0)])
    for path in ("/judges", "/", f"/?judge={EVIL}"):
        text = page(client, path)
        assert "<script" not in text.lower().replace('<script src="/static/', "") and "<img" not in text
        assert "<i>" not in text and "<b>" not in text
    judges = page(client, "/judges")
    assert "&lt;script&gt;alert(&#39;judge&#39;)&lt;/script&gt;" in judges
    assert health_rows(judges)[EVIL][:2] == ["1", "—"]
    board = page(client)
    assert heads(board)["Rubric scores"][2] == "rubric/<b>bold</b>"  # shown as text
    assert rows_of(board, "Rubric scores")[0][:2] == ["<img src=x onerror=alert(1)>", "<i>terse</i>"]


def test_rubric_scores_per_system_and_judge(client: TestClient) -> None:
    store = store_of(client)
    first = submit(client, {"a": "answer a1", "b": "answer b1"}, question="q1")
    second = submit(client, {"a": "answer a2"}, question="q2")
    assert "Rubric scores" not in page(client)  # no scores yet: no table

    store.add_scores([
        NewScore(first["a"], "rubric/one", "compqa", 12.0),
        NewScore(second["a"], "rubric/one", "compqa", 14.0),
        NewScore(first["b"], "rubric/one", "compqa", 9.0),
        # repeated human ratings: their mean as the total, each evaluation counted
        NewScore(first["a"], "rubric/two", "compqa", 13.0,
                 {"evaluations": [{"total": 10.0}, {"total": 12.0}, {"total": 17.0}]}),
        NewScore(first["b"], "rubric/other-criteria", "dimensions", 5.0),  # not a compqa score
    ])
    text = page(client)
    assert heads(text)["Rubric scores"] == ["Model", "Scenario", "rubric/one", "rubric/two"]
    spread = statistics.stdev([10.0, 12.0, 17.0])
    assert f"{spread:.1f}" == "3.6"
    assert rows_of(text, "Rubric scores") == [
        ["a", "default", "13.0 ± 1.4 (2)", "13.0 ± 3.6 (3)"],
        ["b", "default", "9.0 ± — (1)", "—"],  # one score has no spread; judge two never scored b
    ]
    # the figures GET /api/scores serves
    api = client.get("/api/scores").json()["rows"]
    assert [(r["judge"], r["model"], r["n"]) for r in api] == [("rubric/one", "a", 2), ("rubric/one", "b", 1),
                                                               ("rubric/two", "a", 3)]


def test_page_without_judgements(client: TestClient) -> None:
    text = page(client)
    assert "Rubric scores" not in text
    assert "No judgements yet at this level." in text
    assert rows_of(page(client, "/judges"), "LLM and imported judges") == [["No judgements yet."]]
    submit(client, {"a": "x", "b": "yy"})  # submissions alone judge nothing
    assert rows_of(page(client, "/judges"), "LLM and imported judges") == [["No judgements yet."]]


def start(client: TestClient, queue: Queue, question: str) -> list[int]:
    """Start a tournament on one question under the default judge; its match ids, taken off the queue."""
    response = client.post("/api/tournaments", json={"questions": [question]}, headers=AUTH)
    assert response.status_code == 202, response.text
    ids = [job.args[0] for job in queue.get_jobs()]
    queue.empty()
    assert ids
    return ids


def judge_both_orders(store: Store, match_id: int, reminded: bool = False) -> None:
    """What a worker stores for one match: two calls, one per order, both for the shorter answer
    (b's output is shorter by construction), the first call reminded when asked."""
    ctx = store.match_context(match_id)
    assert store.start_match(match_id)
    shorter = ctx.a if len(ctx.a.output) < len(ctx.b.output) else ctx.b
    calls = [
        {"first": ctx.a.id, "winner": "A" if shorter is ctx.a else "B", "reminded": reminded},
        {"first": ctx.b.id, "winner": "A" if shorter is ctx.b else "B", "reminded": False},
    ]
    outcome = Winner.A if shorter is ctx.a else Winner.B
    judgement_id, created = store.save_judgement(NewJudgement(
        key=f"key-{match_id}", judge=DEFAULT_JUDGE, criteria="overall", template_version="t1", a_id=ctx.a.id,
        b_id=ctx.b.id, a_hash=content_hash(ctx.a.output), outcome=outcome, consistent=True, calls=calls,
    ))
    assert created
    assert store.resolve_match(match_id, judgement_id, outcome, True)


def test_health_is_recomputed_only_when_judgements_or_parse_failures_change(client: TestClient, queue: Queue) -> None:
    store = store_of(client)
    cache = app_state_of(client).judge_health
    assert cache.computations == 0
    submit(client, {"m1": "1" * 10, "m2": "2" * 20, "m3": "3" * 30})
    first, second, third = start(client, queue, "q1")
    judge_both_orders(store, first, reminded=True)
    judge_both_orders(store, second)

    # calls, consistency, first position, ties, parse failures, longer wins, human agreement (with
    # ties, without, alpha)
    expected = ["4", "100.0%", "50.0%", "0.0%", "25.0%", "0.0%", "—", "—", "—"]
    assert health_rows(page(client, "/judges"))[DEFAULT_JUDGE] == expected
    assert health_rows(page(client, "/judges"))[DEFAULT_JUDGE] == expected
    assert cache.computations == 1  # the second load at the same revision reused the first

    # an unreadable verdict fails its match without resolving anything: still recomputed
    store.fail_match(third, "VerdictParseError: no verdict in the reply", final=True)
    assert health_rows(page(client, "/judges"))[DEFAULT_JUDGE][4] == "40.0%"  # (1 reminded + 1 failed) / (4 + 1)
    assert cache.computations == 2
    page(client)
    assert cache.computations == 2

    submit(client, {"m1": "1" * 10, "m2": "2" * 20}, question="q2")
    (fourth,) = start(client, queue, "q2")
    judge_both_orders(store, fourth)
    assert health_rows(page(client, "/judges"))[DEFAULT_JUDGE][:5] == ["6", "100.0%", "50.0%", "0.0%", "28.6%"]  # (1 + 1) / (6 + 1)
    assert cache.computations == 3


def test_the_reference_humans_are_chosen_on_the_page(client: TestClient) -> None:
    ids = import_battles(client)
    a, c = ids["a"], ids["c"]
    store_of(client).import_judgements(name="bob", source="test", judge="human/bob", criteria="overall", rows=[
        ImportedJudgement("bob1", a, c, Winner.B, [call(None, "B")]),  # c over a: the judge said a
    ])
    every = health_rows(page(client, "/judges"))[JUDGE]
    bob = health_rows(page(client, "/judges?humans=human/bob"))[JUDGE]
    assert every[-3] == "50.0% (2 pairs)" and bob[-3] == "0.0% (1 pair)"  # as GET /api/judges?humans= says
    assert client.get(f"/api/judges?humans=human/bob&judge={JUDGE}").json()["judges"][0]["human_agreement"] == 0.0
    assert 'value="human/bob" checked' in page(client, "/judges?humans=human/bob")
    wrong = client.get("/judges?humans=human/nobody")
    assert wrong.status_code == 422 and "no votes by human/nobody" in wrong.text
