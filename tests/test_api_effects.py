"""Model and scenario effects follow the board's rules on every surface that shows them (the
API and the page; the client, the CLI and the export show no effects): fitted per connected group
of systems, numbered as on the system board, and unbounded where the verdicts do not bound them.
The store is the README's quick tour (three systems on one question, a perfect order) plus one
tournament of 4 models x 2 scenarios, judged the way a worker judges, on SQLite and PostgreSQL."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from rq import Queue

from leaderboard.effects import fit_effects
from leaderboard.types import Submission, Winner
from service.config import Settings
from tests.api_fixtures import store_of
from tests.page_text import rows_of, settled, visible
from tests.test_api_leaderboard import AUTH, QUEUE, board, by_strength, start, work

MODELS = ("gpt4", "claude", "llama", "mistral")  # best first
SCENARIOS = ("s1", "s2")  # s1 better


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(queue_name=QUEUE)


def submit(client: TestClient, question: str, systems: list[tuple[str, str]]) -> None:
    batch = [{"question": question, "model": m, "scenario": s, "output": f"{m} under {s} on {question}"}
             for m, s in systems]
    assert client.post("/api/submissions", json=batch, headers=AUTH).status_code == 201


def mostly_additive(a: Submission, b: Submission) -> Winner:
    """The better model plus scenario wins (equal worth ties), except on the first question of
    each four, where every decided pair goes the other way: the verdicts bound every effect."""
    def worth(s: Submission) -> int:
        return 2 * (len(MODELS) - MODELS.index(s.model)) + (len(SCENARIOS) - SCENARIOS.index(s.scenario))

    if worth(a) == worth(b):
        return Winner.TIE
    upset = a.question.endswith(("#0", "#4"))
    return Winner.A if (worth(a) > worth(b)) != upset else Winner.B


def quick_tour_then_a_tournament(client: TestClient, queue: Queue) -> int:
    """The README's quick tour judged, then a 4 x 2 tournament over eight questions; its id."""
    tour = [("gpt-x", "terse"), ("claude-y", "terse"), ("llama-z", "cot")]
    submit(client, "What is 2+2?", tour)
    start(client, name="first", mode="round_robin")
    assert work(client, queue, by_strength("claude-y", "gpt-x", "llama-z")) == 3
    systems = [(m, s) for m in MODELS for s in SCENARIOS]
    for q in range(8):
        submit(client, f"question #{q}", systems)
    tid = start(client, name="four by two", models=list(MODELS))
    assert work(client, queue, mostly_additive) == 28 * 8
    return tid


def test_effects_are_fitted_per_group_and_unbounded_where_the_verdicts_do_not_bound_them(
    client: TestClient, queue: Queue,
) -> None:
    tid = quick_tour_then_a_tournament(client, queue)
    body = board(client, "/api/leaderboard/effects")
    assert (body["components"], body["battles"]) == (2, 3 + 28 * 8)
    assert body["groups"] == [{"component": 1, "systems": 8, "battles": 28 * 8},
                              {"component": 2, "systems": 3, "battles": 3}]

    # the tournament's group: its effects are the tournament's own, whatever else the store holds
    alone = board(client, "/api/leaderboard/effects", tournament=tid)
    assert alone["groups"] == [{"component": 1, "systems": 8, "battles": 28 * 8}]
    first = [row for row in body["models"] + body["scenarios"] if row["component"] == 1]
    assert first == alone["models"] + alone["scenarios"]
    assert [row["model"] for row in first[:4]] == list(MODELS) and [row["scenario"] for row in first[4:]] == ["s1", "s2"]
    for row in first:
        assert row["bounded"] and row["ci_low"] < row["effect"] < row["ci_high"]
        assert row["ci_high"] - row["ci_low"] < 300, row  # pooled with the quick tour: thousands wide
    # ... and equal a fit of the tournament's verdicts alone
    fitted = fit_effects(store_of(client).side_rows(tournament_id=tid)).group(1)
    for row in first:
        effect = (fitted.models | fitted.scenarios)[row.get("model") or row["scenario"]]
        assert (row["effect"], row["ci_low"], row["ci_high"]) == pytest.approx(effect[:3], abs=1e-6)

    # the quick tour: claude-y beat gpt-x beat llama-z, and llama-z alone ran under cot: nothing
    # there bounds an effect, so none has a number
    second = [row for row in body["models"] + body["scenarios"] if row["component"] == 2]
    assert [row.get("model") or row["scenario"] for row in second] == ["claude-y", "gpt-x", "llama-z", "terse", "cot"]
    for row in second:
        assert (row["bounded"], row["effect"], row["ci_low"], row["ci_high"]) == (False, None, None, None)

    # the groups are the system board's components, and its verdict on the quick tour agrees
    systems = board(client, by="model+scenario")
    assert systems["components"] == 2
    for row in systems["rows"]:
        assert row["component"] == (1 if row["player"].split(" + ")[0] in MODELS else 2)
        assert row["bounded"] == (row["component"] == 1)

    # the page shows the same groups and numbers, and "unbounded" where there is none
    page = settled(client, "/").text
    assert "Systems the verdicts never linked are fitted apart" in visible(page)
    assert "Group 2 of 2 (3 systems, 3 judgements)" in visible(page)
    shown = rows_of(page, "Models in group 1") + rows_of(page, "Scenarios in group 1")
    assert [cells[0] for cells in shown] == [row.get("model") or row["scenario"] for row in first]
    for cells, row in zip(shown, first):
        assert cells[1] == f"{row['effect']:+.0f}"
        assert cells[2] == f"{row['ci_low']:+.0f} – {row['ci_high']:+.0f}"
    tour = rows_of(page, "Models in group 2") + rows_of(page, "Scenarios in group 2")
    assert tour == [[name, "unbounded", "—"] for name in ("claude-y", "gpt-x", "llama-z", "terse", "cot")]


def test_one_scenario_has_nothing_to_compare(client: TestClient, queue: Queue) -> None:
    systems = [("a", "default"), ("b", "default"), ("c", "default")]
    for q in range(3):
        submit(client, f"q{q}", systems)
    start(client)
    work(client, queue, lambda a, b: Winner.TIE if a.question == "q0" else by_strength("a", "b", "c")(a, b))
    body = board(client, "/api/leaderboard/effects")
    models = board(client)["rows"]
    assert body["scenarios"] == [] and [row["model"] for row in body["models"]] == ["a", "b", "c"]
    # with one scenario a model's effect is its rating on the model board, less the mean's 1000
    for effect, row in zip(body["models"], models):
        assert (effect["effect"], effect["ci_low"], effect["ci_high"]) == pytest.approx(
            (row["rating"] - 1000, row["ci_low"] - 1000, row["ci_high"] - 1000), abs=1e-6)
    assert rows_of(settled(client, "/").text, "Scenarios") == [["One scenario here: nothing to compare it with."]]
