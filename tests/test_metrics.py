"""GET /metrics over the real app, after a real worker judged a tournament against the fake
Messages API (which answered some calls 429): every figure is checked against what happened,
as the fake and the store saw it."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from service.config import Settings
from service.store import Store
from service.web.app import create_app
from tests.fake_wire import Failure
from tests.worker_fixtures import start, submit, work

JUDGE = "anthropic/fake-judge"
KEY = "metrics-admin"
Samples = dict[tuple[str, frozenset], float]


def scrape(client: TestClient) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    found: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


@pytest.fixture
def api(env: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(env.with_(api_key=KEY))) as client:
        yield client


def test_metrics_count_what_the_worker_and_the_fake_saw(api: TestClient, db: Store, env: Settings,
                                                         fake, caplog: pytest.LogCaptureFixture) -> None:
    submit(db, questions=2)  # 3 models x 2 questions: 6 round-robin matches, 12 calls in both orders
    tid = start(db, env, judge=JUDGE)
    before = scrape(api)
    assert value(before, "joust_queue_jobs", queue=env.queue_name, state="queued") == 6
    assert value(before, "joust_queue_oldest_job_age_seconds", queue=env.queue_name) >= 0
    assert value(before, "joust_matches", status="queued") == 6

    fake.fail(Failure(429, 0.05), Failure(429, 0.05))  # the first two calls are refused
    view = work(env, db, tid)
    assert view.matches_done == 6

    after = scrape(api)
    live = [r for r in fake.received if r.batch_id is None]
    refused = sum(r.status == 429 for r in live)
    answered = [r for r in live if r.delivered]
    assert refused == 2 and len(answered) == 12
    assert value(after, "joust_matches", status="done") == 6
    assert value(after, "joust_queue_jobs", queue=env.queue_name, state="queued") == 0
    assert value(after, "joust_queue_oldest_job_age_seconds", queue=env.queue_name) == 0
    assert value(after, "joust_judge_calls_total", judge=JUDGE, result="ok") == len(answered)
    assert value(after, "joust_judge_calls_total", judge=JUDGE, result="rate_limited") == refused
    assert value(after, "joust_judge_calls_total", judge=JUDGE, result="error") == 0
    assert value(after, "joust_judge_retries_total", judge=JUDGE) == refused  # each refused call sent again
    assert value(after, "joust_judge_call_seconds_count", judge=JUDGE) == len(answered)
    assert value(after, "joust_judge_call_seconds_bucket", judge=JUDGE, le="+Inf") == len(answered)
    assert value(after, "joust_judgements_total", judge=JUDGE) == 6
    assert value(after, "joust_judge_tokens_total", judge=JUDGE, direction="input") == \
        sum(r.input_tokens for r in answered)
    assert value(after, "joust_judge_tokens_total", judge=JUDGE, direction="output") == \
        sum(r.output_tokens for r in answered)
    assert value(after, "joust_judge_spent_usd_total", judge=JUDGE) == pytest.approx(view.spent_usd)
    assert value(after, "joust_tournaments", status="done") == 1

    # Incremental totals: judgements stored after a scrape are added, none counted twice.
    submit(db, questions=3)  # one more question: 3 more matches
    tid2 = start(db, env, judge=JUDGE)
    work(env, db, tid2)
    again = scrape(api)
    assert value(again, "joust_judgements_total", judge=JUDGE) == 9
    answered = [r for r in fake.received if r.batch_id is None and r.delivered]
    assert value(again, "joust_judge_tokens_total", judge=JUDGE, direction="input") == \
        sum(r.input_tokens for r in answered)


def test_http_requests_are_counted_by_route_template_and_status(api: TestClient, db: Store, env: Settings) -> None:
    submit(db, questions=1)
    tid = start(db, env, judge=JUDGE)
    for _ in range(3):
        assert api.get(f"/api/tournaments/{tid}").status_code == 200
    assert api.get("/api/tournaments/999999").status_code == 404
    assert api.get("/no/such/page").status_code == 404
    assert api.post("/api/submissions", json={}).status_code == 401
    assert api.get("/api/leaderboard").status_code == 200
    samples = scrape(api)
    route = "/api/tournaments/{tournament_id}"
    assert value(samples, "joust_http_requests_total", method="GET", route=route, status="200") == 3
    assert value(samples, "joust_http_requests_total", method="GET", route=route, status="404") == 1
    assert value(samples, "joust_http_requests_total", method="GET", route="unmatched", status="404") == 1
    assert value(samples, "joust_http_requests_total", method="POST", route="/api/submissions", status="401") == 1
    assert value(samples, "joust_http_request_seconds_count", method="GET", route=route) == 4
    boards = sum(v for (name, labels), v in samples.items()
                 if name == "joust_board_seconds_count" and ("what", "board") in labels)
    assert boards >= 1
    assert not any("999999" in dict(labels).get("route", "") for _, labels in samples)
