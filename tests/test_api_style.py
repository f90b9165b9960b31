"""GET /api/leaderboard?control=style over judgements stored as a worker stores them: a judge
that prefers longer answers tops the plain board with a padded model; the style-controlled
board puts substance first and reports the length coefficient. Imported battles without
outputs get a 422 saying why. SQLite, then PostgreSQL."""
from __future__ import annotations

import random

from fastapi.testclient import TestClient
from rq import Queue

from leaderboard.types import Submission, Winner
from tests.api_fixtures import app_state_of
from tests.test_api_leaderboard import AUTH, api_settings, board, start, work  # noqa: F401  (a fixture)

QUALITY = {"sharp": 2.0, "padded": 0.0, "weak": -2.0}
WORDS = {"sharp": 10, "padded": 60, "weak": 20}


def field(client: TestClient, questions: int = 60) -> None:
    rng = random.Random(3)
    batch = [{"question": f"text of q{q}", "question_id": f"q{q}", "model": m,
              "output": " ".join(["word"] * int(WORDS[m] * rng.uniform(0.7, 1.3))) + f" ({m} on q{q})"}
             for q in range(questions) for m in QUALITY]
    assert client.post("/api/submissions", json=batch, headers=AUTH).status_code == 201


def length_lover(seed: int = 7):
    """Quality counts, and each relative length difference counts more."""
    rng = random.Random(seed)

    def prefer(a: Submission, b: Submission) -> Winner:
        la, lb = len(a.output), len(b.output)
        logit = QUALITY[a.model] - QUALITY[b.model] + 8.0 * (la - lb) / (la + lb + 1)
        return Winner.A if rng.random() < 1 / (1 + 2.718281828 ** -logit) else Winner.B
    return prefer


def test_style_control_removes_the_judges_taste_for_length(client: TestClient, queue: Queue) -> None:
    field(client)
    start(client)
    work(client, queue, length_lover())
    plain = board(client)
    assert plain["control"] == "none" and plain["coefficients"] is None
    assert plain["rows"][0]["player"] == "padded"
    styled = board(client, control="style")
    assert styled["control"] == "style"
    assert [r["player"] for r in styled["rows"]] == ["sharp", "padded", "weak"]
    by_player = {r["player"]: r for r in plain["rows"]}
    for row in styled["rows"]:
        assert row["plain_rating"] == by_player[row["player"]]["rating"]
        assert row["ci_low"] < row["rating"] < row["ci_high"]
    length = next(c for c in styled["coefficients"] if c["name"] == "length")
    assert length["component"] == 1 and length["ci_low"] > 0
    assert board(client, control="style") == styled  # cached per revision: the same numbers


def test_style_control_refuses_what_it_cannot_measure(client: TestClient, tmp_path) -> None:
    from service.usecases.importers.battles import load_battles

    path = tmp_path / "battles.csv"
    path.write_text("model_a,model_b,winner,question_id\na,b,model_a,q1\nb,c,model_b,q1\na,c,model_a,q2\n")
    load_battles(app_state_of(client).store, path)
    response = client.get("/api/leaderboard", params={"control": "style"})
    assert response.status_code == 422
    assert "battles have no outputs" in response.json()["error"]
    both = client.get("/api/leaderboard", params={"control": "style", "intervals": "bootstrap"})
    assert both.status_code == 200  # a valid request: the plain board, saying so and why
    assert (both.json()["control"], both.json()["coefficients"]) == ("none", None)
    assert "style control is not computed with" in both.json()["control_note"]
    assert client.get("/api/leaderboard", params={"control": "fancy"}).status_code == 422
