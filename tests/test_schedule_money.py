"""A recurring tournament's money and its stop, on the API, the client, the CLI and the pages,
over a real app and store (SQLite, then PostgreSQL), the real Redis queue and the real
scheduler's tick; matches are judged with the store calls a worker makes, at $0.25 each.

A schedule's own figure (`spent_usd`, what its first run's matches cost, which its budget caps)
is kept apart from what the runs it started spent (`runs_spent_usd`), and both add up to
`total_spent_usd`. Cancelling a schedule stops it and the runs it has in flight, and the answer
says so (`stopped`), even when its own first run had long finished (status `done`)."""
from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from rq import Queue

from joust import Client
from service.cli import main
from service.config import Settings
from service.ops.scheduler import Scheduler
from service.store import Store
from tests.api_fixtures import app_state_of, store_of
from tests.serving import serving
from tests.test_page_tournaments import AUTH, KEY, QUEUE, create, get, judge, list_rows, live, submit, text_of

CRON = "0 3 * * *"


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(api_key=KEY, queue_name=QUEUE)


def next_run(client: TestClient, queue: Queue, api_settings: Settings, parent: int) -> tuple[int, list[int]]:
    """The scheduler's tick at the parent's next due time: the run it started and its matches."""
    store = store_of(client)
    scheduler = Scheduler(store, app_state_of(client).queue, api_settings)
    (run,) = scheduler.tick(store.get_tournament(parent).next_run_at).started
    matches = [job.args[0] for job in queue.get_jobs()]
    queue.empty()  # the store calls play the worker
    return run, matches


def spend(view: dict) -> tuple[float, float, float]:
    return view["spent_usd"], view["runs_spent_usd"], view["total_spent_usd"]


def test_a_schedules_spend_rolls_up_its_runs_on_every_surface(
        client: TestClient, queue: Queue, api_settings: Settings, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    store: Store = store_of(client)
    submit(client)  # a, b, c: three pairs a run
    parent, matches = create(client, queue, name="nightly", schedule=CRON)
    judge(store, matches[0])  # its own first run: $0.25
    first, matches = next_run(client, queue, api_settings, parent)
    judge(store, matches[0])
    judge(store, matches[1])  # $0.50
    second, matches = next_run(client, queue, api_settings, parent)
    judge(store, matches[0])  # $0.25, two matches still in flight

    assert spend(client.get(f"/api/tournaments/{parent}").json()) == pytest.approx((0.25, 0.75, 1.0))
    assert spend(client.get(f"/api/tournaments/{first}").json()) == pytest.approx((0.5, 0.0, 0.5))
    listed = {t["id"]: t for t in client.get("/api/tournaments").json()["tournaments"]}
    assert spend(listed[parent]) == pytest.approx((0.25, 0.75, 1.0))
    assert spend(listed[second]) == pytest.approx((0.25, 0.0, 0.25))

    joust = Client("http://testserver", KEY, http=client)
    status = joust.status(parent)
    assert (status.spent_usd, status.runs_spent_usd, status.total_spent_usd) == pytest.approx((0.25, 0.75, 1.0))
    assert {t.id: t.total_spent_usd for t in joust.tournaments()} == pytest.approx(
        {parent: 1.0, first: 0.5, second: 0.25})

    with serving(api_settings) as url:
        monkeypatch.setenv("JOUST_URL", url)
        capsys.readouterr()
        assert main(["tournament", "list", "--format", "json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert (rows[parent]["spent_usd"], rows[parent]["total_spent_usd"]) == pytest.approx((0.25, 1.0))

    page = text_of(live(get(client, f"/tournaments/{parent}"), "spend"))
    assert page.startswith("Spend $0.2500 (no budget).")
    assert "With its 2 runs: $1.00 in all ($0.2500 by its own matches, $0.7500 by its runs)." in page
    assert "With its" not in text_of(live(get(client, f"/tournaments/{first}"), "spend"))
    row = next(r for r in list_rows(get(client, "/tournaments")) if r[0] == str(parent))
    assert row[7] == "$0.2500 (no budget) · $1.00 with its runs"


def test_cancelling_a_schedule_says_it_stopped_and_stops_its_run_in_flight(
        client: TestClient, queue: Queue, api_settings: Settings, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    store: Store = store_of(client)
    submit(client)
    parents = []
    for name in ("nightly", "weekly"):
        parent, matches = create(client, queue, name=name, schedule=CRON)
        for match in matches:
            judge(store, match)  # its own first run is done
        run, matches = next_run(client, queue, api_settings, parent)
        judge(store, matches[0])  # the night's run is in flight: one judged, two to go
        parents.append((parent, run))
    (nightly, nightly_run), (weekly, weekly_run) = parents

    # the CLI: what stopped, as JSON on stdout and in words on stderr
    with serving(api_settings) as url:
        monkeypatch.setenv("JOUST_URL", url)
        monkeypatch.setenv("JOUST_API_KEY", KEY)
        capsys.readouterr()
        assert main(["tournament", "cancel", str(nightly)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"id": nightly, "status": "done", "matches_done": 3, "matches_cancelled": 0,
                               "stopped": {"schedule": True, "runs": [nightly_run], "matches": 2}}
    assert err == (f"joust tournament cancel: tournament {nightly}: its schedule ({CRON}) is stopped, no more runs "
                   f"will start; run {nightly_run} is cancelled; 2 unjudged matches are cancelled\n")
    run = client.get(f"/api/tournaments/{nightly_run}").json()
    assert (run["status"], run["matches_done"], run["matches_cancelled"]) == ("cancelled", 1, 2)
    assert client.get(f"/api/tournaments/{nightly}").json()["next_run_at"] is None

    # the client: the same answer, kept in `extra`
    stopped = Client("http://testserver", KEY, http=client).cancel(weekly)
    assert stopped.status.value == "done"
    assert stopped.extra["stopped"] == {"schedule": True, "runs": [weekly_run], "matches": 2}
    # the API: cancelling again stops nothing, and says so
    again = client.post(f"/api/tournaments/{weekly}/cancel", headers=AUTH)
    assert again.status_code == 200 and again.json()["stopped"] == {"schedule": False, "runs": [], "matches": 0}

    # the pages: the schedule reads stopped on its page and in the list
    assert f"Schedule {CRON} (UTC), stopped" in text_of(live(get(client, f"/tournaments/{nightly}"), "status"))
    row = next(r for r in list_rows(get(client, "/tournaments")) if r[0] == str(nightly))
    assert row[8] == f"{CRON} stopped"
