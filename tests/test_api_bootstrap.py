"""`GET /api/leaderboard?intervals=bootstrap` over a store of several groups: each resampled within
itself, never a zero-width interval the verdicts cannot support, and marked (`ci_missing`) where
the resamples lose what bounded a rating; compared with the closed-form board of the same store.
Judgements stored the way a worker stores them, on SQLite and PostgreSQL."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from fastapi.testclient import TestClient
from rq import Queue

from leaderboard.players import battles_at_level
from leaderboard.resampled import board_bootstrap
from leaderboard.types import Level, Submission, Winner
from service.config import DEFAULT_JUDGE, Settings
from service.usecases.boards import BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED
from tests.api_fixtures import store_of
from tests.test_api_board_judges import submit
from tests.test_api_leaderboard import QUEUE, board, start, work

STRENGTH = {"a1": 200.0, "a2": 0.0, "a3": -100.0}  # Elo points


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(queue_name=QUEUE)


def planted(a: Submission, b: Submission) -> Winner:
    """a1-a3: Bradley-Terry on STRENGTH, drawn from a hash of the question and the pair (the same
    verdict however often asked); d1-d3: the same verdicts on every question (d1 beats d2, d2 beats
    d3, d1 ties d3); b1-b2: a tie on each of their two questions; e1-e2: one win each."""
    first, second = sorted((a.model, b.model))
    if a.model[0] == "a":
        draw = zlib.crc32(f"{a.question_id}|{first}|{second}".encode()) / 2**32
        won = draw < 1 / (1 + 10 ** ((STRENGTH[second] - STRENGTH[first]) / 400))
        winner = first if won else second
    elif a.model[0] == "d":
        winner = None if (first, second) == ("d1", "d3") else first
    elif a.model[0] == "b":
        winner = None
    else:
        winner = "e1" if a.question_id == "e0" else "e2"
    if winner is None:
        return Winner.TIE
    return Winner.A if a.model == winner else Winner.B


def test_bootstrap_intervals_are_never_zero_width_and_say_why_they_are_missing(client: TestClient, queue: Queue) -> None:
    many = [f"q{i}" for i in range(40)]  # 80 matches a player in the groups of three
    submit(client, many, ["a1", "a2", "a3", "d1", "d2", "d3"])
    submit(client, ["b0", "b1"], ["b1", "b2"])
    submit(client, ["e0", "e1"], ["e1", "e2"])
    for models, questions in ((["a1", "a2", "a3"], many), (["d1", "d2", "d3"], many), (["b1", "b2"], ["b0", "b1"]),
                              (["e1", "e2"], ["e0", "e1"])):
        start(client, models=models, questions=questions)
    assert work(client, queue, planted) == 2 * 120 + 2 + 2

    closed = {r["player"]: r for r in board(client)["rows"]}
    boot = board(client, intervals="bootstrap")
    assert (boot["components"], boot["bootstrap_rounds"], boot["bootstrap_seed"]) == (4, BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED)
    rows = {r["player"]: r for r in boot["rows"]}
    assert [rows[p]["component"] for p in ("a1", "d1", "b1", "e1")] == [1, 2, 3, 4]
    for row in boot["rows"]:  # never a point: an interval with width, or none and why
        assert row["bounded"] and row["matches"] in (80, 2)
        if row["ci_missing"] is None:
            assert row["ci_high"] - row["ci_low"] > 1, row
        else:
            assert (row["ci_low"], row["ci_high"]) == (None, None), row
            assert (row["rank_low"], row["rank_high"]) == (1, 3 if row["player"][0] in "ad" else 2), row

    # a group the questions vary: intervals about as wide as the closed form's, around the rating
    for player in STRENGTH:
        row, fisher = rows[player], closed[player]
        assert row["ci_missing"] is None and row["ci_low"] < row["rating"] < row["ci_high"]
        ratio = (row["ci_high"] - row["ci_low"]) / (fisher["ci_high"] - fisher["ci_low"])
        assert 0.6 < ratio < 1.6, (player, ratio)
    # the same verdicts on every question: the closed form has an interval, the resamples none
    for player in ("d1", "d2", "d3"):
        assert closed[player]["ci_high"] - closed[player]["ci_low"] > 100
        assert rows[player]["ci_missing"] == "no_spread"
    # two matches each: two ties never vary; one win each is unbeaten in half the resamples
    assert [rows[p]["ci_missing"] for p in ("b1", "b2", "e1", "e2")] == ["no_spread"] * 2 + ["unbounded"] * 2
    assert all(closed[p]["ci_missing"] is None for p in closed)  # the closed-form board bounds them all

    # the figures are `board_bootstrap`'s on the judge's verdicts: computed in one place
    battles = battles_at_level(store_of(client).side_rows(judge=DEFAULT_JUDGE), Level.MODEL)
    found = board_bootstrap(battles, np.random.default_rng(BOOTSTRAP_SEED), rounds=BOOTSTRAP_ROUNDS)
    for player, row in rows.items():
        low, high, missing = found[player]
        assert row["ci_missing"] == (None if missing is None else missing.value)
        if missing is None:
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=1e-9)
