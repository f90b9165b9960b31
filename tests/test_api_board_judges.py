"""Boards over the API and the page are one judge's each, rank the pieces of a disconnected
comparison graph apart, serve their matrices and, on request, bootstrap intervals: over judgements
stored the way a worker stores them (jobs taken from the real Redis queue) and human votes
imported into the real store, on SQLite and PostgreSQL."""
from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient
from rq import Queue

from leaderboard.players import battles_at_level
from leaderboard.resampled import board_bootstrap
from leaderboard.types import Level, Submission, Winner
from service.config import DEFAULT_JUDGE, Settings
from service.store.imports import ImportedJudgement
from service.usecases.boards import BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED
from tests.api_fixtures import MakeClient, app_state_of, store_of
from tests.page_text import rows_of, visible
from tests.test_api_leaderboard import (
    AUTH,
    QUEUE,
    Prefer,
    board,
    by_strength,
    start,
    work,
)

LIKES_A, LIKES_B = "anthropic/likes-a", "anthropic/likes-b"


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(queue_name=QUEUE)


BOARD = "Models board"  # the board table's label on the page


def submit(client: TestClient, questions: list[str], models: list[str]) -> dict[tuple[str, str], int]:
    """One submission per (question, model), scenario "default"; their ids by (question, model)."""
    batch = [{"question": f"text of {q}", "question_id": q, "model": m, "output": f"{m} answers {q}"}
             for q in questions for m in models]
    response = client.post("/api/submissions", json=batch, headers=AUTH)
    assert response.status_code == 201, response.text
    return {(item["question_id"], item["model"]): s["id"] for item, s in zip(batch, response.json()["submissions"])}


def stronger_mostly(*order: str) -> Prefer:
    """The model earlier in `order` wins q0-q3, loses q4 and ties q5 (and so on for each six
    questions), except that on q3 the second of each three beats the first: nobody is unbeaten,
    and nobody sits at the centre of every resample of the questions by symmetry."""

    def prefer(a: Submission, b: Submission) -> Winner:
        question = int(a.question_id[1:]) % 6
        i, j = order.index(a.model), order.index(b.model)
        if question == 5:
            return Winner.TIE
        upset = question == 4 or (question == 3 and min(i, j) % 3 == 0 and abs(i - j) == 1)
        return Winner.A if (i < j) != upset else Winner.B

    return prefer


def vote(client: TestClient, voter: str, ids: dict[tuple[str, str], int], votes: list[tuple[str, str, str]]) -> int:
    """Import `human/<voter>`'s votes (question, winner model, loser model); the import's tournament."""
    rows = [ImportedJudgement(f"{voter}-{i}", ids[(q, won)], ids[(q, lost)], Winner.A, [{"first": None, "winner": "A"}])
            for i, (q, won, lost) in enumerate(votes)]
    imported = store_of(client).import_judgements(name=voter, source="test", judge=f"human/{voter}",
                                                  criteria="overall", rows=rows)
    assert imported.tournament_id
    return imported.tournament_id


def test_the_default_board_holds_one_judge_and_links_the_others(client: TestClient, queue: Queue) -> None:
    submit(client, ["q1", "q2"], ["a", "b", "c"])
    first = start(client, judge=LIKES_A)
    assert work(client, queue, by_strength("a", "b", "c")) == 6
    start(client, judge=LIKES_B, models=["a", "b"])
    assert work(client, queue, by_strength("b", "a")) == 2

    body = board(client)  # the latest tournament's judge: likes-b, two verdicts, not eight pooled
    assert (body["judge"], body["judge_chosen_by"], body["judgements"]) == (LIKES_B, "latest tournament", 2)
    assert [(r["player"], r["wins"], r["losses"]) for r in body["rows"]] == [("b", 2, 0), ("a", 0, 2)]
    assert body["other_judges"] == [
        {"judge": LIKES_A, "verdicts": 6, "board": "/api/leaderboard?judge=anthropic%2Flikes-a&by=model"},
    ]
    other = board(client, body["other_judges"][0]["board"])  # the link leads to the other board
    assert (other["judge"], other["judge_chosen_by"], other["judgements"]) == (LIKES_A, "named", 6)
    assert [r["player"] for r in other["rows"]] == ["a", "b", "c"]
    assert [o["judge"] for o in other["other_judges"]] == [LIKES_B]

    # the effects, the matrix and a tournament's board follow the same rule
    effects = board(client, "/api/leaderboard/effects")
    assert (effects["judge"], effects["battles"]) == (LIKES_B, 2)
    assert effects["other_judges"][0]["board"] == "/api/leaderboard/effects?judge=anthropic%2Flikes-a"
    matrix = board(client, "/api/leaderboard/matrix")
    assert (matrix["judge"], matrix["players"], matrix["battles"]) == (LIKES_B, ["b", "a"], [[0, 2], [2, 0]])
    of_first = board(client, tournament=first)
    assert (of_first["judge"], of_first["judge_chosen_by"], of_first["judgements"]) == (LIKES_A, "latest tournament", 6)
    assert of_first["other_judges"] == []  # likes-b judged nothing in that tournament
    assert client.get("/api/leaderboard", params={"tournament": first, "judge": LIKES_B}).status_code == 404

    # a newer tournament of likes-a makes likes-a the default
    submit(client, ["q3"], ["a", "c"])
    start(client, judge=LIKES_A, questions=["q3"])
    assert work(client, queue, by_strength("c", "a")) == 1
    assert (board(client)["judge"], board(client)["judgements"]) == (LIKES_A, 7)


def test_a_human_vote_never_lands_in_an_llm_board(client: TestClient, queue: Queue) -> None:
    ids = submit(client, ["q1", "q2"], ["a", "b"])
    start(client)
    assert work(client, queue, by_strength("a", "b")) == 2  # the LLM judge: a beats b twice
    # human votes, imported later (newer tournaments), all for b
    alice = vote(client, "alice", ids, [("q1", "b", "a"), ("q2", "b", "a")])
    vote(client, "bob", ids, [("q1", "b", "a")])

    body = board(client)
    assert (body["judge"], body["judge_chosen_by"], body["judgements"]) == (DEFAULT_JUDGE, "latest tournament", 2)
    assert [(r["player"], r["wins"], r["losses"]) for r in body["rows"]] == [("a", 2, 0), ("b", 0, 2)]
    assert [(o["judge"], o["verdicts"]) for o in body["other_judges"]] == [
        ("human", 3), ("human/alice", 2), ("human/bob", 1),
    ]
    humans = board(client, judge="human")  # every voter together, no LLM verdict among them
    assert (humans["judge"], humans["judgements"]) == ("human", 3)
    assert [(r["player"], r["wins"], r["losses"]) for r in humans["rows"]] == [("b", 3, 0), ("a", 0, 3)]
    assert board(client, judge="human/bob")["judgements"] == 1
    only_humans = board(client, tournament=alice)  # a scope with human votes only: the voters pooled
    assert (only_humans["judge"], only_humans["judge_chosen_by"], only_humans["judgements"]) == (
        "human", "only human votes", 2)
    effects = board(client, "/api/leaderboard/effects", judge="human")
    assert effects["judge"] == "human"


def test_disconnected_groups_are_ranked_apart(client: TestClient, queue: Queue) -> None:
    # 18 questions: a resample of them nearly always keeps a loss and a tie of each six, so the
    # bootstrap bounds every rating too (with 6, one resample in eleven holds only clean wins)
    questions = [f"q{i}" for i in range(18)]
    submit(client, questions, ["a", "b", "c", "x", "y", "z"])
    start(client, models=["a", "b", "c"])
    start(client, models=["x", "y", "z"])
    assert work(client, queue, stronger_mostly("a", "b", "c", "x", "y", "z")) == 108

    for intervals in ("closed", "bootstrap"):
        body = board(client, intervals=intervals)
        assert body["components"] == 2
        assert [(r["player"], r["component"], r["rank"]) for r in body["rows"]] == [
            ("a", 1, 1), ("b", 1, 2), ("c", 1, 3), ("x", 2, 1), ("y", 2, 2), ("z", 2, 3),
        ]
        for row in body["rows"]:
            assert row["ci_low"] is not None and row["ci_high"] is not None, (intervals, row)
            assert 0 < row["ci_high"] - row["ci_low"] < 1000, (intervals, row)  # pooled: about 2,800 wide
            assert 1 <= row["rank_low"] <= row["rank"] <= row["rank_high"] <= 3
        ratings = [r["rating"] for r in body["rows"]]
        assert [sum(ratings[:3]) / 3, sum(ratings[3:]) / 3] == pytest.approx([1000.0, 1000.0])  # each group's mean

    matrix = board(client, "/api/leaderboard/matrix")
    assert (matrix["players"], matrix["components"]) == (["a", "b", "c", "x", "y", "z"], [1, 1, 1, 2, 2, 2])
    assert matrix["win_rate"][0][3:] == [None, None, None] and matrix["battles"][0][3:] == [0, 0, 0]

    page = client.get("/").text
    assert "2 groups never compared with each other" in visible(page)
    rows = rows_of(page, BOARD)
    headings = [i for i, row in enumerate(rows) if len(row) == 1]
    assert [rows[i][0].split(":")[0] for i in headings] == ["Group 1 of 2 (3 players)", "Group 2 of 2 (3 players)"]
    first, second = rows[headings[0] + 1:headings[1]], rows[headings[1] + 1:]
    assert [row[1] for row in first] == ["a", "b", "c"] and [row[1] for row in second] == ["x", "y", "z"]


def test_the_matrix_holds_the_hand_counted_results(client: TestClient, queue: Queue) -> None:
    submit(client, ["q1", "q2", "q3"], ["a", "b", "c"])
    submit(client, ["q9"], ["d", "e"])

    def prefer(a: Submission, b: Submission) -> Winner:
        # q1, q2: a > b > c; q3: c > b > a, but a and c tie; q9: d beats e
        order = "cba" if a.question_id == "q3" else "abcde"
        if a.question_id == "q3" and {a.model, b.model} == {"a", "c"}:
            return Winner.TIE
        return Winner.A if order.index(a.model) < order.index(b.model) else Winner.B

    start(client, models=["a", "b", "c"])
    start(client, models=["d", "e"])
    work(client, queue, prefer)
    body = board(client, "/api/leaderboard/matrix", by="model")
    assert (body["judge"], body["judgements"]) == (DEFAULT_JUDGE, 10)
    assert (body["players"], body["components"]) == (["a", "b", "c", "d", "e"], [1, 1, 1, 2, 2])
    never = [None, None]
    assert body["win_rate"] == [
        [None, pytest.approx(2 / 3), pytest.approx(2.5 / 3), *never],  # a: 2 of 3 against b, 2 wins + a tie against c
        [pytest.approx(1 / 3), None, pytest.approx(2 / 3), *never],
        [pytest.approx(0.5 / 3), pytest.approx(1 / 3), None, *never],
        [None, None, None, None, 1.0],
        [None, None, None, 0.0, None],
    ]
    assert body["battles"] == [[0, 3, 3, 0, 0], [3, 0, 3, 0, 0], [3, 3, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 1, 0]]
    assert [r["player"] for r in board(client)["rows"]] == body["players"]  # the board's order
    assert client.get("/api/leaderboard/matrix", params={"judge": "nobody/none"}).status_code == 404
    assert client.get("/api/leaderboard/matrix", params={"by": "judge"}).status_code == 422


def test_bootstrap_intervals_are_reproducible_and_cached_per_revision(
    client: TestClient, make_client: MakeClient, queue: Queue,
) -> None:
    questions = [f"q{i}" for i in range(18)]  # enough that the resamples bound every rating
    submit(client, questions, ["a", "b", "c"])
    start(client)
    work(client, queue, stronger_mostly("a", "b", "c"))
    closed = board(client)
    boot = board(client, intervals="bootstrap")
    assert (boot["intervals"], boot["bootstrap_rounds"], boot["bootstrap_seed"]) == (
        "bootstrap", BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED)
    assert (closed["intervals"], closed["bootstrap_rounds"]) == ("closed", None)
    assert [r["rating"] for r in boot["rows"]] == pytest.approx([r["rating"] for r in closed["rows"]])
    assert [(r["ci_low"], r["ci_high"]) for r in boot["rows"]] != [(r["ci_low"], r["ci_high"]) for r in closed["rows"]]

    store, cache = store_of(client), app_state_of(client).boards
    kept = cache.bootstrapped(Level.MODEL, judge=DEFAULT_JUDGE)
    assert cache.bootstrapped(Level.MODEL, judge=DEFAULT_JUDGE) is kept  # one computation per revision
    assert board(client, intervals="bootstrap") == boot
    assert board(make_client(), intervals="bootstrap") == boot  # another app, the same seed: the same numbers

    def expected() -> list[float]:
        battles = battles_at_level(store.side_rows(judge=DEFAULT_JUDGE), Level.MODEL)
        found = board_bootstrap(battles, np.random.default_rng(BOOTSTRAP_SEED), rounds=BOOTSTRAP_ROUNDS)
        return [bound for player in sorted(found) for bound in found[player][:2]]

    assert bounds(boot) == pytest.approx(expected())

    submit(client, ["q18"], ["a", "c"])
    start(client, questions=["q18"])
    assert work(client, queue, by_strength("c", "a")) == 1  # a new judgement: a new revision, recomputed
    again = board(client, intervals="bootstrap")
    assert again["revision"] == boot["revision"] + 1 and again["judgements"] == boot["judgements"] + 1
    assert cache.bootstrapped(Level.MODEL, judge=DEFAULT_JUDGE) is not kept
    assert bounds(again) == pytest.approx(expected()) and bounds(again) != pytest.approx(bounds(boot))
    for row in again["rows"]:
        assert math.isfinite(row["ci_low"]) and row["ci_low"] <= row["ci_high"]

    refused = client.get("/api/leaderboard", params={"intervals": "jackknife"})
    assert refused.status_code == 422
    assert "closed" in refused.json()["error"] and "bootstrap" in refused.json()["error"]


def bounds(body: dict) -> list[float]:
    """Every row's (ci_low, ci_high), players by name."""
    rows = sorted(body["rows"], key=lambda r: r["player"])
    return [bound for r in rows for bound in (r["ci_low"], r["ci_high"])]


def test_the_page_names_its_judge_and_links_the_others(client: TestClient, queue: Queue) -> None:
    ids = submit(client, ["q1", "q2"], ["a", "b"])
    start(client, judge=LIKES_A)
    work(client, queue, by_strength("a", "b"))
    start(client, judge=LIKES_B)
    work(client, queue, by_strength("b", "a"))
    vote(client, "alice", ids, [("q1", "a", "b")])

    page = client.get("/").text
    assert f"Judge <strong>{LIKES_B}</strong>" in page and "the judge of the latest tournament" in page
    assert '<a href="/?judge=anthropic%2Flikes-a&amp;by=model">anthropic/likes-a</a> (2 verdicts)' in page
    assert '<a href="/?judge=human%2Falice&amp;by=model">human/alice</a> (1 verdict)' in page
    assert [row[1].removesuffix(" few") for row in rows_of(page, BOARD) if len(row) > 2] == ["b", "a"]  # likes-b's board only
    assert [row[7] for row in rows_of(page, BOARD) if len(row) > 2] == ["2", "2"]  # matches: two verdicts each, not five

    named = client.get("/", params={"judge": LIKES_A})
    assert named.status_code == 200
    assert f"Judge <strong>{LIKES_A}</strong>" in named.text and "named in the address" in named.text
    assert [row[1].removesuffix(" few") for row in rows_of(named.text, BOARD) if len(row) > 2] == ["a", "b"]
    humans = client.get("/", params={"judge": "human"}).text
    assert [row[1].removesuffix(" few") for row in rows_of(humans, BOARD) if len(row) > 2] == ["a", "b"]
    assert [row[7] for row in rows_of(humans, BOARD) if len(row) > 2] == ["1", "1"]

    unknown = client.get("/", params={"judge": "<i>nobody</i>"})
    assert unknown.status_code == 404
    assert "&lt;i&gt;nobody&lt;/i&gt;" in unknown.text and "<i>" not in unknown.text
    assert 'href="/?judge=anthropic%2Flikes-b"' in unknown.text
