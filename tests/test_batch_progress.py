"""What a batch run's progress says, on the client's bar and the tournament's page: a batch run
has no live call rate (its answers land all at once when the provider ends a batch, which a
calls-per-minute figure would show as thousands), so both show the batches pending and their
requests instead. A real app and store (SQLite, then PostgreSQL), the real batch driver and the
real anthropic SDK against the fake Message Batches API, whose batches end when the test says."""
from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from joust.progress import usd
from service.config import Settings
from service.store import Store
from service.web.app import create_app
from tests.fake_anthropic import FakeAnthropic, prefer
from tests.test_batches import PRICED, drive
from tests.test_client import FakeTime, joust_client
from tests.test_page_tournaments import live, text_of
from tests.worker_fixtures import MODELS, start, submit

KEY = "batch-progress-key"


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    """The fake Messages API preferring MODELS, its batches ending only when a test says so."""
    with FakeAnthropic(prefer(MODELS), batch_delay_s=3600) as server:
        yield server


@pytest.fixture
def http(env: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(env.with_(api_key=KEY))) as client:
        yield client


def test_the_bar_of_a_batch_run_shows_batches_pending_not_a_call_rate(
        db: Store, env: Settings, fake: FakeAnthropic, http: TestClient) -> None:
    submit(db)  # 2 questions x 3 models: 6 matches
    tid = start(db, env, judge=PRICED, delivery="batch")

    def step(n: int) -> None:
        if n == 1:  # the driver sends both orders of the six pairs in one batch
            drive()
        elif n == 2:  # the provider ends it: every verdict lands in the same minute
            fake.end_batches()
            drive()

    drawn = io.StringIO()
    final = joust_client(http, fake_time=FakeTime(step)).wait(tid, progress=drawn, poll=30)
    assert (final.status.value, final.matches_done) == ("done", 6)
    shown = [line for line in drawn.getvalue().replace("\r", "\n").splitlines() if line.strip()]
    tails = list(dict.fromkeys(line.split("|")[-1].strip() for line in shown))
    assert tails == [
        "0/6, done 0, failed 0, left 6, no batch yet, $0.0000",
        "0/6, done 0, failed 0, left 6, 1 batch pending (12 requests at the provider), $0.0000",
        f"6/6, done 6, failed 0, left 0, 0 batches pending, {usd(final.spent_usd)}",
    ]
    assert final.extra["batches_pending"] == 0 and final.spent_usd > 0


def test_the_page_of_a_batch_run_shows_batches_pending_not_a_call_rate(
        db: Store, env: Settings, fake: FakeAnthropic, http: TestClient) -> None:
    submit(db)
    tid = start(db, env, judge=PRICED, delivery="batch")
    drive()
    progress = text_of(live(http.get(f"/tournaments/{tid}").text, "progress"))
    assert "judge calls a minute" not in progress
    assert ("A batch run has no live call rate: its verdicts arrive when the provider ends a batch; "
            "1 batch pending (12 requests at the provider).") in progress
    api = http.get(f"/api/tournaments/{tid}").json()  # the figures the page and the client read
    assert (api["batches_pending"], api["requests"]["submitted"], api["requests"]["pending"]) == (1, 12, 0)
    fake.end_batches()
    drive()
    progress = text_of(live(http.get(f"/tournaments/{tid}").text, "progress"))
    assert "Progress 6 / 6 matches judged." in progress and "judge calls a minute" not in progress
