"""GET /api/leaderboard?ties=davidson over judgements stored as a worker stores them: a judge
that often says tie; the Davidson board equals `leaderboard.ties.fit_with_ties` on the same
battles, component by component, and reports the tie parameter; the default board is unchanged;
a bad value is a 422 that changes nothing. SQLite, then PostgreSQL."""
from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient
from rq import Queue

from leaderboard.players import battles_at_level
from leaderboard.ties import fit_with_ties
from leaderboard.types import Level, Submission, Winner
from service.store import Store
from tests.api_fixtures import app_state_of
from tests.test_api_leaderboard import AUTH, api_settings, board, start, work  # noqa: F401  (a fixture)

STRENGTH = {"a": 1.0, "b": 0.3, "c": -1.0, "x": 0.5, "y": -0.5}


def field(client: TestClient) -> None:
    """Two fields that never meet: a, b, c answer questions p*, x and y answer questions q*."""
    batch = [{"question": f"text of {q}", "question_id": q, "model": m, "output": f"{m} on {q}"}
             for q, models in [(f"p{i}", "abc") for i in range(30)] + [(f"q{i}", "xy") for i in range(30)]
             for m in models]
    assert client.post("/api/submissions", json=batch, headers=AUTH).status_code == 201


def tie_prone(seed: int = 5):
    """Davidson-like: a tie a third of the time between equals, fewer between unequal players."""
    rng = random.Random(seed)

    def prefer(a: Submission, b: Submission) -> Winner:
        pa, pb = 2.718281828 ** STRENGTH[a.model], 2.718281828 ** STRENGTH[b.model]
        tie = 1.0 * (pa * pb) ** 0.5
        u = rng.random() * (pa + pb + tie)
        return Winner.A if u < pa else Winner.B if u < pa + pb else Winner.TIE
    return prefer


def test_davidson_board_is_the_tie_model_fitted_per_component(client: TestClient, queue: Queue) -> None:
    field(client)
    tid = start(client)
    work(client, queue, tie_prone())
    plain = board(client)
    assert (plain["ties"], plain["ties_note"], plain["tie_parameter"], plain["tie_parameters"]) == (
        "half", None, None, None)
    assert board(client, ties="half") == plain  # the default, spelled out
    assert plain["components"] == 2
    tied = board(client, ties="davidson")
    assert tied["ties"] == "davidson" and tied["judgements"] == plain["judgements"]
    store: Store = app_state_of(client).store
    battles = battles_at_level(store.side_rows(judge=plain["judge"]), Level.MODEL)
    rows = {r["player"]: r for r in tied["rows"]}
    plain_rows = {r["player"]: r for r in plain["rows"]}
    parameters = tied["tie_parameters"]
    assert [p["component"] for p in parameters] == [1, 2] and tied["tie_parameter"] == parameters[0]
    for component, members in ((1, {"a", "b", "c"}), (2, {"x", "y"})):
        expected = fit_with_ties([bt for bt in battles if bt.a in members], "davidson")
        assert set(expected.ratings) == members
        for player, (rating, low, high) in expected.ratings.items():
            row = rows[player]
            assert row["component"] == component and row["bounded"]
            assert (row["rating"], row["ci_low"], row["ci_high"]) == pytest.approx((rating, low, high), abs=1e-9)
            assert row["plain_rating"] == plain_rows[player]["rating"]  # the half board's, kept beside
        nu, nu_low, nu_high = expected.tie_parameter
        found = parameters[component - 1]
        assert (found["nu"], found["ci_low"], found["ci_high"]) == pytest.approx((nu, nu_low, nu_high), abs=1e-9)
        assert found["tie_probability_equal"] == pytest.approx(nu / (2 + nu))
        assert 0.2 < found["nu"] < 3.0  # ties are common here: ν near the planted 1
    assert [r["player"] for r in tied["rows"]] == ["a", "b", "c", "x", "y"]
    assert [(r["rank"], r["rank_low"] <= r["rank"] <= r["rank_high"]) for r in tied["rows"]] == [
        (1, True), (2, True), (3, True), (1, True), (2, True)]
    assert board(client, ties="davidson") == tied  # cached per revision: the same numbers
    one = board(client, ties="davidson", tournament=tid)  # the only tournament: the same board
    assert (one["rows"], one["tie_parameters"]) == (tied["rows"], tied["tie_parameters"])
    assert board(client) == plain  # and the default board did not move


def test_davidson_with_what_it_does_not_compute_says_so(client: TestClient, queue: Queue) -> None:
    field(client)
    start(client)
    work(client, queue, tie_prone())
    boot = board(client, ties="davidson", intervals="bootstrap")
    assert (boot["ties"], boot["tie_parameter"], boot["intervals"]) == ("half", None, "bootstrap")
    assert "ties=davidson is not computed with intervals=bootstrap" in boot["ties_note"]
    assert boot == board(client, intervals="bootstrap") | {"ties_note": boot["ties_note"]}
    styled = board(client, ties="davidson", control="style")
    assert (styled["ties"], styled["control"], styled["coefficients"]) == ("davidson", "none", None)
    assert "style control is not computed with ties=davidson" in styled["control_note"]
    assert styled["rows"] == board(client, ties="davidson")["rows"]


def test_an_unknown_tie_model_is_refused_and_changes_nothing(client: TestClient, queue: Queue) -> None:
    field(client)
    start(client)
    work(client, queue, tie_prone())
    before = board(client)
    for bad in ("fancy", "", "half,davidson"):
        response = client.get("/api/leaderboard", params={"ties": bad})
        assert response.status_code == 422, bad
        assert "ties" in response.text and "'half'" in response.text and "'davidson'" in response.text
    assert board(client) == before
    assert board(client, ties="DAVIDSON")["ties"] == "davidson"  # any case, as every vocabulary


def test_no_judgements_no_tie_parameter(client: TestClient) -> None:
    empty = board(client, ties="davidson")
    assert (empty["rows"], empty["ties"], empty["tie_parameter"], empty["tie_parameters"]) == (
        [], "davidson", None, [])
