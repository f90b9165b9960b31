"""The store on PostgreSQL, as docker compose deploys it, next to SQLite.

The first half runs on both backends (the `store` fixture: a fresh SQLite file, then a fresh
database on the session's real PostgreSQL server): what the API and the workers rely on, typed
values (booleans, floats, JSON text) included. The second half is PostgreSQL's own: the schema it
creates and upgrades, and two writers (two `Store`s on one URL, as two machines) racing for the
same match, the same key, the same fresh database. A race is made deterministic by a third
writer that holds its transaction open until both contenders wait on a lock, then commits.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect, select, text, update

from leaderboard.keys import content_hash
from leaderboard.spec import RunSpec
from leaderboard.types import Level, Pair, Winner
from service.store import (
    Conflict,
    JudgementQuery,
    JudgementSummary,
    KeptScore,
    NewJudgement,
    NewSubmission,
    Result,
    Shown,
    SideSummary,
    Store,
)
from service.store import schema as s
from service.store.imports import BatchConflict, ImportedJudgement, NewScore
from service.store.schema import SCHEMA_VERSION
from service.store.tournament_rows import StaleMatch
from tests.test_schema import V4

JUDGE = "anthropic/x"


def sub(qid: str, model: str, output: str, scenario: str = "default", **metadata: Any) -> NewSubmission:
    return NewSubmission(question_id=qid, question=f"{qid}?", model=model, scenario=scenario, output=output,
                         metadata=metadata)


def new_judgement(a: int, b: int, key: str, out_a: str, winner: Winner = Winner.A, *, consistent: bool = True,
                  cost: float | None = 0.5, match_id: int | None = None, judge: str = JUDGE) -> NewJudgement:
    return NewJudgement(key=key, judge=judge, criteria="overall", template_version="t", a_id=a, b_id=b,
                        a_hash=content_hash(out_a), outcome=winner, consistent=consistent,
                        calls=[{"first": a, "winner": "A", "reason": "r"}, {"first": b, "winner": "B", "reason": "r"}],
                        input_tokens=10, output_tokens=2, cost_usd=cost, match_id=match_id)


def three(store: Store) -> tuple[int, int, int]:
    (a, _), (b, _), (c, _) = store.add_submissions([sub("q1", "m1", "a"), sub("q1", "m2", "b"), sub("q1", "m3", "c")])
    return a, b, c


# ---- both backends ------------------------------------------------------------------------


def test_a_batch_is_idempotent_and_atomic(store: Store) -> None:
    batch = [sub("q1", "m1", "a", dataset="x", n=1), sub("q1", "m2", "b"), sub("q2", "m1", "c", scenario="cot")]
    first = store.add_submissions(batch)
    assert [created for _, created in first] == [True, True, True]
    assert store.add_submissions(batch) == [(i, False) for i, _ in first]
    assert store.add_submissions_bulk(batch) == [(i, False) for i, _ in first]
    with pytest.raises(Conflict, match="different output"):
        store.add_submissions([sub("q3", "m1", "new"), sub("q1", "m1", "changed")])
    with pytest.raises(BatchConflict, match="different output") as caught:
        store.add_submissions_bulk([sub("q3", "m1", "new"), sub("q1", "m2", "changed")])
    assert caught.value.index == 1
    listed = store.list_submissions()
    assert [x.id for x in listed] == [i for i, _ in first]  # nothing of either batch was stored
    assert listed[0].metadata == {"dataset": "x", "n": 1} and listed[2].scenario == "cot"
    assert store.submission_metadata([first[0][0], 999]) == {first[0][0]: {"dataset": "x", "n": 1}}
    bulk = store.add_submissions_bulk([sub("q4", "m1", "d"), sub("q4", "m1", "d"), sub("q4", "m2", "e")])
    assert bulk[0] == (bulk[1][0], True) and bulk[1][1] is False and bulk[2][1] is True


def test_resolve_stamps_seq_and_counts_a_judgement_once(store: Store) -> None:
    a, b, c = three(store)
    one = store.create_tournament("one", RunSpec(judge=JUDGE), [Pair(a, b), Pair(a, c)])
    two = store.create_tournament("two", RunSpec(judge=JUDGE), [Pair(b, a)])
    (m1, m2), (m3,) = store.pending_matches(one), store.pending_matches(two)
    assert store.revision() == 0 and store.side_rows_since(0) == ([], 0)
    assert store.start_match(m1) and store.get_tournament(one).status == "running"
    jab, created = store.save_judgement(new_judgement(a, b, "k-ab", "a", consistent=False, match_id=m1))
    assert created and store.save_judgement(new_judgement(a, b, "k-ab", "a", Winner.B)) == (jab, False)
    assert store.resolve_match(m1, jab, Winner.TIE, False)
    assert not store.resolve_match(m1, jab, Winner.TIE, False)  # a CAS: resolved once
    assert store.resolve_match(m3, jab, Winner.TIE, False)  # the same pair the other way round
    jac, _ = store.save_judgement(new_judgement(a, c, "k-ac", "a", Winner.B, cost=None, match_id=m2))
    assert store.resolve_match(m2, jac, Winner.B, True)
    assert store.revision() == 3
    with store._read() as conn:
        stamped = conn.execute(select(s.matches.c.id, s.matches.c.seq, s.matches.c.counted, s.matches.c.consistent)
                               .order_by(s.matches.c.seq)).all()
    assert [tuple(r) for r in stamped] == [(m1, 1, True, False), (m3, 2, False, False), (m2, 3, True, True)]
    assert all(type(r.counted) is bool and type(r.consistent) is bool for r in stamped)
    rows, upto = store.side_rows_since(0)
    assert upto == 3 and [(r.a_model, r.b_model, r.winner) for r in rows] == [("m1", "m2", Winner.TIE),
                                                                              ("m1", "m3", Winner.B)]
    assert store.side_rows_since(0, limit=1) == (rows[:1], 1)
    assert store.side_rows_since(1) == (rows[1:], 3) and store.side_rows_since(3) == ([], 3)
    assert store.side_rows_since(0, judge="other/judge") == ([], 3)
    assert store.side_rows() == rows and len(store.side_rows(tournament_id=two)) == 1
    assert store.side_rows(after_seq=1) == rows[1:]
    view = store.get_tournament(one)
    assert (view.status, view.matches_done, view.spent_usd) == ("done", 2, 0.5)  # NULL cost adds nothing
    judged = store.tournament_judgements(one)
    assert [(x["a"], x["b"], x["outcome"], x["consistent"]) for x in judged] == [(a, b, "TIE", False),
                                                                                (a, c, "B", True)]
    shown = store.get_judgement(jab)
    assert (shown.consistent, shown.cost_usd, shown.analysis, shown.match_id) == (False, 0.5, None, m1)
    store.set_analysis(jab, {"a_strengths": "short"})
    assert store.judgement_pair(jab)[0].analysis == {"a_strengths": "short"}
    assert store.get_judgement(jac).cost_usd is None


def test_a_read_sees_one_snapshot(store: Store) -> None:
    """A read transaction's statements agree with each other even when a writer commits between
    them (SQLite's WAL snapshot; PostgreSQL's REPEATABLE READ), so a board's revision and its rows
    always match."""
    a, b, _ = three(store)
    tid = store.create_tournament("t", RunSpec(judge=JUDGE), [Pair(a, b)])
    (m,) = store.pending_matches(tid)
    jid, _ = store.save_judgement(new_judgement(a, b, "k", "a"))
    writer = Store(store.url)
    try:
        with store._read() as conn:
            revision = select(s.counters.c.value).where(s.counters.c.name == "resolved")
            assert conn.execute(revision).scalar_one() == 0
            assert writer.resolve_match(m, jid, Winner.A, True)  # commits meanwhile
            assert conn.execute(revision).scalar_one() == 0
            assert conn.execute(select(s.matches.c.status)).scalars().all() == ["pending"]
        assert store.revision() == 1
    finally:
        writer.close()


def test_the_judgement_cache_answers_by_key(store: Store) -> None:
    a, b, _ = three(store)
    store.save_judgement(new_judgement(a, b, "key-17", "a"))
    assert store.find_judgement("key-17").calls[1] == {"first": b, "winner": "B", "reason": "r"}
    assert store.find_judgement("key-18") is None
    keys = [f"key-{i}" for i in range(1200)]  # three statements of 500 keys
    assert store.existing_keys(keys) == {"key-17"} and store.existing_keys([]) == set()


def test_failed_and_lost_matches(store: Store) -> None:
    a, b, c = three(store)
    now = [1000.0]
    clocked = Store(store.url, clock=lambda: now[0])
    try:
        tid = clocked.create_tournament("t", RunSpec(judge=JUDGE), [Pair(a, b), Pair(a, c), Pair(b, c)])
        m1, m2, m3 = clocked.pending_matches(tid)
        assert [x.id for x in clocked.stale_matches(1100.0, 300)] == [m1, m2, m3]  # never handed out
        clocked.mark_queued({m1: "job-1", m2: "job-2", m3: "job-3"})
        now[0] = 1200.0
        assert clocked.start_match(m1)
        clocked.fail_match(m2, "VerdictParseError: no verdict", final=True)
        clocked.fail_match(m3, "529 overloaded", final=False)  # back to queued, enqueued again at 1200
        assert clocked.stale_matches(1300.0, 300) == []
        assert clocked.stale_matches(1501.0, 300) == [StaleMatch(id=m1, status="running", job_id="job-1"),
                                                      StaleMatch(id=m3, status="queued", job_id="job-3")]
        clocked.charge_match(m2, 0.25)
        clocked.charge_match(m2, 0.5)
        assert clocked.tournament_spend(tid) == 0.75
        assert clocked.parse_failures() == {JUDGE: 1}
        assert clocked.stop_tournament(tid, "budget") and not clocked.stop_tournament(tid, "budget")
        view = clocked.get_tournament(tid)
        assert (view.status, view.stopped_reason, view.matches_cancelled) == ("cancelled", "budget", 2)
        assert not clocked.start_match(m1)
    finally:
        clocked.close()


def test_schedules_rounds_and_snapshots_are_claimed_once(store: Store) -> None:
    a, b, c = three(store)
    other = Store(store.url)  # a second scheduler
    try:
        tid = store.create_tournament("nightly", RunSpec(judge=JUDGE), [], schedule="0 3 * * *", next_run_at=100.5)
        assert [d.id for d in other.due_schedules(100.5)] == [tid] and store.due_schedules(100.4) == []
        assert store.claim_schedule(tid, 100.5, 186_500.25)
        assert not other.claim_schedule(tid, 100.5, 186_500.25)
        assert other.get_tournament(tid).next_run_at == 186_500.25
        run = store.create_tournament("adaptive", RunSpec(judge=JUDGE, mode="adaptive"), [Pair(a, b)], rounds=1)
        assert store.rounds_due() == []
        (m,) = store.pending_matches(run)
        store.resolve_match(m, store.save_judgement(new_judgement(a, b, "k", "a", match_id=m))[0], Winner.A, True)
        assert store.get_tournament(run).status == "queued"  # an adaptive run waits for its planner
        assert [d.rounds for d in store.rounds_due()] == [1]
        assert store.add_round(run, 1, [Pair(a, c)]) and not other.add_round(run, 1, [Pair(b, c)])
        assert store.tournament_pairs(run) == {(a, b), (a, c)} and store.judgements_made(run) == 1
        assert store.judged_pairs(JUDGE, "overall", "t") == {(a, b)}
        assert store.finish_rounds(run, 2, "separated") and not other.finish_rounds(run, 2, "exhausted")
        assert store.get_tournament(run).stopped_reason == "separated"
        assert [x.run for x in store.runs_to_snapshot()] == [tid, run]  # a scheduled one and an adaptive one
        assert store.save_snapshots(run, run, {"model": [{"player": "m1", "rating": 1010.5}]})
        assert not other.save_snapshots(run, run, {"model": []})
        assert [x["rows"] for x in store.snapshots(run, "model")] == [[{"player": "m1", "rating": 1010.5}]]
        assert [x.run for x in other.runs_to_snapshot()] == [tid]
    finally:
        other.close()


def test_scores_are_kept_once_per_version(store: Store) -> None:
    a, b, _ = three(store)
    kept = store.keep_score(a, JUDGE, "compqa", 12, {"template_version": "v1", "c1": 2})
    assert kept == KeptScore(total=12.0, detail={"template_version": "v1", "c1": 2}, created=True)
    assert store.keep_score(a, JUDGE, "compqa", 3, {"template_version": "v1"}).total == 12.0  # kept
    assert store.keep_score(a, JUDGE, "compqa", 15.5, {"template_version": "v2"}).created  # replaced
    assert store.find_score(a, JUDGE, "compqa").total == 15.5 and store.find_score(b, JUDGE, "compqa") is None
    assert set(store.find_scores([a, b], JUDGE, "compqa")) == {a}
    assert store.add_scores([NewScore(b, "rubric/h", "compqa", 9.0, {"evaluations": [{"total": 8}, {"total": 10}]}),
                             NewScore(a, "rubric/h", "compqa", 11.0)]) == (2, 0)
    assert store.add_scores([NewScore(a, "rubric/h", "compqa", 11.0)]) == (0, 1)
    with pytest.raises(BatchConflict):
        store.add_scores([NewScore(a, "rubric/h", "compqa", 4.0)])
    assert store.score_judges("compqa") == [JUDGE, "rubric/h"]
    means = store.score_means("rubric/h", "compqa", by=("model",))
    assert [(r["model"], r["mean"], r["n"]) for r in means] == [("m1", 11.0, 1), ("m2", 9.0, 2)]


def test_imports_reserve_seqs_and_export_in_order(store: Store) -> None:
    a, b, c = three(store)
    store.save_judgement(new_judgement(a, b, "worker", "a"))  # a judgement without a match
    rows = [ImportedJudgement("i1", a, b, Winner.A, [{"first": a, "winner": "A"}]),
            ImportedJudgement("i2", a, b, Winner.B, [{"first": b, "winner": "B"}], consistent=False),
            ImportedJudgement("i3", b, c, Winner.TIE, [{"first": b, "winner": "TIE"}])]
    done = store.import_judgements(name="votes", source="test", judge="human/votes", criteria="overall", rows=rows)
    assert (done.created, done.existing, len(done.layers)) == (3, 0, 1)  # a repeat of (a, b) goes to a layer
    again = store.import_judgements(name="votes", source="test", judge="human/votes", criteria="overall", rows=rows)
    assert (again.tournament_id, again.created, again.existing) == (None, 0, 3)
    assert store.revision() == 3
    exported = store.export_judgements(tournament_id=done.tournament_id)
    assert [(x["seq"], x["outcome"], x["consistent"], x["len_a"]) for x in exported] == [
        (1, "A", True, 1), (2, "B", False, 1), (3, "TIE", True, 1)]
    assert len(store.export_judgements()) == 3 and store.export_judgements(judge="nobody") == []
    health = {h.judge: h for h in store.judge_health()}
    assert set(health) == {JUDGE, "human/votes"} and health[JUDGE].human_pairs == 1


def test_lists_of_judgements_are_typed_pages(store: Store) -> None:
    from tests.test_api_judgement_list import JUDGE as LISTED
    from tests.test_api_judgement_list import seed_store

    seed = seed_store(store)
    query = JudgementQuery(judge=LISTED, level=Level.SCENARIO, player="s1", opponent="s2", shown=Shown.DECIDED,
                           limit=2)
    want = seed.expected(level=Level.SCENARIO, player="s1", opponent="s2", kind="decided")
    first = store.list_judgements(query)
    assert [r.id for r in first] == want[:2] and len(want) > 3
    assert [r.id for r in store.list_judgements(dataclasses.replace(query, offset=2, limit=10))] == want[2:]
    row = first[0]
    assert isinstance(row, JudgementSummary) and isinstance(row.a, SideSummary)
    assert row.outcome in (Winner.A, Winner.B) and isinstance(row.consistent, bool)
    assert row.result is (Result.WIN if (row.outcome is Winner.A) == (row.a.scenario == "s1") else Result.LOSS)
    assert row.a.output_chars == len(seed.by_id(row.id).a.output)
    assert store.list_judgements(dataclasses.replace(query, upto=want[1])) == store.list_judgements(
        dataclasses.replace(query, offset=1))
    alone = JudgementQuery(judge=LISTED, level=Level.SCENARIO, opponent="s2")  # on a side, no result
    assert [r.id for r in store.list_judgements(alone)] == seed.expected(level=Level.SCENARIO, player="s2")
    assert {r.result for r in store.list_judgements(alone)} == {None}


# ---- PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Store]:
    """A store on a fresh PostgreSQL database."""
    st = Store(postgres_url)
    yield st
    st.close()


def test_postgres_schema_is_created_typed_and_versioned(postgres_url: str) -> None:
    Store(postgres_url).close()
    engine = create_engine(postgres_url)
    try:
        columns = {c["name"]: c for c in inspect(engine).get_columns("matches")}
        assert {t for t in inspect(engine).get_table_names()} == set(s.metadata.tables)
        with engine.connect() as conn:
            assert conn.execute(text("select version from schema_version")).scalars().all() == [SCHEMA_VERSION]
            assert sorted(conn.execute(text("select name, value from counters")).all()) == [("changes", 0),
                                                                                            ("resolved", 0)]
            types = dict(conn.execute(text(
                "select column_name, data_type from information_schema.columns where table_name = 'matches'")).all())
        assert (types["counted"], types["consistent"], types["seq"], types["started_at"]) == (
            "boolean", "boolean", "integer", "double precision")
        assert columns["failed_cost_usd"]["nullable"] and not columns["counted"]["nullable"]
        Store(postgres_url).close()  # opening again changes nothing
        with engine.begin() as conn:
            assert conn.execute(text("select count(*) from schema_version")).scalar_one() == 1
            conn.execute(text("update schema_version set version = 99"))
        with pytest.raises(RuntimeError, match="newer than this joust"):
            Store(postgres_url)
    finally:
        engine.dispose()


def on_postgres(sqlite_script: str) -> str:
    """An old schema script of tests/test_schema.py as PostgreSQL ran it: SERIAL ids, true
    booleans (the sequences are moved past the rows the script inserts, see `run_script`)."""
    return (sqlite_script.replace("(id INTEGER PRIMARY KEY,", "(id SERIAL PRIMARY KEY,")
            .replace("BOOLEAN NOT NULL DEFAULT 0", "BOOLEAN NOT NULL DEFAULT FALSE")
            .replace("'A',1,", "'A',TRUE,"))


def run_script(url: str, script: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(script)
            for table in ("submissions", "tournaments", "judgements", "matches", "board_snapshots"):
                if inspect(conn).has_table(table):
                    conn.exec_driver_sql(f"select setval(pg_get_serial_sequence('{table}', 'id'), "
                                         f"coalesce((select max(id) from {table}), 0) + 1, false)")
    finally:
        engine.dispose()


@pytest.mark.parametrize("version", [1, 4])
def test_an_old_postgres_database_is_upgraded(postgres_url: str, version: int) -> None:
    from tests.test_schema import V1

    # A version-3 PostgreSQL database lost cost_usd's NOT NULL in place (SQLite's script keeps it).
    v4 = on_postgres(V4) + "ALTER TABLE judgements ALTER COLUMN cost_usd DROP NOT NULL;"
    run_script(postgres_url, {1: on_postgres(V1), 4: v4}[version])
    store = Store(postgres_url)
    try:
        assert store.revision() == 2
        with store._read() as conn:
            assert conn.execute(select(s.schema_version.c.version)).scalars().all() == [SCHEMA_VERSION]
            stamped = conn.execute(select(s.matches.c.id, s.matches.c.seq, s.matches.c.counted,
                                          s.matches.c.failed_cost_usd).order_by(s.matches.c.id)).all()
        assert [tuple(r) for r in stamped] == [(1, 1, True, None), (2, 2, False, None), (3, None, False, None)]
        assert len(store.side_rows()) == 1 and store.get_tournament(1).rounds == 0
        jid, created = store.save_judgement(new_judgement(1, 2, "new", "x", cost=None, match_id=3))
        assert created and jid == 2 and store.get_judgement(jid).cost_usd is None  # NULL allowed now
        assert store.resolve_match(3, jid, Winner.B, True) and store.revision() == 3
        store.charge_match(3, 0.25)
        assert store.tournament_spend(2) == 0.25
    finally:
        store.close()
    Store(postgres_url).close()  # opening again changes nothing


def test_a_version_6_postgres_database_is_upgraded(postgres_url: str) -> None:
    """The order policy joins the judgement keys on PostgreSQL too (tests/test_schema.py)."""
    from tests.test_schema import V6, check_version_6_upgrade

    run_script(postgres_url, on_postgres(V6))
    store = Store(postgres_url)
    try:
        check_version_6_upgrade(store)
    finally:
        store.close()
    again = Store(postgres_url)  # opening again changes nothing
    try:
        check_version_6_upgrade(again)
    finally:
        again.close()


def test_a_version_8_postgres_database_is_upgraded(postgres_url: str) -> None:
    """The indexes lists of judgements go by are made on PostgreSQL too (tests/test_schema.py)."""
    from tests.test_schema import as_version_8, check_version_8_upgrade

    made = Store(postgres_url)
    try:
        as_version_8(made)
    finally:
        made.close()
    store = Store(postgres_url)
    try:
        check_version_8_upgrade(store)
    finally:
        store.close()


def lock_waiters(store: Store) -> int:
    """How many other sessions of this database wait on a lock."""
    with store.engine.connect() as conn:
        return int(conn.execute(text(
            "select count(*) from pg_stat_activity where datname = current_database() "
            "and wait_event_type = 'Lock' and pid <> pg_backend_pid()")).scalar_one())


@contextmanager
def racing(holder: Store, hold: Callable[[Any], None], *contenders: Callable[[], Any]) -> Iterator[list[Future]]:
    """Run `hold` in an open write transaction of `holder`; start the contenders in this order
    (each in its own thread, with a store of its own), each once the one before waits on a lock;
    then commit the hold. Yields their futures, finished."""
    with ThreadPoolExecutor(len(contenders)) as pool:
        futures: list[Future] = []
        with holder._write() as conn:
            hold(conn)
            for contender in contenders:
                futures.append(pool.submit(contender))
                for _ in range(600):  # bounded: 30 s at most, then the assertions say what is missing
                    if lock_waiters(holder) >= len(futures) or any(f.done() for f in futures):
                        break
                    time.sleep(0.05)
                assert not any(f.done() for f in futures), [f.exception() or f.result() for f in futures if f.done()]
                assert lock_waiters(holder) >= len(futures)
        for f in futures:
            f.exception()
        yield futures


def two_workers(url: str) -> tuple[Store, Store]:
    return Store(url), Store(url)


def test_two_workers_resolving_one_match_exactly_one_wins(pg: Store) -> None:
    a, b, _ = three(pg)
    tid = pg.create_tournament("t", RunSpec(judge=JUDGE), [Pair(a, b)])
    (m,) = pg.pending_matches(tid)
    jid, _ = pg.save_judgement(new_judgement(a, b, "k", "a", match_id=m))
    one, two = two_workers(pg.url)
    try:
        assert one.start_match(m) and two.start_match(m)  # a lost job handed out again: both run it
        counter = s.counters
        with racing(pg, lambda conn: conn.execute(update(counter).values(value=counter.c.value)),
                    lambda: one.resolve_match(m, jid, Winner.A, True),
                    lambda: two.resolve_match(m, jid, Winner.B, True)) as (first, second):
            won = [first.result(), second.result()]
        assert sorted(won) == [False, True]
        assert pg.revision() == 1
        (row,) = pg.tournament_judgements(tid)
        assert row["outcome"] == ("A" if won[0] else "B")
        rows, upto = pg.side_rows_since(0)
        assert upto == 1 and len(rows) == 1
    finally:
        one.close()
        two.close()


def test_two_tournaments_resolving_one_pair_count_it_once(pg: Store) -> None:
    a, b, _ = three(pg)
    t1 = pg.create_tournament("one", RunSpec(judge=JUDGE), [Pair(a, b)])
    t2 = pg.create_tournament("two", RunSpec(judge=JUDGE), [Pair(b, a)])
    (m1,), (m2,) = pg.pending_matches(t1), pg.pending_matches(t2)
    jid, _ = pg.save_judgement(new_judgement(a, b, "k", "a"))
    one, two = two_workers(pg.url)
    try:
        counter = s.counters
        with racing(pg, lambda conn: conn.execute(update(counter).values(value=counter.c.value)),
                    lambda: one.resolve_match(m1, jid, Winner.A, True),
                    lambda: two.resolve_match(m2, jid, Winner.B, True)) as futures:
            assert [f.result() for f in futures] == [True, True]
        with pg._read() as conn:
            stamps = conn.execute(select(s.matches.c.seq, s.matches.c.counted).order_by(s.matches.c.seq)).all()
        assert [r.seq for r in stamps] == [1, 2] and [r.counted for r in stamps] == [True, False]
        assert len(pg.side_rows()) == 1
    finally:
        one.close()
        two.close()


def test_two_clients_sending_the_same_submission_both_get_its_id(pg: Store) -> None:
    item = sub("q1", "m1", "same")
    one, two = two_workers(pg.url)
    sent: list[int] = []

    def first_sender(conn: Any) -> None:  # a third client's insert of the same item, not yet committed
        sent.append(conn.execute(s.submissions.insert().values(
            question_id=item.question_id, question=item.question, model=item.model, scenario=item.scenario,
            output=item.output, output_hash=content_hash(item.output), question_hash=content_hash(item.question),
            metadata="{}", created_at=0.0)).inserted_primary_key[0])

    try:
        with racing(pg, first_sender, lambda: one.add_submissions([item]),
                    lambda: two.add_submissions([item])) as futures:
            assert [f.result() for f in futures] == [[(sent[0], False)]] * 2  # the same no-op, never a 409
        assert len(pg.list_submissions()) == 1
    finally:
        one.close()
        two.close()


def test_a_run_stopped_while_a_worker_resolves_its_last_match_does_not_deadlock(pg: Store) -> None:
    """The budget check stops a run (tournament row, then its matches) while a worker resolves
    its last match (match row, then the tournament row): the second in line must wait, not
    deadlock."""
    a, b, _ = three(pg)
    tid = pg.create_tournament("t", RunSpec(judge=JUDGE), [Pair(a, b)])
    (m,) = pg.pending_matches(tid)
    jid, _ = pg.save_judgement(new_judgement(a, b, "k", "a"))
    one, two = two_workers(pg.url)
    t = s.tournaments
    try:
        with racing(pg, lambda conn: conn.execute(update(t).where(t.c.id == tid).values(name=t.c.name)),
                    lambda: two.stop_tournament(tid, "budget"),
                    lambda: one.resolve_match(m, jid, Winner.A, True)) as (stopped, resolved):
            assert [stopped.result(), resolved.result()] == [True, False]  # no DeadlockDetected
        view = pg.get_tournament(tid)
        assert (view.status, view.stopped_reason, view.matches_cancelled) == ("cancelled", "budget", 1)
        assert pg.revision() == 0
    finally:
        one.close()
        two.close()


def test_processes_opening_a_fresh_database_at_once_create_it_once(postgres_server: Any) -> None:
    """docker compose starts the API, the workers and the scheduler together on an empty
    database: each creates the schema, and none may fail on another's half-made table."""
    for _ in range(3):
        name = postgres_server.create_database()
        url = postgres_server.url(name)
        start = threading.Barrier(4)

        def open_store(start: threading.Barrier = start, url: str = url) -> int:
            start.wait()
            st = Store(url)
            try:
                return st.revision()
            finally:
                st.close()

        try:
            with ThreadPoolExecutor(4) as pool:
                assert [f.result() for f in [pool.submit(open_store) for _ in range(4)]] == [0] * 4
            with Store(url)._read() as conn:
                assert conn.execute(select(s.schema_version.c.version)).scalars().all() == [SCHEMA_VERSION]
        finally:
            postgres_server.drop_database(name)
