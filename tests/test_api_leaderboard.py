"""GET /api/leaderboard and the page, over judgements stored the way a worker stores them
(through the real store, jobs taken from the real Redis queue), with planted preferences."""
from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rq import Queue

from leaderboard.keys import content_hash, judgement_key, orient
from leaderboard.players import player_of
from leaderboard.types import Level, Submission, Winner
from service.config import DEFAULT_JUDGE, Settings
from service.store import NewJudgement, Store
from service.web.routes.leaderboard import board_at, compute_board
from tests.api_fixtures import app_state_of
from tests.page_text import rows_of, visible
from tests.test_boards import counted_seqs

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
QUEUE = "joust-test"
Prefer = Callable[[Submission, Submission], Winner]


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(queue_name=QUEUE)


def submit(client: TestClient, questions: list[str], systems: list[tuple[str, str]]) -> None:
    batch = [
        {"question": f"text of {q}", "question_id": q, "model": m, "scenario": s, "output": f"{m}/{s} answers {q}"}
        for q in questions
        for m, s in systems
    ]
    assert client.post("/api/submissions", json=batch, headers=AUTH).status_code == 201


def start(client: TestClient, **body: object) -> int:
    response = client.post("/api/tournaments", json=body, headers=AUTH)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def work(client: TestClient, queue: Queue, prefer: Prefer, consistent: bool = True) -> int:
    """Do what a worker does for every job on the queue: reuse a judgement stored under the
    pair's key, or judge with `prefer` and store it. Returns how many judgements were new."""
    store: Store = app_state_of(client).store
    new = 0
    for job in queue.get_jobs():
        ctx = store.match_context(job.args[0])
        key = judgement_key(ctx.spec.judge, "t1", ctx.spec.criteria, ctx.a.question, ctx.a.output, ctx.b.output)
        cached = store.find_judgement(key)
        if cached is not None:
            winner = orient(Winner(cached.outcome), cached.a_hash, ctx.a.output)
            assert store.resolve_match(ctx.match_id, cached.id, winner, cached.consistent)
            continue
        assert store.start_match(ctx.match_id)
        winner = prefer(ctx.a, ctx.b)
        judgement_id, created = store.save_judgement(
            NewJudgement(
                key=key, judge=ctx.spec.judge, criteria="overall", template_version="t1", a_id=ctx.a.id,
                b_id=ctx.b.id, a_hash=content_hash(ctx.a.output), outcome=winner, consistent=consistent,
                calls=[{"first": ctx.a.id, "winner": winner.value, "reason": "planted"}],
            )
        )
        new += created
        assert store.resolve_match(ctx.match_id, judgement_id, winner, consistent)
    queue.empty()
    return new


def by_strength(*order: str, scenarios: tuple[str, ...] = ()) -> Prefer:
    """The model earlier in `order` wins; between two scenarios of one model, the earlier scenario."""

    def rank(s: Submission) -> tuple[int, int]:
        return order.index(s.model), scenarios.index(s.scenario) if scenarios else 0

    def prefer(a: Submission, b: Submission) -> Winner:
        if rank(a) == rank(b):
            return Winner.TIE
        return Winner.A if rank(a) < rank(b) else Winner.B

    return prefer


def board(client: TestClient, url: str = "/api/leaderboard", **params: Any) -> dict:
    response = client.get(url, params=params or None)  # an empty dict would drop url's own query
    assert response.status_code == 200, response.text
    return response.json()


def test_ranks_models_by_the_planted_preference(client: TestClient, queue: Queue) -> None:
    submit(client, ["q1", "q2", "q3", "q4"], [("low", "default"), ("mid", "default"), ("best", "default")])
    start(client)
    assert work(client, queue, by_strength("best", "mid", "low")) == 12
    body = board(client)
    assert (body["by"], body["tournament"], body["judge"], body["judgements"]) == ("model", None, DEFAULT_JUDGE, 12)
    assert (body["judge_chosen_by"], body["other_judges"], body["components"]) == ("latest tournament", [], 1)
    rows = body["rows"]
    assert [r["player"] for r in rows] == ["best", "mid", "low"]
    assert [(r["wins"], r["losses"], r["ties"], r["matches"]) for r in rows] == [(8, 0, 0, 8), (4, 4, 0, 8), (0, 8, 0, 8)]
    assert rows[0]["rating"] > rows[1]["rating"] > rows[2]["rating"]
    assert rows[0]["elo"] > rows[1]["elo"] > rows[2]["elo"]
    # best won every game and low lost every one: the verdicts order the three but bound no
    # rating (the ridge alone would set the gaps): no interval, ranks from who beat whom
    assert [(r["bounded"], r["ci_low"], r["ci_high"]) for r in rows] == [(False, None, None)] * 3
    assert [(r["rank"], r["rank_low"], r["rank_high"]) for r in rows] == [(1, 1, 1), (2, 2, 2), (3, 3, 3)]
    assert body["revision"] == 12


def test_inconsistent_verdicts_count_as_ties(client: TestClient, queue: Queue) -> None:
    submit(client, ["q1"], [("a", "default"), ("b", "default")])
    start(client)
    work(client, queue, lambda a, b: Winner.TIE, consistent=False)
    rows = board(client)["rows"]
    assert [(r["wins"], r["losses"], r["ties"]) for r in rows] == [(0, 0, 1), (0, 0, 1)]
    assert rows[0]["rating"] == pytest.approx(rows[1]["rating"])


def test_each_level_counts_only_sides_that_differ_there(client: TestClient, queue: Queue) -> None:
    systems = [("B", "s1"), ("B", "s2"), ("A", "s1"), ("A", "s2")]
    submit(client, ["q1", "q2", "q3"], systems)
    start(client)
    assert work(client, queue, by_strength("A", "B", scenarios=("s2", "s1"))) == 18  # 6 pairs x 3 questions

    models = board(client, by="model")
    assert models["judgements"] == 12  # A-vs-A and B-vs-B pairs say nothing about models
    assert [(r["player"], r["wins"], r["matches"]) for r in models["rows"]] == [("A", 12, 12), ("B", 0, 12)]

    scenarios = board(client, by="scenario")
    assert (scenarios["by"], scenarios["judgements"]) == ("scenario", 12)
    assert [(r["player"], r["wins"], r["losses"]) for r in scenarios["rows"]] == [("s2", 9, 3), ("s1", 3, 9)]

    systems_board = board(client, by="model+scenario")
    assert (systems_board["by"], systems_board["judgements"]) == ("model+scenario", 18)
    expected = [player_of(m, s, "model+scenario") for m, s in [("A", "s2"), ("A", "s1"), ("B", "s2"), ("B", "s1")]]
    assert [r["player"] for r in systems_board["rows"]] == expected
    assert [r["wins"] for r in systems_board["rows"]] == [9, 6, 3, 0]
    # "+" in a raw query string decodes to a space; "system" is an alias.
    assert board(client, "/api/leaderboard?by=model+scenario")["rows"] == systems_board["rows"]
    assert board(client, by="system")["by"] == "model+scenario"


def test_a_judgement_counts_once_across_tournaments(client: TestClient, queue: Queue) -> None:
    submit(client, ["q1", "q2"], [("a", "default"), ("b", "default"), ("c", "default")])
    first = start(client)
    assert work(client, queue, by_strength("a", "b", "c")) == 6
    second = start(client)
    assert work(client, queue, by_strength("c", "b", "a")) == 0  # every pair already judged
    assert client.get(f"/api/tournaments/{second}").json()["matches_done"] == 6
    for params in ({}, {"tournament": first}, {"tournament": second}):
        body = board(client, "/api/leaderboard", **params)
        assert body["judgements"] == 6, params
        assert [(r["player"], r["wins"]) for r in body["rows"]] == [("a", 4), ("b", 2), ("c", 0)]


def test_tournament_filter(client: TestClient, queue: Queue) -> None:
    submit(client, ["q1", "q2"], [("a", "default"), ("b", "default"), ("c", "default")])
    first = start(client, models=["a", "b"])
    second = start(client, models=["b", "c"])
    work(client, queue, by_strength("a", "b", "c"))
    only_first = board(client, tournament=first)
    assert (only_first["tournament"], only_first["judgements"]) == (first, 2)
    assert [r["player"] for r in only_first["rows"]] == ["a", "b"]
    assert [r["player"] for r in board(client, tournament=second)["rows"]] == ["b", "c"]
    assert board(client)["judgements"] == 4

    missing = client.get("/api/leaderboard", params={"tournament": 999})
    assert missing.status_code == 404 and "999" in missing.json()["error"]
    malformed = client.get("/api/leaderboard", params={"tournament": "abc"})
    assert malformed.status_code == 422
    assert malformed.json()["error"].startswith("query parameter tournament: ")


def test_judge_filter(client: TestClient, queue: Queue) -> None:
    submit(client, ["q1", "q2"], [("a", "default"), ("b", "default")])
    start(client, judge="anthropic/likes-a")
    work(client, queue, by_strength("a", "b"))
    start(client, judge="anthropic/likes-b")
    assert work(client, queue, by_strength("b", "a")) == 2  # another judge: judged again
    likes_a = board(client, judge="anthropic/likes-a")
    assert [r["player"] for r in likes_a["rows"]] == ["a", "b"]
    assert (likes_a["judge_chosen_by"], likes_a["judgements"]) == ("named", 2)
    likes_b = board(client, judge="anthropic/likes-b")
    assert (likes_b["judge"], likes_b["judgements"]) == ("anthropic/likes-b", 2)
    assert [r["player"] for r in likes_b["rows"]] == ["b", "a"]
    missing = client.get("/api/leaderboard", params={"judge": "openai/nobody"})
    assert missing.status_code == 404
    assert missing.json() == {
        "error": "no verdicts from judge 'openai/nobody' here; judges with verdicts: anthropic/likes-a, "
                 "anthropic/likes-b",
        "judges": ["anthropic/likes-a", "anthropic/likes-b"],
    }


def test_unknown_level_is_refused(client: TestClient) -> None:
    response = client.get("/api/leaderboard", params={"by": "judge"})
    assert response.status_code == 422
    assert response.json()["error"] == (
        "query parameter by: \"judge\" is not one of 'model', 'scenario', 'model+scenario', 'system' or 'model scenario'")


def test_page_shows_the_tables_and_escapes_user_text(client: TestClient, queue: Queue) -> None:
    evil = "<script>alert(1)</script>"
    submit(client, ["q1"], [(evil, "default"), ("good", "<i>terse</i>")])
    start(client, name='<b onmouseover="x">night</b>')
    work(client, queue, by_strength("good", evil))

    for path in ("/", "/?by=scenario", "/?by=system", "/tournaments", "/judgements", "/judges"):
        response = client.get(path)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        page = response.text
        assert "http-equiv" not in page  # nothing reloads the whole page: live.js updates its parts
        assert "<script" not in page.lower().replace('<script src="/static/', "")
        assert "<i>" not in page and "<b " not in page
    board_page = client.get("/").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in board_page
    players = [row[1].removesuffix(" few") for row in rows_of(board_page, "Models board") if len(row) > 2]
    assert players == ["good", "<script>alert(1)</script>"]
    assert rows_of(board_page, "Scenarios")[0][0] == "<i>terse</i>"  # the effects, shown as text
    listed = client.get("/tournaments").text
    assert '<b onmouseover="x">night</b>' in visible(listed)  # shown as text


def test_empty_board(client: TestClient) -> None:
    nobody = {"judge": None, "judge_chosen_by": "no verdicts", "other_judges": []}
    assert board(client) == {
        "by": "model", "tournament": None, **nobody, "rows": [], "judgements": 0, "revision": 0,
        "dimension": None, "components": 0, "intervals": "closed", "bootstrap_rounds": None, "bootstrap_seed": None,
        "control": "none", "control_note": None, "coefficients": None,
        "ties": "half", "ties_note": None, "tie_parameter": None, "tie_parameters": None, "flags_current": True,
        "turn": None, "votes": "each",
    }
    assert board(client, intervals="bootstrap")["rows"] == []
    assert board(client, "/api/leaderboard/effects") == {
        "tournament": None, **nobody, "components": 0, "groups": [], "models": [], "scenarios": [], "battles": 0,
        "revision": 0, "turn": None, "votes": "each",
    }
    assert board(client, "/api/leaderboard/matrix") == {
        "by": "model", "tournament": None, **nobody, "players": [], "components": [], "win_rate": [], "battles": [],
        "judgements": 0, "revision": 0, "turn": None, "votes": "each",
    }
    assert client.get("/api/leaderboard", params={"judge": DEFAULT_JUDGE}).status_code == 404
    assert "No judgements yet" in client.get("/").text
    assert "No tournaments yet" in client.get("/tournaments").text


def test_the_board_follows_new_judgements_at_once(client: TestClient, queue: Queue) -> None:
    """Each request after a resolve includes it, through the cache, and equals a rebuild."""
    store: Store = app_state_of(client).store
    models = [("a", "s1"), ("b", "s1"), ("c", "s2")]
    submit(client, ["q1"], models)
    start(client)
    work(client, queue, by_strength("a", "b", "c"))
    seen = {by: board(client, by=by) for by in ("model", "scenario", "model+scenario")}
    for n in range(2, 5):  # a new question per round: new judgements, never a cache hit
        submit(client, [f"q{n}"], models)
        start(client)
        assert work(client, queue, by_strength("c", "b", "a")) == 3
        for by, level in (("model", Level.MODEL), ("scenario", Level.SCENARIO), ("model+scenario", Level.SYSTEM)):
            body = board(client, by=by)
            rebuilt = compute_board(store, level, k=32.0)
            assert body["revision"] == store.revision() > seen[by]["revision"]
            assert body["judgements"] == rebuilt.judgements > seen[by]["judgements"]
            assert [(r["player"], r["wins"], r["losses"]) for r in body["rows"]] == [
                (r.player, r.wins, r.losses) for r in rebuilt.rows
            ]
            assert [r["rating"] for r in body["rows"]] == pytest.approx([r.rating for r in rebuilt.rows], abs=1e-6)
            assert [r["elo"] for r in body["rows"]] == pytest.approx([r.elo for r in rebuilt.rows], abs=1e-6)
            seen[by] = body


def test_filtered_boards_move_with_the_revision(client: TestClient, queue: Queue) -> None:
    submit(client, ["q1", "q2"], [("a", "default"), ("b", "default"), ("c", "default")])
    first = start(client, models=["a", "b"])
    work(client, queue, by_strength("a", "b", "c"))
    before = board(client, tournament=first, judge=DEFAULT_JUDGE)
    assert before["judgements"] == 2
    submit(client, ["q3"], [("a", "default"), ("b", "default")])
    second = start(client, models=["a", "b"])
    empty = board(client, tournament=second)
    assert (empty["rows"], empty["revision"]) == ([], 2)
    work(client, queue, by_strength("b", "a"))  # q1, q2 reuse the first judgements; q3 is new
    judged = board(client, tournament=second)
    assert (judged["judgements"], judged["revision"]) == (3, 5)
    assert [(r["player"], r["wins"]) for r in judged["rows"]] == [("a", 2), ("b", 1)]
    after = board(client, tournament=first, judge=DEFAULT_JUDGE)
    assert after == before | {"revision": 5}  # other tournaments' judgements stay out
    assert board(client, judge=DEFAULT_JUDGE)["judgements"] == 3


def test_effects_say_what_a_scenario_is_worth(client: TestClient, queue: Queue) -> None:
    systems = [("A", "s1"), ("A", "s2"), ("B", "s1"), ("B", "s2")]
    submit(client, [f"q{i}" for i in range(6)], systems)
    tid = start(client)

    def worth(s: Submission) -> int:  # model A adds 1, scenario s2 adds 1: A/s1 ties B/s2
        return (s.model == "A") + (s.scenario == "s2")

    def prefer(a: Submission, b: Submission) -> Winner:
        # on q0 the judge gets every decided pair the wrong way round: without it the verdicts
        # would order the systems perfectly and bound no effect (see test_api_effects.py)
        better = worth(a) > worth(b) if a.question_id != "q0" else worth(a) < worth(b)
        return Winner.TIE if worth(a) == worth(b) else Winner.A if better else Winner.B

    work(client, queue, prefer)
    body = board(client, "/api/leaderboard/effects")
    assert (body["tournament"], body["judge"], body["revision"]) == (None, DEFAULT_JUDGE, 36)
    assert body["judge_chosen_by"] == "latest tournament"
    assert body["battles"] == 36
    assert (body["components"], body["groups"]) == (1, [{"component": 1, "systems": 4, "battles": 36}])
    assert [m["model"] for m in body["models"]] == ["A", "B"]
    assert [s["scenario"] for s in body["scenarios"]] == ["s2", "s1"]
    for row in body["models"] + body["scenarios"]:
        assert row["component"] == 1 and row["bounded"]
        assert row["ci_low"] <= row["effect"] <= row["ci_high"]
    assert body["scenarios"][0]["effect"] > body["scenarios"][1]["effect"]
    assert board(client, "/api/leaderboard/effects", tournament=tid)["scenarios"] == body["scenarios"]
    assert client.get("/api/leaderboard/effects", params={"judge": "nobody/none"}).status_code == 404
    assert client.get("/api/leaderboard/effects", params={"tournament": 999}).status_code == 404

    scenarios = [row[0] for row in rows_of(client.get("/").text, "Scenarios")]
    assert scenarios.index("s2") < scenarios.index("s1")


def test_concurrent_requests_while_judgements_resolve(client: TestClient, queue: Queue) -> None:
    """Readers in threads see boards equal to a rebuild at their revision: nothing counted twice."""
    store: Store = app_state_of(client).store
    systems = [(m, "default") for m in ("a", "b", "c", "d")]
    submit(client, [f"q{i}" for i in range(8)], systems)
    start(client)
    seen: list[dict] = []
    errors: list[Exception] = []
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                seen.append(board(client, by="model"))
        except Exception as exc:  # noqa: BLE001 (reported below: an assert in a thread would vanish)
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for thread in readers:
        thread.start()
    try:
        work(client, queue, by_strength("a", "b", "c", "d"))
    finally:
        stop.set()
        for thread in readers:
            thread.join(timeout=60)
    assert not errors, errors
    rows, seqs = store.side_rows(), counted_seqs(store)
    assert len({b["revision"] for b in seen}) > 5
    for body in {b["revision"]: b for b in seen}.values():
        upto = rows[: bisect.bisect_right(seqs, body["revision"])]
        rebuilt = board_at(upto, Level.MODEL, k=32.0)
        assert body["judgements"] == rebuilt.judgements == body["revision"]
        assert [(r["player"], r["wins"], r["losses"], r["ties"]) for r in body["rows"]] == [
            (r.player, r.wins, r.losses, r.ties) for r in rebuilt.rows
        ]
