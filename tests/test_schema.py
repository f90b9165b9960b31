"""Schema migration: a database written by each older joust upgrades in place: version 1 (before
matches had seq and counted), version 2 (before judgements had match_id and analysis, and cost_usd
could be NULL), ... version 6 (before judgement keys held the order policy), version 8 (before the
indexes lists of judgements go by)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import inspect, select, text

from leaderboard.keys import answering_keys, content_hash, judgement_key
from leaderboard.templates import PAIRWISE_TEMPLATE_VERSION
from leaderboard.types import OrderPolicy, Winner
from service.store import NewJudgement, NewSubmission, Store
from service.store import schema as s
from service.store.schema import SCHEMA_VERSION


def upgraded(path: Path, script: str) -> Store:
    """A database file written by an older joust (`script`), opened by this one: the schema is
    migrated in place to SCHEMA_VERSION."""
    with sqlite3.connect(path) as conn:
        conn.executescript(script)
    store = Store(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        assert conn.execute("select max(version) from schema_version").fetchone() == (SCHEMA_VERSION,)
    return store

V1 = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY);
INSERT INTO schema_version VALUES (1);
CREATE TABLE submissions (id INTEGER PRIMARY KEY, question_id VARCHAR(255) NOT NULL, question TEXT NOT NULL,
  model VARCHAR(255) NOT NULL, scenario VARCHAR(255) NOT NULL, output TEXT NOT NULL, output_hash VARCHAR(64) NOT NULL,
  question_hash VARCHAR(64) NOT NULL, metadata TEXT NOT NULL, created_at FLOAT NOT NULL,
  CONSTRAINT uq_submission_key UNIQUE (question_id, model, scenario));
CREATE TABLE tournaments (id INTEGER PRIMARY KEY, name VARCHAR(255) NOT NULL, spec TEXT NOT NULL, status VARCHAR(16) NOT NULL,
  created_at FLOAT NOT NULL, started_at FLOAT, finished_at FLOAT, schedule VARCHAR(255), next_run_at FLOAT,
  parent_id INTEGER REFERENCES tournaments (id));
CREATE TABLE judgements (id INTEGER PRIMARY KEY, key VARCHAR(64) NOT NULL UNIQUE, judge VARCHAR(255) NOT NULL,
  criteria VARCHAR(64) NOT NULL, template_version VARCHAR(64) NOT NULL, a_id INTEGER NOT NULL, b_id INTEGER NOT NULL,
  a_hash VARCHAR(64) NOT NULL, outcome VARCHAR(8) NOT NULL, consistent BOOLEAN NOT NULL, calls TEXT NOT NULL,
  input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cost_usd FLOAT NOT NULL, created_at FLOAT NOT NULL);
CREATE TABLE matches (id INTEGER PRIMARY KEY, tournament_id INTEGER NOT NULL, a_id INTEGER NOT NULL, b_id INTEGER NOT NULL,
  status VARCHAR(16) NOT NULL, attempts INTEGER NOT NULL, job_id VARCHAR(64), last_error TEXT, judgement_id INTEGER,
  outcome VARCHAR(8), consistent BOOLEAN, enqueued_at FLOAT, started_at FLOAT, finished_at FLOAT,
  CONSTRAINT uq_match_pair UNIQUE (tournament_id, a_id, b_id));
CREATE INDEX ix_matches_judgement ON matches (judgement_id);
INSERT INTO submissions VALUES (1,'q','Q?','m1','default','x','hx','hq','{}',0), (2,'q','Q?','m2','default','y','hy','hq','{}',0);
INSERT INTO tournaments VALUES (1,'t1','{"judge": "anthropic/x"}','done',0,0,0,NULL,NULL,NULL),
  (2,'t2','{"judge": "anthropic/x"}','done',0,0,0,NULL,NULL,NULL);
INSERT INTO judgements VALUES (1,'k','anthropic/x','overall','v',1,2,'hx','A',1,'[]',0,0,0,0);
INSERT INTO matches VALUES (1,1,1,2,'done',1,NULL,NULL,1,'A',1,0,0,0), (2,2,1,2,'done',0,NULL,NULL,1,'A',1,0,0,0),
  (3,2,2,1,'pending',0,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL);
"""


def test_a_version_1_database_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = upgraded(path, V1)
    assert store.revision() == 2
    with sqlite3.connect(path) as conn:
        assert conn.execute("select id, seq, counted from matches order by id").fetchall() == [
            (1, 1, 1), (2, 2, 0), (3, None, 0)]
    assert len(store.side_rows()) == 1  # the judgement counts once, as before the upgrade
    assert len(store.side_rows(tournament_id=2)) == 1
    store.close()
    Store(f"sqlite:///{path}").close()  # opening again changes nothing


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:
        conn.execute("update schema_version set version = 99")
    with pytest.raises(RuntimeError, match="newer than this joust"):
        Store(f"sqlite:///{path}")


# Version 2 as it was written: version 1 plus matches.seq / matches.counted and the counters.
V2 = V1.replace("INSERT INTO schema_version VALUES (1);", "INSERT INTO schema_version VALUES (2);") + """
ALTER TABLE matches ADD COLUMN seq INTEGER;
ALTER TABLE matches ADD COLUMN counted BOOLEAN NOT NULL DEFAULT 0;
CREATE TABLE counters (name VARCHAR(64) PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO counters VALUES ('resolved', 2);
UPDATE matches SET seq = id, counted = (id = 1) WHERE status = 'done';
UPDATE judgements SET cost_usd = 0.25;
"""


def test_a_version_2_database_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    store = upgraded(path, V2)
    with sqlite3.connect(path) as conn:
        columns = {row[1]: row for row in conn.execute("pragma table_info(judgements)")}
        assert columns["cost_usd"][3] == 0  # NULL allowed: a judge without a price
        assert {"match_id", "analysis"} <= columns.keys() and "cost_usd_v2" not in columns
        assert "ix_judgements_match" in {row[1] for row in conn.execute("pragma index_list(judgements)")}
    old = store.get_judgement(1)
    assert (old.cost_usd, old.analysis, old.match_id) == (0.25, None, None)  # kept as it was
    assert store.get_tournament(1).stopped_reason is None
    assert len(store.side_rows()) == 1
    jid, created = store.save_judgement(NewJudgement("k2", "openai/local", "overall", "v", 1, 2, content_hash("x"),
                                                     Winner.TIE, True, [], cost_usd=None, match_id=3))
    assert created and store.get_judgement(jid).cost_usd is None
    store.set_analysis(1, {"a_strengths": "short"})
    store.close()
    again = Store(f"sqlite:///{path}")  # opening again changes nothing
    assert again.get_judgement(1).analysis == {"a_strengths": "short"}
    again.close()


# Version 3 as it was written: version 2 with cost_usd nullable, judgements.match_id / analysis
# and tournaments.stopped_reason (SQLite keeps the NOT NULL here; the 2 -> 3 test covers that).
V3 = V2.replace("INSERT INTO schema_version VALUES (2);", "INSERT INTO schema_version VALUES (3);") + """
ALTER TABLE judgements ADD COLUMN match_id INTEGER;
ALTER TABLE judgements ADD COLUMN analysis TEXT;
CREATE INDEX ix_judgements_match ON judgements (match_id);
ALTER TABLE tournaments ADD COLUMN stopped_reason VARCHAR(32);
"""


def test_a_version_3_database_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    store = upgraded(path, V3)
    with sqlite3.connect(path) as conn:
        assert "rounds" in {row[1] for row in conn.execute("pragma table_info(tournaments)")}
        assert "board_snapshots" in {row[0] for row in conn.execute("select name from sqlite_master")}
    assert store.get_tournament(1).rounds == 0  # old tournaments planned no adaptive round
    assert store.save_snapshots(1, 1, {"model": [{"player": "m1", "rating": 1000.0}]})
    assert not store.save_snapshots(1, 1, {"model": []})  # once per run and level
    assert store.snapshots(1, "model") == [{"run": 1, "time": store.snapshots(1, "model")[0]["time"],
                                            "rows": [{"player": "m1", "rating": 1000.0}]}]
    store.close()
    Store(f"sqlite:///{path}").close()  # opening again changes nothing


# Version 4 as it was written: version 3 plus tournaments.rounds and board_snapshots.
V4 = V3.replace("INSERT INTO schema_version VALUES (3);", "INSERT INTO schema_version VALUES (4);") + """
ALTER TABLE tournaments ADD COLUMN rounds INTEGER NOT NULL DEFAULT 0;
CREATE TABLE board_snapshots (id INTEGER PRIMARY KEY, tournament_id INTEGER NOT NULL REFERENCES tournaments (id),
  run_id INTEGER NOT NULL REFERENCES tournaments (id), level VARCHAR(16) NOT NULL, taken_at FLOAT NOT NULL,
  rows TEXT NOT NULL, CONSTRAINT uq_snapshot_run_level UNIQUE (run_id, level));
UPDATE judgements SET match_id = 1;
"""


def test_a_version_4_database_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    store = upgraded(path, V4)
    with sqlite3.connect(path) as conn:
        assert conn.execute("select id, failed_cost_usd from matches order by id").fetchall() == [
            (1, None), (2, None), (3, None)]  # nothing was metered before
    assert [store.get_tournament(t).spent_usd for t in (1, 2)] == [0.25, 0.0]  # as before the upgrade
    store.charge_match(3, 0.5)
    store.charge_match(3, 0.25)
    assert [t.spent_usd for t in store.list_tournaments()] == [0.75, 0.25]  # newest first
    assert store.tournament_spend(2) == 0.75
    store.close()
    again = Store(f"sqlite:///{path}")  # opening again changes nothing
    assert again.tournament_spend(2) == 0.75 and again.tournament_spend(1) == 0.25
    again.close()


# Version 5 as it was written: version 4 plus matches.failed_cost_usd.
V5 = V4.replace("INSERT INTO schema_version VALUES (4);", "INSERT INTO schema_version VALUES (5);") + """
ALTER TABLE matches ADD COLUMN failed_cost_usd FLOAT;
"""


def test_a_version_5_database_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    store = upgraded(path, V5)
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("pragma table_info(tournaments)")}
    assert {"failure_streak", "retried", "delivery"} <= columns
    assert [store.get_tournament(t).retried for t in (1, 2)] == [0, 0]  # nothing was retried before
    assert [store.get_tournament(t).delivery for t in (1, 2)] == ["live", "live"]  # every run was live
    store.close()
    Store(f"sqlite:///{path}").close()  # opening again changes nothing


# Version 6 as it was written: version 5 plus tournaments.failure_streak, retried and delivery;
# judgement keys without the order policy. Its rows: a pair judged by a worker with order single
# (one call) under overall, the same pair with order both (two calls) under dimensions, an
# imported verdict (one call), and an adaptive run between rounds.
QUESTION, P, R = "Is p or r better?", "p is better.", "r is better."
LEGACY = {criteria: judgement_key("anthropic/x", version, criteria, QUESTION, P, R)
          for criteria, version in (("overall", PAIRWISE_TEMPLATE_VERSION), ("dimensions", "dimensions-v1"))}
ONE_CALL = '[{"first": 3, "winner": "A"}]'
TWO_CALLS = '[{"first": 3, "winner": "A"}, {"first": 4, "winner": "B"}]'
V6 = V5.replace("INSERT INTO schema_version VALUES (5);", "INSERT INTO schema_version VALUES (6);") + f"""
ALTER TABLE tournaments ADD COLUMN failure_streak INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tournaments ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tournaments ADD COLUMN delivery VARCHAR(8) NOT NULL DEFAULT 'live';
INSERT INTO submissions VALUES (3,'q2','{QUESTION}','m1','default','{P}','{content_hash(P)}','hq2','{{}}',0),
  (4,'q2','{QUESTION}','m2','default','{R}','{content_hash(R)}','hq2','{{}}',0);
INSERT INTO tournaments (id, name, spec, status, created_at, rounds) VALUES
  (3,'adaptive','{{"judge": "anthropic/x", "mode": "adaptive", "order": "single", "round_size": 2}}','running',0,1),
  (4,'import','{{"criteria": "overall", "judge": "import/f", "mode": "import", "source": "f.csv"}}','done',0,0);
INSERT INTO judgements VALUES
  (2,'{LEGACY["overall"]}','anthropic/x','overall','{PAIRWISE_TEMPLATE_VERSION}',3,4,'{content_hash(P)}','A',TRUE,
   '{ONE_CALL}',10,2,0.5,0,NULL,NULL),
  (3,'{LEGACY["dimensions"]}','anthropic/x','dimensions','dimensions-v1',3,4,'{content_hash(P)}','A',TRUE,
   '{TWO_CALLS}',20,4,1.0,0,NULL,NULL),
  (4,'imported','import/f','overall','import',3,4,'{content_hash(P)}','A',TRUE,'{ONE_CALL}',0,0,0,0,NULL,NULL);
INSERT INTO matches VALUES (4,3,3,4,'done',1,NULL,NULL,2,'A',TRUE,0,0,0,3,TRUE,NULL);
UPDATE counters SET value = 3;
"""


def test_a_version_6_database_is_upgraded(tmp_path: Path) -> None:
    """Single-order judgements move to keys that hold the policy, so a run asking for both
    orders no longer takes them (and a single-order run still does); both-order, imported and
    unreadable ones keep their keys; every run's mode is a column."""
    path = tmp_path / "v6.db"
    store = upgraded(path, V6)
    assert SCHEMA_VERSION == 11
    check_version_6_upgrade(store)
    store.close()
    again = Store(f"sqlite:///{path}")  # opening again changes nothing
    check_version_6_upgrade(again)
    again.close()


def check_version_6_upgrade(store: Store) -> None:
    """What `test_a_version_6_database_is_upgraded` (and its PostgreSQL twin) check."""
    texts = ("anthropic/x", PAIRWISE_TEMPLATE_VERSION, "overall", QUESTION, P, R)
    single = judgement_key(*texts, OrderPolicy.SINGLE)
    assert store.find_judgement(single).id == 2
    assert store.find_judgement(*answering_keys(*texts, OrderPolicy.BOTH)) is None  # both never takes single
    assert store.find_judgement(*answering_keys(*texts, OrderPolicy.SINGLE)).id == 2
    assert store.find_judgement(LEGACY["dimensions"]).id == 3  # two calls: both, its key as it was
    assert store.find_judgement("imported").id == 4 and store.find_judgement("k").id == 1
    with store._read() as conn:
        policies = dict(conn.execute(select(s.judgements.c.id, s.judgements.c.order_policy)).all())
        modes = dict(conn.execute(select(s.tournaments.c.id, s.tournaments.c.mode)).all())
    assert policies == {1: None, 2: "single", 3: "both", 4: None}  # no call recorded, imported: unknown
    assert modes == {1: "round_robin", 2: "round_robin", 3: "adaptive", 4: "import"}
    assert store.judged_pairs("anthropic/x", "overall", PAIRWISE_TEMPLATE_VERSION) == set()
    assert store.judged_pairs("anthropic/x", "overall", PAIRWISE_TEMPLATE_VERSION,
                              (OrderPolicy.BOTH, OrderPolicy.SINGLE)) == {(3, 4)}
    assert [due.id for due in store.rounds_due()] == [3]  # found by its mode column
    assert store.calls_made(3, 1) == 0  # nothing was counted before: no failed call is invented
    assert store.get_tournament(4).spec.as_dict() == {"criteria": "overall", "judge": "import/f", "mode": "import",
                                               "source": "f.csv"}


# Version 8 differs from 9 by its indexes only: a store made now, its list indexes put back as
# version 8 had them.
V9_INDEXES = {"judgements": {"ix_judgements_judge_id": ["judge", "id"],
                             "ix_judgements_judge_consistent": ["judge", "consistent", "id"],
                             "ix_judgements_a": ["a_id", "b_id"], "ix_judgements_b": ["b_id", "a_id"]},
              "submissions": {"ix_submissions_model_scenario": ["model", "scenario"]}}
AS_VERSION_8 = """DROP INDEX ix_judgements_judge_id; DROP INDEX ix_judgements_judge_consistent;
DROP INDEX ix_judgements_a; DROP INDEX ix_judgements_b; DROP INDEX ix_submissions_model_scenario;
CREATE INDEX ix_judgements_judge ON judgements (judge); CREATE INDEX ix_submissions_model ON submissions (model);
UPDATE schema_version SET version = 8"""


def as_version_8(store: Store) -> None:
    with store.engine.begin() as conn:
        for statement in AS_VERSION_8.split(";"):
            conn.execute(text(statement))


def check_version_8_upgrade(store: Store) -> None:
    """The list indexes are there, the ones they replace gone (`test_a_version_8_database_is_upgraded`
    and its PostgreSQL twin)."""
    found = inspect(store.engine)
    for table, wanted in V9_INDEXES.items():
        indexes = {ix["name"]: ix["column_names"] for ix in found.get_indexes(table)}
        assert {name: indexes.get(name) for name in wanted} == wanted
        assert not {"ix_judgements_judge", "ix_submissions_model"} & indexes.keys()
    with store._read() as conn:
        assert conn.execute(select(s.schema_version.c.version)).scalars().all() == [SCHEMA_VERSION]


def test_a_version_8_database_is_upgraded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v8.db'}"
    made = Store(url)
    check_version_8_upgrade(made)  # a new database has them too
    as_version_8(made)
    made.close()
    store = Store(url)
    check_version_8_upgrade(store)
    store.close()
    again = Store(url)  # opening again changes nothing
    check_version_8_upgrade(again)
    again.close()


def test_a_version_9_database_is_upgraded(tmp_path: Path) -> None:
    """Version 9 had no reference answer and no conversation turns on submissions: they are added,
    NULL for the rows there, so a stored submission reads as before (a plain pair keeps its key)."""
    url = f"sqlite:///{tmp_path / 'v9.db'}"
    made = Store(url)
    made.add_submissions([NewSubmission("q1", "Q?", "m", "default", "out")])
    made.close()
    with sqlite3.connect(tmp_path / "v9.db") as conn:
        conn.executescript("ALTER TABLE submissions DROP COLUMN reference; ALTER TABLE submissions DROP COLUMN turns;"
                           "ALTER TABLE submissions DROP COLUMN turn; UPDATE schema_version SET version = 9")
    store = Store(url)
    columns = {c["name"] for c in inspect(store.engine).get_columns("submissions")}
    assert {"reference", "turns"} <= columns
    sub = store.select_submissions()[0]
    assert (sub.output, sub.reference, sub.turns, sub.judged_text) == ("out", None, None, "out")
    with store._read() as conn:
        assert conn.execute(select(s.schema_version.c.version)).scalars().all() == [SCHEMA_VERSION] == [11]
    store.close()


def test_a_version_10_database_is_upgraded(tmp_path: Path) -> None:
    """Version 10 kept no turn with a submission: it is added, read from each stored question id's
    `#turn<N>` (as the importers name a later turn) or the metadata's `turn` (`joust submit`'s,
    where the API hashed the question id), else 1, so `?turn=` finds the turns already stored."""
    url = f"sqlite:///{tmp_path / 'v10.db'}"
    made = Store(url)
    made.add_submissions([NewSubmission("81", "Q?", "m", "default", "one"),
                          NewSubmission("81#turn2", "Q2?", "m", "default", "two"),
                          NewSubmission("hashed", "Q3?", "m", "default", "three", metadata={"turn": 3}),
                          NewSubmission("notes", "Q4?", "m", "default", "four", metadata={"turn": "2", "x": 1}),
                          NewSubmission("q#turn", "Q5?", "m", "default", "five")])
    made.close()
    with sqlite3.connect(tmp_path / "v10.db") as conn:
        assert conn.execute("SELECT question_id, turn FROM submissions ORDER BY id").fetchall() == [
            ("81", 1), ("81#turn2", 2), ("hashed", 3), ("notes", 1), ("q#turn", 1)]  # stamped when stored
        conn.executescript("ALTER TABLE submissions DROP COLUMN turn; UPDATE schema_version SET version = 10")
    store = Store(url)
    with store._read() as conn:
        found = conn.execute(select(s.submissions.c.question_id, s.submissions.c.turn).order_by(s.submissions.c.id))
        assert [tuple(r) for r in found] == [("81", 1), ("81#turn2", 2), ("hashed", 3), ("notes", 1), ("q#turn", 1)]
        assert conn.execute(select(s.schema_version.c.version)).scalars().all() == [SCHEMA_VERSION] == [11]
    store.close()
