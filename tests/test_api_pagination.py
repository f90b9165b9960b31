"""The list routes page: `limit` rows from `offset` (default 1000, at most 10,000), a `next` URL
(and `Link: <...>; rel="next"`) while rows remain and null on the last page; following `next`
from the first page yields every row once, in order, filters kept. A bad `limit` is a 422 that
names it. On SQLite and PostgreSQL, over stores larger than a page."""
from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from rq import Queue

from service.store import NewSubmission
from tests.api_fixtures import API_KEY, store_of
from tests.test_api_leaderboard import by_strength, start, submit, work

AUTH = {"Authorization": f"Bearer {API_KEY}"}


def pages(client: TestClient, url: str, key: str, **params: Any) -> list[dict]:
    """Every page from `url`, following `next` as given; each page's body."""
    bodies = []
    response = client.get(url, params=params)
    while True:
        assert response.status_code == 200, response.text
        body = response.json()
        bodies.append(body)
        if body["next"] is None:
            assert "Link" not in response.headers
            return bodies
        assert response.headers["Link"] == f'<{body["next"]}>; rel="next"'
        assert len(body[key]) == params.get("limit", 1000), "a page before the last is full"
        response = client.get(body["next"])


def rows(bodies: list[dict], key: str) -> list[dict]:
    return [row for body in bodies for row in body[key]]


def test_submissions_page_by_default_a_thousand_at_a_time(client: TestClient) -> None:
    store = store_of(client)
    store.add_submissions([NewSubmission(question_id=f"q{i}", question=f"question {i}", model="m", scenario="s",
                                         output=f"answer {i}", metadata={}) for i in range(1001)])
    everything = [row.as_json() for row in store.list_submissions(limit=2000)]
    bodies = pages(client, "/api/submissions", "submissions")
    assert [len(b["submissions"]) for b in bodies] == [1000, 1]
    assert "offset=1000" in bodies[0]["next"] and "limit=1000" in bodies[0]["next"]
    assert rows(bodies, "submissions") == everything
    whole = client.get("/api/submissions", params={"limit": 10_000}).json()
    assert whole["submissions"] == everything and whole["next"] is None


def test_the_pages_of_a_filtered_list_are_the_filtered_list(client: TestClient) -> None:
    submit(client, [f"q{i}" for i in range(5)], [("a", "plain"), ("b", "plain"), ("b", "fancy")])
    for params, count in (({}, 15), ({"model": "b"}, 10), ({"model": "b", "scenario": "fancy"}, 5)):
        for limit in (1, 3, 4, 15):
            bodies = pages(client, "/api/submissions", "submissions", **params, limit=limit)
            listed = rows(bodies, "submissions")
            assert len(bodies) == -(-count // limit) and len(listed) == count
            assert listed == client.get("/api/submissions", params=params).json()["submissions"]
            assert all(all(row[k] == v for k, v in params.items()) for row in listed)
    ids = [r["id"] for r in client.get("/api/submissions").json()["submissions"]]
    last = client.get("/api/submissions", params={"limit": 4, "offset": 12}).json()
    assert [r["id"] for r in last["submissions"]] == ids[12:] and last["next"] is None


def test_tournaments_page_newest_first(client: TestClient) -> None:
    submit(client, ["q1"], [("a", "plain"), ("b", "plain")])
    ids = [start(client, name=f"run {i}") for i in range(5)]
    bodies = pages(client, "/api/tournaments", "tournaments", limit=2)
    newest = ids[::-1]
    assert [[t["id"] for t in b["tournaments"]] for b in bodies] == [newest[:2], newest[2:4], newest[4:]]


def test_a_tournaments_judgements_page(client: TestClient, queue: Queue) -> None:
    submit(client, ["q1", "q2"], [("a", "plain"), ("b", "plain"), ("b", "fancy")])
    tid = start(client)
    assert work(client, queue, by_strength("a", "b")) == 6
    everything = client.get(f"/api/tournaments/{tid}/judgements").json()
    assert len(everything["judgements"]) == 6 and everything["next"] is None
    for limit in (1, 4, 5):
        bodies = pages(client, f"/api/tournaments/{tid}/judgements", "judgements", limit=limit)
        assert rows(bodies, "judgements") == everything["judgements"]
        assert {b["tournament"] for b in bodies} == {tid}
    past = client.get(f"/api/tournaments/{tid}/judgements", params={"offset": 6}).json()
    assert (past["judgements"], past["next"]) == ([], None)
    assert client.get("/api/tournaments/999/judgements", params={"limit": 1}).status_code == 404


@pytest.mark.parametrize("route", ["/api/submissions", "/api/tournaments", "/api/tournaments/{tid}/judgements"])
def test_a_bad_limit_is_refused_and_changes_nothing(client: TestClient, route: str) -> None:
    submit(client, ["q1"], [("a", "plain"), ("b", "plain")])
    url = route.format(tid=start(client))
    before = client.get(url).json()
    for limit in (0, -1, 10_001, "ten", ""):
        response = client.get(url, params={"limit": limit})
        assert response.status_code == 422, (limit, response.text)
        assert response.json()["error"].startswith("query parameter limit: ")
        assert response.json()["details"][0]["path"] == "query parameter limit"
    assert client.get(url).json() == before
    assert client.get(url, params={"limit": 10_000}).status_code == 200
