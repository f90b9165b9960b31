"""GET /api/judges and the page share one judge-health cache that is never stale: real RQ workers
judge through the real anthropic SDK (against the fake Messages API), the app reads the same
SQLite file, human votes are imported into it, and what the database is asked is watched
through SQLAlchemy's own statement events on the app's engine.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from leaderboard.judge_health import judge_health
from leaderboard.types import Winner
from service.config import Settings
from service.store import NewSubmission, Store
from service.store.imports import ImportedJudgement
from service.store.tournament_rows import Tournament
from service.usecases.judge_health_cache import JudgeHealthCache
from tests.api_fixtures import app_state_of, store_of
from tests.fake_anthropic import FakeAnthropic
from tests.fake_policies import always, malformed, prefer
from tests.page_text import tables
from tests.worker_fixtures import MODELS, start, submit, work

KEY = "judges-cache-key"
FAIR, BIASED, BROKEN, PANEL = "anthropic/fair", "anthropic/biased", "anthropic/broken", "human/panel"
READS_CALLS = re.compile(r"\bjudgements\.calls\b")  # what a health computation reads of every judgement


@pytest.fixture
def api_settings(env: Settings) -> Settings:
    """The app on the workers' database and queue: what a worker resolves is what the API reads."""
    return env.with_(api_key=KEY)


def cache_of(client: TestClient) -> JudgeHealthCache:
    """The one judge-health cache of the app behind `client` (made by its first request)."""
    cache = app_state_of(client).judge_health
    assert isinstance(cache, JudgeHealthCache)
    return cache


def api(client: TestClient, judge: str | None = None) -> list[dict]:
    response = client.get("/api/judges", params={} if judge is None else {"judge": judge})
    assert response.status_code == 200, response.text
    return response.json()["judges"]


def from_scratch(store: Store) -> list[dict]:
    """Judge health computed anew from every stored judgement and parse failure."""
    return [asdict(h) for h in judge_health(store.health_records(), store.parse_failures())]


def page_calls(client: TestClient) -> dict[str, str]:
    """The calls column of the judges page's health tables, by judge."""
    response = client.get("/judges")
    assert response.status_code == 200, response.text
    found = tables(response.text)
    rows = found["LLM and imported judges"] + found.get("Human voters", [])
    return {row[0]: row[1] for row in rows if len(row) > 1}


def run(db: Store, env: Settings, judge: str, **spec: object) -> Tournament:
    """A round robin under `judge`, worked by real burst workers until settled; its view."""
    return work(env, db, start(db, env, judge=judge, **spec))


def vote(db: Store, key: str, winner: Winner, a: int, b: int) -> None:
    """Import one human vote on (a, b), shown with a first."""
    row = ImportedJudgement(key=key, a_id=a, b_id=b, outcome=winner, calls=[{"first": a, "winner": winner.value}])
    db.import_judgements(name=key, source="test", judge=PANEL, criteria="overall", rows=[row])


def newcomer(db: Store, question: int) -> None:
    """A fourth model's answer to one question of `submit`."""
    db.add_submissions([NewSubmission(question_id=f"q{question}", question=f"Question {question}?", model="new",
                                      scenario="default", output=f"[new] answer to {question}")])


@pytest.fixture
def judged(db: Store, env: Settings, fake: FakeAnthropic) -> dict[str, int]:
    """Three models on two questions judged by a fair judge (one reply needing the reminder), a
    judge that always picks the answer shown first, and one that never gives a readable verdict;
    two human votes on question 0. The submission ids of question 0 by model."""
    submit(db, questions=2)
    fake.queue_replies("No verdict here, sorry.")
    assert run(db, env, FAIR).matches_done == 6
    fake.decide = always("A")
    assert run(db, env, BIASED).matches_done == 6
    fake.decide = malformed()
    assert run(db, env, BROKEN).matches_failed == 6
    fake.decide = prefer(MODELS)
    ids = {s.model: s.id for s in db.list_submissions(question_id="q0")}
    vote(db, "v1", Winner.A, ids["good"], ids["mid"])
    vote(db, "v2", Winner.B, ids["good"], ids["bad"])  # against the fair judge
    return ids


@pytest.fixture
def statements(client: TestClient) -> Iterator[list[str]]:
    """Every SQL statement the app's engine runs from now on (after the app's warm-up)."""
    seen: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append(statement)

    engine = store_of(client).engine
    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def test_the_api_answers_what_a_computation_from_scratch_gives(client: TestClient, db: Store,
                                                               judged: dict[str, int]) -> None:
    everything = from_scratch(db)
    assert [h["judge"] for h in everything] == [BIASED, BROKEN, FAIR, PANEL]
    assert api(client) == everything
    by_name = {h["judge"]: h for h in everything}
    assert by_name[BIASED]["first_position_win_rate"] == 1.0 and by_name[BIASED]["consistency"] == 0.0
    assert by_name[BROKEN]["parse_failure_rate"] == 1.0 and by_name[BROKEN]["calls"] == 0
    assert by_name[FAIR]["parse_failure_rate"] == pytest.approx(1 / 12)
    assert (by_name[FAIR]["human_agreement"], by_name[FAIR]["human_votes"]) == (0.5, 2)
    # one judge: the figures the old per-request path (the store's filtered read) computed
    for name in [*by_name, "anthropic/nobody"]:
        assert api(client, name) == [asdict(h) for h in db.judge_health(name)]
    assert api(client, "anthropic/nobody") == []


def test_what_lands_after_a_request_shows_on_the_next(client: TestClient, db: Store, env: Settings,
                                                      fake: FakeAnthropic, judged: dict[str, int]) -> None:
    before = {h["judge"]: h for h in api(client)}
    cache = cache_of(client)
    computed = cache.computations

    # a judgement a worker resolves: a new model answers question 0
    newcomer(db, 0)
    run(db, env, FAIR, models=["good", "new"])
    after = {h["judge"]: h for h in api(client)}
    assert after[FAIR]["judgements"] == before[FAIR]["judgements"] + 1
    assert after[FAIR]["calls"] == before[FAIR]["calls"] + 2
    assert api(client) == from_scratch(db) and cache.computations == computed + 1
    assert page_calls(client)[FAIR] == str(after[FAIR]["calls"]) and cache.computations == computed + 1

    # a human vote, imported: the fair judge's agreement moves
    vote(db, "v3", Winner.B, judged["good"], judged["mid"])
    assert api(client, FAIR)[0]["human_votes"] == 3 and api(client) == from_scratch(db)

    # a match failed with an unreadable verdict resolves nothing (the revision stays) yet counts
    revision = db.revision()
    fake.decide = malformed()
    assert run(db, env, FAIR, models=["mid", "new"]).matches_failed == 1
    assert db.revision() == revision
    rate = api(client, FAIR)[0]["parse_failure_rate"]
    assert rate == pytest.approx((1 + 1) / (after[FAIR]["calls"] + 1)) and api(client) == from_scratch(db)


def test_requests_at_one_revision_share_one_computation_and_read_no_judgement(
    client: TestClient, db: Store, env: Settings, fake: FakeAnthropic, judged: dict[str, int],
    statements: list[str],
) -> None:
    api(client)
    cache = cache_of(client)
    assert cache.computations == 1
    assert any(READS_CALLS.search(s) for s in statements)  # the one computation read them

    statements.clear()
    for judge in (None, FAIR, PANEL, None):
        api(client, judge)
    page_calls(client)
    assert cache.computations == 1
    assert not [s for s in statements if READS_CALLS.search(s)]

    # a new judgement: one computation serves the API and then the page
    newcomer(db, 1)
    run(db, env, FAIR, models=["bad", "new"])
    statements.clear()
    fresh = api(client)
    assert page_calls(client)[FAIR] == str({h["judge"]: h for h in fresh}[FAIR]["calls"])
    api(client, FAIR)
    assert cache.computations == 2
    assert sum(bool(READS_CALLS.search(s)) for s in statements) == 1


def many_judgements(db: Store, models: int = 100) -> None:
    """An imported judge's verdict on every ordered pair of `models` answers to one question
    (9,900 for 100): a computation over them takes a tenth of a second or more, many times
    what releasing the waiting threads takes, so one is still running when the others arrive
    (more only makes the import slower: 150 models took seconds)."""
    created = db.add_submissions_bulk([NewSubmission(question_id="bulk", question="Bulk?", model=f"m{i}",
                                                     scenario="default", output="x" * i) for i in range(models)])
    ids = [sid for sid, _ in created]
    rows = [ImportedJudgement(key=f"bulk-{a}-{b}", a_id=a, b_id=b, outcome=Winner.A if a < b else Winner.B,
                              calls=[{"first": a, "winner": "A" if a < b else "B"}])
            for a in ids for b in ids if a != b]
    db.import_judgements(name="bulk", source="test", judge="import/bulk", criteria="overall", rows=rows)


def test_requests_arriving_together_at_a_new_revision_wait_for_one_computation(
    client: TestClient, db: Store, judged: dict[str, int]
) -> None:
    api(client)
    cache = cache_of(client)
    many_judgements(db)
    gate = threading.Barrier(8)

    def together(_: int) -> list:
        gate.wait()
        return cache.current().of()

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(together, range(8)))
    assert cache.computations == 2
    assert all(a == answers[0] for a in answers)
    assert [asdict(h) for h in answers[0]] == from_scratch(db)


def test_a_new_lifespan_gets_a_cache_on_its_own_store(client: TestClient, judged: dict[str, int]) -> None:
    api(client)
    first = cache_of(client)
    client.__exit__(None, None, None)
    client.__enter__()
    assert api(client) == from_scratch(store_of(client))
    assert cache_of(client) is not first and cache_of(client).store is store_of(client)
