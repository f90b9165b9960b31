"""Cost and budget end to end: a real RQ worker, real Redis and SQLite, the real anthropic SDK
against the fake Messages API, and a price for the fake judge from a JOUST_PRICES file."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.config import Settings
from service.store import Store
from service.web.app import create_app
from tests.fake_anthropic import FakeAnthropic
from tests.worker_fixtures import assert_calls_fit, start, submit, work

PRICED = "anthropic/fake-judge"
UNPRICED = "anthropic/unpriced-judge"
PER_MTOK = 1000.0  # USD per million tokens, in and out: one call of the fake costs about $0.26


@pytest.fixture
def env_vars(tmp_path: Path) -> dict[str, str]:
    """Prices for the fake judge; one call at a time, so that spend is checked call by call."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({PRICED: {"input": PER_MTOK, "output": PER_MTOK}}))
    return {"JOUST_PRICES": str(prices), "JOUST_WORKER_MATCHES": "1", "JOUST_JUDGE_CONCURRENCY": "1"}


def billed(fake: FakeAnthropic) -> float:
    """What the fake's answered requests cost."""
    return sum(r.input_tokens + r.output_tokens for r in fake.received) * PER_MTOK / 1e6


def expected_cost(call: dict) -> float:
    return (call["input_tokens"] + call["output_tokens"]) * PER_MTOK / 1_000_000


def tokens_sent(fake: FakeAnthropic) -> list[tuple[int, int]]:
    """(input, output) tokens of each reply the fake gave, sorted."""
    return sorted((r.input_tokens, r.output_tokens) for r in fake.received if r.status == 200)


def tokens_stored(judgements: list[dict]) -> list[tuple[int, int]]:
    """(input, output) tokens of each call the judgements record, sorted."""
    return sorted((c["input_tokens"], c["output_tokens"]) for j in judgements for c in j["calls"])


def test_every_call_and_judgement_records_its_cost(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    tid = start(db, env, judge=PRICED)
    work(env, db, tid)
    judgements = db.tournament_judgements(tid)
    assert len(judgements) == 3
    assert tokens_stored(judgements) == tokens_sent(fake)  # each call records what the fake counted
    for j in judgements:
        assert all(c["cost_usd"] == pytest.approx(expected_cost(c)) for c in j["calls"])
        assert j["cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in j["calls"]))
    billed = sum(r.input_tokens + r.output_tokens for r in fake.received) * PER_MTOK / 1_000_000
    assert db.get_tournament(tid).spent_usd == pytest.approx(billed)


def test_a_judge_without_a_price_records_null_cost(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    tid = start(db, env, judge=UNPRICED)
    view = work(env, db, tid)
    assert view.matches_done == 3 and view.spent_usd == 0.0
    judgements = db.tournament_judgements(tid)
    assert tokens_stored(judgements) == tokens_sent(fake)  # the tokens are known, only the price is not
    for j in judgements:
        assert j["cost_usd"] is None and all(c["cost_usd"] is None for c in j["calls"])
        assert j["input_tokens"] == sum(c["input_tokens"] for c in j["calls"])
        assert db.get_judgement(j["judgement_id"]).cost_usd is None


def test_a_budget_stops_the_run_before_a_call_it_cannot_pay_for(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=2)  # 6 matches at about $0.53 each, a call reserving about $0.8
    budget = 2.5
    tid = start(db, env, judge=PRICED, budget=budget)
    view = work(env, db, tid)
    assert (view.status, view.stopped_reason, view.budget) == ("cancelled", "budget", budget)
    done = view.matches_done
    assert 1 <= done < 6 and view.matches_cancelled == 6 - done and view.matches_failed == 0
    assert fake.replies in (2 * done, 2 * done + 1)  # a match may have paid for one order before the stop
    paid = assert_calls_fit(fake, budget, PER_MTOK)  # spend was reserved before every call
    assert view.spent_usd == pytest.approx(paid) == pytest.approx(billed(fake))
    # stopped because the next call's reservation did not fit, not earlier
    largest = max(r.input_tokens for r in fake.received) + 512 + 8
    assert budget - paid < largest * PER_MTOK / 1e6


def test_reused_judgements_cost_a_budget_nothing(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db, questions=1)
    first = work(env, db, start(db, env, judge=PRICED))
    assert first.spent_usd == pytest.approx(billed(fake)) and fake.replies == 6
    paid = fake.requests
    again = work(env, db, start(db, env, judge=PRICED, budget=1e-9))
    assert (again.status, again.matches_done, again.spent_usd, again.stopped_reason) == ("done", 3, 0.0, None)
    assert fake.requests == paid


def test_a_budget_on_a_judge_without_a_price_is_stopped_before_any_call(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    submit(db, questions=1)
    view = work(env, db, start(db, env, judge=UNPRICED, budget=5.0))
    assert (view.status, view.stopped_reason, view.matches_cancelled) == ("cancelled", "unpriced", 3)
    assert fake.requests == 0


@pytest.fixture
def client(env: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(env.with_(api_key="k", queue_name="joust-budget-test"))) as client:
        yield client


@pytest.mark.parametrize(
    ("body", "words"),
    [({"budget": 0}, "budget: Input should be greater than 0"), ({"budget": -1.5}, "greater than 0"),
     ({"budget": "1"}, "budget: Input should be a valid number"), ({"budget": True}, "valid number"),
     ({"budget": 1, "judge": UNPRICED}, "budget: the judge 'anthropic/unpriced-judge' has no price")],
)
def test_the_api_refuses_a_budget_it_cannot_keep(client: TestClient, body: dict, words: str) -> None:
    response = client.post("/api/tournaments", json=body, headers={"Authorization": "Bearer k"})
    assert response.status_code == 422 and words in response.json()["error"], response.text
    assert client.get("/api/tournaments").json()["tournaments"] == []


def test_the_api_stores_the_budget(client: TestClient) -> None:
    response = client.post("/api/tournaments", json={"budget": 2.5, "judge": PRICED}, headers={"Authorization": "Bearer k"})
    assert response.status_code == 202
    view = client.get(f"/api/tournaments/{response.json()['id']}").json()
    assert (view["budget"], view["spec"]["budget"], view["spent_usd"], view["stopped_reason"]) == (2.5, 2.5, 0.0, None)
