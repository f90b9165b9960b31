"""Schema migration: a version-1 database (before matches had seq and counted) upgrades in place."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from service.store import Store

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
INSERT INTO tournaments VALUES (1,'t1','{}','done',0,0,0,NULL,NULL,NULL), (2,'t2','{}','done',0,0,0,NULL,NULL,NULL);
INSERT INTO judgements VALUES (1,'k','anthropic/x','overall','v',1,2,'hx','A',1,'[]',0,0,0,0);
INSERT INTO matches VALUES (1,1,1,2,'done',1,NULL,NULL,1,'A',1,0,0,0), (2,2,1,2,'done',0,NULL,NULL,1,'A',1,0,0,0),
  (3,2,2,1,'pending',0,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL);
"""


def test_a_version_1_database_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(V1)
    store = Store(f"sqlite:///{path}")
    assert store.revision() == 2
    with sqlite3.connect(path) as conn:
        assert conn.execute("select max(version) from schema_version").fetchone() == (2,)
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
