"""The judgements pages over a real app and store: the list behind a board row and a heatmap
cell, its filters and pages, and one judgement with both outputs and each call in words."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from leaderboard.types import Winner
from service.config import Settings
from service.store.imports import ImportedJudgement
from tests.api_fixtures import store_of
from tests.page_text import rows_of, visible

KEY = "judgements-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
JUDGE = "import/gpt4"
EVIL = "<script>alert(1)</script>"


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(api_key=KEY)


def submit(client: TestClient, outputs: dict[str, str], question: str) -> dict[str, int]:
    batch = [{"question": f"text of {question} {EVIL}", "question_id": question, "model": model,
              "output": output} for model, output in outputs.items()]
    response = client.post("/api/submissions", json=batch, headers=AUTH)
    assert response.status_code == 201, response.text
    return {model: s["id"] for model, s in zip(outputs, response.json()["submissions"])}


def seed(client: TestClient, questions: int = 3) -> list[dict[str, int]]:
    """x, y, z answer each question; x beats y in both orders, y and z disagree across orders
    (a tie), z beats x in one order only."""
    rows, ids = [], []
    for q in range(questions):
        got = submit(client, {"x": f"x answer {q} {EVIL}", "y": f"y answer {q}, longer", "z": f"z {q}"}, f"q{q}")
        x, y, z = got["x"], got["y"], got["z"]
        rows += [
            ImportedJudgement(f"xy{q}", x, y, Winner.A, [{"first": x, "winner": "A", "reason": f"x is right {EVIL}"},
                                                         {"first": y, "winner": "B", "reason": "x again"}]),
            ImportedJudgement(f"yz{q}", y, z, Winner.TIE, [{"first": y, "winner": "A", "reason": "first"},
                                                           {"first": z, "winner": "A", "reason": "first"}],
                              consistent=False),
            ImportedJudgement(f"zx{q}", z, x, Winner.A, [{"first": x, "winner": "B", "reason": "z is shorter"}]),
        ]
        ids.append(got)
    store_of(client).import_judgements(name="seed", source="test", judge=JUDGE, criteria="overall", rows=rows)
    return ids


def get(client: TestClient, path: str, status: int = 200) -> str:
    response = client.get(path)
    assert response.status_code == status, response.text
    return response.text


def listed(text: str) -> list[list[str]]:
    return [row for row in rows_of(text, "Judgements") if len(row) > 1]


def test_a_board_row_lists_its_matches_with_the_players_results(client: TestClient) -> None:
    seed(client)
    board = client.get(f"/api/leaderboard?judge={JUDGE}").json()
    x = next(r for r in board["rows"] if r["player"] == "x")
    rows = listed(get(client, f"/judgements?judge={JUDGE}&by=model&player=x"))
    assert len(rows) == x["matches"] == 6
    results = [row[5] for row in rows]
    assert results.count("win") == x["wins"] and results.count("loss") == x["losses"]


def test_a_heatmap_cell_lists_the_judgements_between_two_players(client: TestClient) -> None:
    seed(client)
    rows = listed(get(client, f"/judgements?judge={JUDGE}&by=model&player=y&opponent=z"))
    assert len(rows) == 3 and all(row[6] == "disagreed" for row in rows)
    assert "y against z" in get(client, f"/judgements?judge={JUDGE}&player=y&opponent=z")


def test_filters_and_questions_narrow_the_list(client: TestClient) -> None:
    seed(client)
    assert len(listed(get(client, f"/judgements?judge={JUDGE}&filter=inconsistent"))) == 3
    assert len(listed(get(client, f"/judgements?judge={JUDGE}&filter=ties"))) == 3
    assert len(listed(get(client, f"/judgements?judge={JUDGE}&filter=decided"))) == 6
    assert {row[1] for row in listed(get(client, f"/judgements?judge={JUDGE}&question=q1"))} == {"q1"}


def test_long_lists_come_a_page_at_a_time_and_hold_still(client: TestClient) -> None:
    seed(client, questions=20)  # 60 judgements: 50, then 10
    first = get(client, f"/judgements?judge={JUDGE}")
    assert len(listed(first)) == 50 and "Older" in visible(first)
    older = first.split('href="/judgements?')[-1].split('"')[0].replace("&amp;", "&")
    assert "upto=" in older and "offset=50" in older
    seed(client, questions=1)  # newer judgements: the second page does not shift
    second = listed(get(client, "/judgements?" + older))
    assert len(second) == 10 and all(int(row[0]) <= 10 for row in second)


def test_one_judgement_shows_both_outputs_and_each_call_in_words(client: TestClient) -> None:
    ids = seed(client, questions=1)[0]
    [row] = [r for r in listed(get(client, f"/judgements?judge={JUDGE}&player=x&opponent=y"))]
    text = get(client, f"/judgements/{row[0]}")
    shown = visible(text)
    assert "a: x + default" in shown and "b: y + default" in shown
    assert "x answer 0 <script>alert(1)</script>" in shown and "<script>alert(1)" not in text  # escaped
    assert "Call 1 : shown first: a ; picked the answer shown first, that is a ." in shown
    assert "Call 2 : shown first: b ; picked the answer shown second, that is a ." in shown
    assert "x is right <script>alert(1)</script>" in shown and "the two orders agreed" in shown
    assert f"submission {ids['x']}" in shown
    tie = listed(get(client, f"/judgements?judge={JUDGE}&player=y&opponent=z"))[0][0]
    assert "the two orders disagreed : counted as a tie" in visible(get(client, f"/judgements/{tie}"))


@pytest.mark.parametrize(("path", "status", "says"), [
    ("/judgements/abc", 422, "is not a judgement id"),
    ("/judgements/99999", 404, "no judgement 99999"),
    ("/judgements?filter=odd", 422, "filter='odd' is not one of"),
    ("/judgements?by=team", 422, "is not a level"),
    ("/judgements?judge=nobody/none", 404, "no verdicts from judge 'nobody/none'"),
])
def test_addresses_that_name_nothing_get_a_page_saying_why(client: TestClient, path: str, status: int,
                                                           says: str) -> None:
    seed(client, questions=1)
    assert says in visible(get(client, path, status))
