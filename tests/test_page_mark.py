"""The pages' mark (`Store.page_mark`, GET /api/revision) moves with every kind of change a page
shows, on SQLite and PostgreSQL, and reading it (or anything else) moves nothing."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, update

from leaderboard.spec import RunSpec
from leaderboard.types import Pair, Submission, Winner
from leaderboard.votes import Verdict, Vote
from service.store import Store
from service.store import schema as s
from service.store.base import COUNTER_MAX
from service.store.imports import ImportedJudgement, NewScore
from tests.api_fixtures import API_KEY, store_of
from tests.test_store_postgres import JUDGE, new_judgement, sub

AUTH = {"Authorization": f"Bearer {API_KEY}"}


@dataclass
class Scene:
    """Three answers to one question, and a scheduled tournament of two pending matches between them."""

    store: Store
    ids: tuple[int, int, int]
    tournament: int
    matches: tuple[int, int]

    def submission(self, index: int) -> Submission:
        [found] = [x for x in self.store.list_submissions() if x.id == self.ids[index]]
        return Submission(id=found.id, question_id=found.question_id, question=found.question,
                          model=found.model, scenario=found.scenario, output=found.output)

    def resolve(self, match: int, key: str) -> int:
        a, b = self.ids[0], self.ids[1 + self.matches.index(match)]
        jid, _ = self.store.save_judgement(new_judgement(a, b, key, "a", match_id=match))
        assert self.store.resolve_match(match, jid, Winner.A, True)
        return jid

    def fail_all(self) -> None:
        for match in self.matches:
            self.store.fail_match(match, "VerdictParseError: no verdict", final=True)


@pytest.fixture
def scene(store: Store) -> Scene:
    (a, _), (b, _), (c, _) = store.add_submissions([sub("q1", "m1", "a"), sub("q1", "m2", "b"),
                                                     sub("q1", "m3", "c")])
    tid = store.create_tournament("t", RunSpec(judge=JUDGE), [Pair(a, b), Pair(a, c)], schedule="0 * * * *",
                                  next_run_at=1.0)
    m1, m2 = store.pending_matches(tid)
    return Scene(store, (a, b, c), tid, (m1, m2))


def vote(scene: Scene) -> None:
    a, b = scene.submission(0), scene.submission(1)
    scene.store.add_votes([Vote(voter="alice", a=a, b=b, verdict=Verdict.A)])


def retry(scene: Scene) -> None:
    scene.fail_all()
    scene.store.retry_failed(scene.tournament)


CHANGES: dict[str, Callable[[Scene], object]] = {
    "a judgement resolved": lambda x: x.resolve(x.matches[0], "k1"),
    "a match failed": lambda x: x.store.fail_match(x.matches[0], "boom", final=True),
    "a match retried": retry,
    "a tournament created": lambda x: x.store.create_tournament("u", RunSpec(judge=JUDGE), [Pair(*x.ids[1:])]),
    "a tournament started": lambda x: x.store.start_match(x.matches[0]),
    "a tournament finished": lambda x: (x.resolve(x.matches[0], "k1"), x.store.fail_match(x.matches[1], "boom",
                                                                                           final=True)),
    "a tournament stopped": lambda x: x.store.stop_tournament(x.tournament, "budget"),
    "a tournament cancelled": lambda x: x.store.cancel_tournament(x.tournament),
    "a schedule claimed": lambda x: x.store.claim_schedule(x.tournament, 1.0, 3601.0),
    "an adaptive round added": lambda x: x.store.add_round(x.tournament, 0, [Pair(*x.ids[1:])]),
    "a vote cast": vote,
    "a submission added": lambda x: x.store.add_submissions([sub("q2", "m1", "new")]),
    "submissions imported": lambda x: x.store.add_submissions_bulk([sub("q2", "m1", "new")]),
    "judgements imported": lambda x: x.store.import_judgements(
        name="i", source="f.csv", judge="import/f", criteria="overall",
        rows=[ImportedJudgement(key="i1", a_id=x.ids[0], b_id=x.ids[2], outcome=Winner.B, calls=[])]),
    "a score kept": lambda x: x.store.keep_score(x.ids[0], JUDGE, "compqa", 12.0, {"template_version": "v"}),
    "scores imported": lambda x: x.store.add_scores([NewScore(x.ids[0], "import/s", "compqa", 10.0, {})]),
    "a match charged": lambda x: x.store.charge_match(x.matches[0], 0.25, calls=1),
    "an analysis stored": lambda x: x.store.set_analysis(x.resolve(x.matches[0], "k1"), {"why": "tie"}),
    "snapshots stored": lambda x: x.store.save_snapshots(x.tournament, x.tournament, {"model": []}),
}


@pytest.mark.parametrize("change", CHANGES)
def test_every_kind_of_change_moves_the_mark(scene: Scene, change: str) -> None:
    before = scene.store.page_mark()
    CHANGES[change](scene)
    after = scene.store.page_mark()
    assert after.mark != before.mark
    assert after.revision == scene.store.revision()


def test_the_revision_is_the_store_revision_and_a_resolve_moves_both(scene: Scene) -> None:
    start = scene.store.page_mark()
    assert start.revision == 0
    scene.resolve(scene.matches[0], "k1")
    moved = scene.store.page_mark()
    assert moved.revision == 1 == scene.store.revision() and moved.mark != start.mark


def test_reading_moves_nothing(scene: Scene) -> None:
    store = scene.store
    scene.resolve(scene.matches[0], "k1")
    before = store.page_mark()
    for read in (store.page_mark, store.revision, store.list_tournaments, lambda: store.get_tournament(scene.tournament),
                 store.side_rows, store.health_report, store.parse_failures, store.list_submissions,
                 lambda: store.tournament_judgements(scene.tournament), store.status_counts):
        read()
    assert store.page_mark() == before


def test_handing_matches_to_the_queue_or_a_failed_write_moves_nothing(scene: Scene) -> None:
    """A match queued is still pending on every page; a write that raises stores nothing."""
    store = scene.store
    before = store.page_mark()
    store.mark_queued({scene.matches[0]: "job-1"})
    with pytest.raises(Exception):  # noqa: B017  (any error: what matters is that nothing is stored)
        store.add_submissions([sub("q9", "m9", "x"), sub("q1", "m1", "changed")])  # a conflict: stores nothing
    assert store.page_mark() == before


def test_the_changes_counter_wraps_before_the_integer_column_overflows(scene: Scene) -> None:
    c = s.counters
    with scene.store._write(shown=False) as conn:
        conn.execute(update(c).where(c.c.name == s.CHANGES).values(value=COUNTER_MAX))
    before = scene.store.page_mark()
    scene.store.add_submissions([sub("q2", "m1", "new")])  # would overflow PostgreSQL's integer
    after = scene.store.page_mark()
    assert after.mark != before.mark and after.mark.endswith(".0")


def test_the_mark_is_one_read_of_the_counters(scene: Scene) -> None:
    seen: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append(statement)

    event.listen(scene.store.engine, "before_cursor_execute", record)
    try:
        scene.store.page_mark()
    finally:
        event.remove(scene.store.engine, "before_cursor_execute", record)
    queries = [q for q in seen if q.lstrip().upper().startswith("SELECT")]
    assert len(queries) == 1 and "FROM counters" in queries[0]


def test_the_route_answers_the_mark_uncached_and_a_vote_moves_it(client: TestClient) -> None:
    store = store_of(client)
    first = client.get("/api/revision")
    assert first.status_code == 200 and first.headers["cache-control"] == "no-store"
    mark = store.page_mark()
    assert first.json() == {"revision": mark.revision, "mark": mark.mark}
    assert client.get("/api/revision").json() == first.json()  # a poll changes nothing
    created = client.post("/api/submissions", headers=AUTH, json=[
        {"question_id": "q", "question": "Q?", "model": m, "output": f"answer of {m}"} for m in ("x", "y")])
    assert created.status_code == 201, created.text
    after_submit = client.get("/api/revision").json()
    assert after_submit["mark"] != first.json()["mark"] and after_submit["revision"] == 0
    a, b = (row["id"] for row in created.json()["submissions"])
    assert client.post("/api/votes", headers=AUTH, json={"a": a, "b": b, "winner": "A", "voter": "bob"}).status_code == 201
    after_vote = client.get("/api/revision").json()
    assert after_vote["revision"] == 1 and after_vote["mark"] != after_submit["mark"]
