"""GET /api/leaderboard/winrate and Client.winrate over judgements stored as a worker stores them:
a judge that prefers longer answers inflates a padded model's plain win rate against the
baseline, and its length-controlled win rate is not inflated. Imported battles without outputs
get a plain rate and a null LC rate with the reason; unknown baselines a 404 naming players;
bad parameters a 422. SQLite, then PostgreSQL."""
from __future__ import annotations

import math
import random

import pytest
from fastapi.testclient import TestClient
from rq import Queue

from leaderboard.types import Submission, Winner
from tests.api_fixtures import store_of
from tests.test_api_leaderboard import AUTH, api_settings, board, start, work  # noqa: F401  (a fixture)
from tests.test_client import joust_client

QUALITY = {"base": 0.0, "sharp": 1.5, "padded": 0.0, "weak": -1.5}
QUESTIONS = 120
URL = "/api/leaderboard/winrate"


def words(model: str, q: int) -> int:
    """Output length in words: the padded model is usually, not always, much longer."""
    rng = random.Random(f"{model}/{q}")
    base = rng.randint(15, 40)
    return int(base * math.exp(rng.gauss(0.8, 0.7))) if model == "padded" else base


def field(client: TestClient) -> None:
    batch = [{"question": f"text of q{q}", "question_id": f"q{q}", "model": m,
              "output": " ".join(["word"] * words(m, q)) + f" ({m} on q{q})"}
             for q in range(QUESTIONS) for m in QUALITY]
    assert client.post("/api/submissions", json=batch, headers=AUTH).status_code == 201


def length_lover(a: Submission, b: Submission) -> Winner:
    """Quality counts, and so does being longer (tanh of the gap in characters): one draw per pair."""
    rng = random.Random(f"{a.question_id}/{min(a.model, b.model)}/{max(a.model, b.model)}")
    draw = rng.random()
    logit = QUALITY[a.model] - QUALITY[b.model] + 2.5 * math.tanh((len(a.output) - len(b.output)) / 150)
    p_a = 1 / (1 + math.exp(-logit))
    return Winner.A if (draw < p_a if a.model < b.model else 1 - draw >= p_a) else Winner.B


def test_lc_win_rate_undoes_the_judges_taste_for_length(client: TestClient, queue: Queue) -> None:
    field(client)
    start(client)
    work(client, queue, length_lover)
    got = board(client, URL, baseline="base")
    assert (got["baseline"], got["by"], got["tournament"]) == ("base", "model", None)
    rows = {r["player"]: r for r in got["rows"]}
    assert set(rows) == {"sharp", "padded", "weak"}  # the baseline is not compared with itself
    padded, sharp, weak = rows["padded"], rows["sharp"], rows["weak"]
    for row in rows.values():
        assert row["n_total"] == QUESTIONS == row["n_wins"] + row["n_wins_base"] + row["n_draws"]
        assert row["win_rate"] == 100 * row["n_wins"] / QUESTIONS  # no draws here: wins over verdicts
        assert row["lc_unavailable"] is None and row["lc_standard_error"] > 0
    # Padded is as good as the baseline: its plain rate is inflated by length, its LC rate is not.
    assert padded["win_rate"] > 70
    assert abs(padded["lc_win_rate"] - 50) < 12
    assert padded["length_weight"] < 0  # the baseline-minus-player gap: longer wins
    assert padded["avg_length"] > 2 * sharp["avg_length"]
    assert sharp["lc_win_rate"] > 60 and weak["lc_win_rate"] < 40
    rates = [r["win_rate"] for r in got["rows"]]
    assert rates == sorted(rates, reverse=True)  # best plain win rate first
    # By plain rate padded is about as good as sharp; controlled for length it is far behind.
    assert abs(padded["win_rate"] - sharp["win_rate"]) < 5 and sharp["lc_win_rate"] - padded["lc_win_rate"] > 15
    assert padded["win_rate"] - padded["lc_win_rate"] > 10
    assert board(client, URL, baseline="base") == got  # the same numbers again
    # The Python client: the same rows as a frame.
    frame = joust_client(client).winrate("base").set_index("player")
    assert frame.loc["padded", "lc_win_rate"] == padded["lc_win_rate"]
    assert frame.attrs["baseline"] == "base" and frame["n_total"].dtype == "int64"


def test_imported_battles_have_no_lc_rate(client: TestClient, tmp_path) -> None:
    from service.usecases.importers.battles import load_battles

    path = tmp_path / "battles.csv"
    path.write_text("model_a,model_b,winner,question_id\na,b,model_a,q1\nb,a,model_b,q2\na,b,tie,q3\nc,b,model_a,q1\n")
    load_battles(store_of(client), path, judge="import/j")
    got = board(client, URL, baseline="b")
    rows = {r["player"]: r for r in got["rows"]}
    assert (rows["a"]["n_wins"], rows["a"]["n_wins_base"], rows["a"]["n_draws"], rows["a"]["n_total"]) == (2, 0, 1, 3)
    assert rows["a"]["win_rate"] == pytest.approx(100 * 2.5 / 3)
    assert rows["a"]["lc_win_rate"] is None and rows["a"]["avg_length"] is None
    assert "3 of 3 verdicts against the baseline lack an output" in rows["a"]["lc_unavailable"]
    assert rows["c"]["n_total"] == 1
    assert board(client, URL, baseline="b") == got  # kept for the revision
    more = tmp_path / "more.csv"
    more.write_text("model_a,model_b,winner,question_id\nc,b,model_b,q9\n")
    load_battles(store_of(client), more, judge="import/j")
    again = {r["player"]: r for r in board(client, URL, baseline="b")["rows"]}
    assert again["c"]["n_total"] == 2 and again["c"]["n_wins_base"] == 1  # a new revision is read again


def test_bad_requests_name_the_problem(client: TestClient) -> None:
    field(client)  # submissions, nothing judged: no player has verdicts yet
    empty = client.get(URL, params={"baseline": "base"})
    assert empty.status_code == 404 and "the board is empty" in empty.json()["error"]
    missing = client.get(URL)
    assert missing.status_code == 409 and "baseline" in missing.json()["error"]  # valid, but no baseline run
    assert client.get(URL, params={"baseline": ""}).status_code == 422
    assert client.get(URL, params={"baseline": "base", "by": "planet"}).status_code == 422
    assert client.get(URL, params={"baseline": "base", "tournament": 0}).status_code == 422
    assert client.get(URL, params={"baseline": "base", "tournament": 999}).status_code == 404


def test_unknown_baseline_is_a_404_naming_players(client: TestClient, tmp_path) -> None:
    from service.usecases.importers.battles import load_battles

    path = tmp_path / "battles.csv"
    path.write_text("model_a,model_b,winner,question_id\nalpha,beta,model_a,q1\n")
    load_battles(store_of(client), path)
    before = board(client, "/api/revision")
    answer = client.get(URL, params={"baseline": "gamma"})
    assert answer.status_code == 404
    assert "'gamma'" in answer.json()["error"] and "alpha, beta" in answer.json()["error"]
    assert answer.json()["players"] == ["alpha", "beta"]
    assert client.get(URL, params={"baseline": "alpha", "by": "scenario"}).status_code == 404  # a model, not a scenario
    assert board(client, URL, baseline="default", by="scenario")["rows"] == []  # both sides one scenario
    with_judge = client.get(URL, params={"baseline": "alpha", "judge": "nobody/none"})
    assert with_judge.status_code == 404 and "judges" in with_judge.json()
    assert board(client, "/api/revision") == before  # the refusals changed nothing
