"""Adaptive tournaments end to end: POST /api/tournaments, real RQ burst workers, real Redis, a
real SQLite file, the fake Messages API with planted strengths, and scheduler ticks planning
each round (two schedulers, each round claimed once)."""
from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from collections.abc import Iterator
from itertools import combinations

import pytest
from fastapi.testclient import TestClient
from redis import Redis

from service.config import Settings
from service.ops.scheduler import Scheduler
from service.store import NewSubmission, Store
from service.store.queue import JobQueue
from service.store.tournament_rows import Tournament
from service.usecases.rounds import advance
from service.usecases.tournaments import hand_out
from service.web.app import create_app
from tests.fake_anthropic import FakeAnthropic
from tests.fake_policies import Decide, block, verdict_json
from tests.worker_fixtures import work  # db, env: fixtures of tests/conftest.py
from workers.prompts import RESPONSE_A_TAG, RESPONSE_B_TAG

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
JUDGE = "anthropic/fake-judge"
MODELS = [f"m{i}" for i in range(8)]
STRENGTH = {m: 100.0 * (len(MODELS) - i) for i, m in enumerate(MODELS)}  # m0 best, 100 Elo apart
QUESTIONS = 8
ROUND_ROBIN = QUESTIONS * len(list(combinations(MODELS, 2)))


def planted(strength: dict[str, float]) -> Decide:
    """The better model wins with its Elo probability; the draw is fixed per pair of outputs, so
    both presentation orders agree and a re-judged pair would get the same verdict."""

    def decide(system: str, users: list[str]) -> str:
        first, second = block(users[0], RESPONSE_A_TAG), block(users[0], RESPONSE_B_TAG)
        if first is None or second is None:
            return "no responses"
        x, y = sorted((first, second))
        mx, my = (re.search(r"\[(\w+)\]", t).group(1) for t in (x, y))  # type: ignore[union-attr]
        u = int(hashlib.sha256(f"{x}|{y}".encode()).hexdigest()[:8], 16) / 2**32
        winner = x if u < 1 / (1 + 10 ** ((strength[my] - strength[mx]) / 400)) else y
        return verdict_json("A" if winner == first else "B", "It is better.")

    return decide


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(planted(STRENGTH)) as server:
        yield server


@pytest.fixture
def client(env: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(dataclasses.replace(env, api_key=KEY))) as client:
        yield client


def submit(store: Store, questions: int = QUESTIONS) -> None:
    store.add_submissions(
        [NewSubmission(question_id=f"q{q}", question=f"Question {q}?", model=m, scenario="default",
                       output=f"[{m}] answer to {q}") for q in range(questions) for m in MODELS]
    )


def schedulers(env: Settings, store: Store) -> tuple[Scheduler, Scheduler]:
    def one(st: Store) -> Scheduler:
        return Scheduler(st, JobQueue(Redis.from_url(env.redis_url), env.queue_name, 60), env)

    return one(store), one(Store(store.url))


def post(client: TestClient, **body: object) -> int:
    response = client.post("/api/tournaments", json={"judge": JUDGE, **body}, headers=AUTH)
    assert response.status_code == 202, response.text
    return int(response.json()["id"])


def play(env: Settings, store: Store, tid: int, *, race: bool, rounds: int = 40) -> tuple[Tournament, list[int]]:
    """Judge each round with a burst worker, then let two schedulers plan the next one: with
    `race`, both read the finished round before either plans; otherwise each ticks in turn.
    The final view and each round's size."""
    one, two = schedulers(env, store)
    sizes = [store.get_tournament(tid).matches_total]
    try:
        for _ in range(rounds):
            work(env, store, tid)
            if race:
                due = [sch.store.rounds_due() for sch in (one, two)]
                planned = [advance(sch.store, d.id, d.spec, d.rounds)
                           for sch, found in zip((one, two), due) for d in found if d.id == tid]
                assert sum(p is not None for p in planned) <= 1, "a round was planned twice"
                for p in planned:
                    if p is not None:
                        hand_out(store, one.queue, p)
            else:
                now = time.time()
                assert len(one.tick(now).rounds + two.tick(now).rounds) <= 1, "a round was planned twice"
            view = store.get_tournament(tid)
            if view.status not in ("queued", "running"):
                return view, sizes
            sizes.append(view.matches_total - sum(sizes))
    finally:
        two.store.close()
    raise AssertionError(f"tournament {tid} did not stop: {store.get_tournament(tid)}")


def test_adaptive_stops_at_its_target_with_fewer_judgements_than_round_robin(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    submit(db)
    cached = post(client, mode="round_robin", questions=["q0"])  # judged before: never paid again
    work(env, db, cached)
    cached_pairs = db.tournament_pairs(cached)
    before = fake.requests
    dry = client.post("/api/tournaments?dry_run=true", headers=AUTH,
                      json={"judge": JUDGE, "mode": "adaptive", "round_size": 20, "target_ci_width": 400.0})
    assert (dry.status_code, dry.json()["matches"], dry.json()["calls"]) == (200, 20, 40)  # the first round
    tid = post(client, mode="adaptive", round_size=20, target_ci_width=400.0)
    assert db.get_tournament(tid).matches_total == 20
    view, sizes = play(env, db, tid, race=True)
    assert (view.status, view.stopped_reason) == ("done", "ci_width")
    made = db.judgements_made(tid)
    assert made == view.matches_total == view.matches_done  # every match paid once
    assert fake.requests - before == 2 * made  # order both: two calls per new judgement, nothing else
    assert made + len(cached_pairs) < ROUND_ROBIN
    assert not db.tournament_pairs(tid) & cached_pairs
    assert all(0 < size <= 20 for size in sizes) and view.rounds == len(sizes) + 1
    board = client.get(f"/api/leaderboard?tournament={tid}").json()
    order = [r["player"] for r in board["rows"]]
    assert "m0" in order[:2] and "m7" in order[-2:]  # the planted best and worst, near their places


def test_max_calls_caps_what_an_adaptive_run_spends(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    submit(db)
    tid = post(client, mode="adaptive", round_size=8, max_calls=30)
    view, sizes = play(env, db, tid, race=False)
    assert (view.status, view.stopped_reason) == ("done", "max_calls")
    assert fake.requests == 2 * db.judgements_made(tid) == 30
    assert sizes == [8, 7]  # the last round only as large as the calls left allow


def test_an_adaptive_run_with_nothing_left_to_judge_is_done_at_once(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    submit(db, questions=1)
    work(env, db, post(client, mode="round_robin"))
    tid = post(client, mode="adaptive")
    view = db.get_tournament(tid)
    assert (view.status, view.stopped_reason, view.matches_total) == ("done", "exhausted", 0)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"mode": "round_robin", "max_calls": 5}, "max_calls: only for mode 'adaptive'"),
        ({"mode": "adaptive", "anchors": ["a", "b", "c"]}, "anchors: only for mode 'anchored'"),
        ({"mode": "adaptive", "level": "team"}, "level"),
        ({"mode": "adaptive", "round_size": 0}, "round_size"),
        ({"mode": "anchored"}, "anchors: required"),
        ({"mode": "anchored", "anchors": ["a", "b"]}, "anchors"),
    ],
)
def test_invalid_adaptive_and_anchored_requests(client: TestClient, body: dict, words: str) -> None:
    response = client.post("/api/tournaments", json=body, headers=AUTH)
    assert response.status_code == 422, response.text
    assert words in response.json()["error"]


def test_anchored_entrants_meet_three_anchors_held_at_their_ratings(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    submit(db, questions=4)
    anchors = ["m0", "m2", "m4", "m6"]
    refused = client.post("/api/tournaments", json={"judge": JUDGE, "mode": "anchored", "anchors": anchors},
                          headers=AUTH)
    assert refused.status_code == 422 and "no battles" in refused.json()["error"]  # nothing judged yet
    work(env, db, post(client, mode="round_robin", models=anchors))
    before = {r["player"]: r["rating"] for r in client.get(f"/api/leaderboard?judge={JUDGE}").json()["rows"]}
    tid = post(client, mode="anchored", anchors=anchors)
    spec = db.get_tournament(tid).spec
    assert spec.anchor_ratings == pytest.approx({a: before[a] for a in anchors})
    by_id = {s.id: s.model for s in db.select_submissions()}
    met: dict[str, set[str]] = {}
    for a, b in db.tournament_pairs(tid):
        entrant, anchor = sorted((by_id[a], by_id[b]), key=lambda m: m in anchors)
        assert anchor in anchors and entrant not in anchors
        met.setdefault(entrant, set()).add(anchor)
    assert {e: len(m) >= 3 for e, m in met.items()} == {e: True for e in ["m1", "m3", "m5", "m7"]}
    assert work(env, db, tid).status == "done"
    rows = {r["player"]: r for r in client.get(f"/api/leaderboard?tournament={tid}").json()["rows"]}
    assert {a: rows[a]["rating"] for a in anchors} == pytest.approx(spec.anchor_ratings, abs=1e-9)
    free = {r["player"]: r["rating"] for r in client.get(f"/api/leaderboard?judge={JUDGE}").json()["rows"]}
    assert free["m0"] != pytest.approx(spec.anchor_ratings["m0"], abs=1e-6)  # a free board moved
    assert set(rows) == set(MODELS) and rows["m1"]["ci_low"] < rows["m1"]["rating"] < rows["m1"]["ci_high"]
    refused = client.get(f"/api/leaderboard?tournament={tid}&intervals=bootstrap")  # its intervals are the anchored fit's
    assert refused.status_code == 422 and "anchored" in refused.json()["error"]


def test_every_finished_scheduled_run_snapshots_the_board_once(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    db.add_submissions([NewSubmission(question_id="q0", question="Question 0?", model=m, scenario="default",
                                      output=f"[{m}] answer to 0") for m in MODELS[:3]])
    response = client.post("/api/tournaments", headers=AUTH,
                           json={"judge": JUDGE, "name": "nightly", "schedule": "0 3 * * *", "delivery": "live"})
    parent = int(response.json()["id"])
    one, two = schedulers(env, db)
    assert one.tick(time.time()).snapshots == []  # the first run is still being judged
    work(env, db, parent)
    now = time.time()
    assert one.tick(now).snapshots == [parent] and two.tick(now).snapshots == []
    db.add_submissions([NewSubmission(question_id="q0", question="Question 0?", model="m3", scenario="default",
                                      output="[m3] answer to 0")])
    due = db.get_tournament(parent).next_run_at
    [run] = one.tick(due + 60).started
    work(env, db, run)
    assert two.tick(due + 120).snapshots == [run] and one.tick(due + 120).snapshots == []
    history = client.get(f"/api/leaderboard/history?tournament={parent}&by=model").json()
    assert [s["run"] for s in history["snapshots"]] == [parent, run]
    first, second = ([r["player"] for r in s["rows"]] for s in history["snapshots"])
    assert sorted(first) == ["m0", "m1", "m2"] and sorted(second) == ["m0", "m1", "m2", "m3"]
    assert set(history["snapshots"][1]["rows"][0]) == {"player", "rating", "ci_low", "ci_high"}
    assert client.get("/api/leaderboard/history?tournament=999").status_code == 404
    page = client.get("/").text
    assert f"History of nightly (#{parent}): rating by run (2 runs)" in page
    assert page.count("<polyline") == 4 and ">m3</text>" in page  # one line per player
    two.store.close()


@pytest.mark.parametrize("env_vars", [{"JOUST_STOP_AFTER_FAILURES": "6"}])
def test_an_adaptive_run_whose_judge_keeps_failing_stops_instead_of_planning_round_after_round(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    fake.api_key = "the-real-key"  # every call is a 401: no round can ever succeed
    submit(db)
    tid = post(client, mode="adaptive", round_size=4)
    view, sizes = play(env, db, tid, race=False)
    assert (view.status, view.stopped_reason) == ("failed", "failing")
    assert len(sizes) == 2 and view.rounds == 2  # the streak of 6 ends it in its second round
    assert view.matches_failed >= 6 and fake.requests <= 2 * view.matches_total
    assert [d.id for d in db.rounds_due()] == []  # nothing left for a planner
