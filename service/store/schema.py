"""The database schema, one definition for SQLite and PostgreSQL, created and migrated by joust.

Ratings are not stored: they are views computed from judgements, the single source of truth.
"""
from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Connection

SCHEMA_VERSION = 1

metadata = MetaData()

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, primary_key=True),
)

submissions = Table(
    "submissions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("question_id", String(255), nullable=False),
    Column("question", Text, nullable=False),
    Column("model", String(255), nullable=False),
    Column("scenario", String(255), nullable=False),
    Column("output", Text, nullable=False),
    Column("output_hash", String(64), nullable=False),
    Column("question_hash", String(64), nullable=False),
    Column("metadata", Text, nullable=False, default="{}"),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("question_id", "model", "scenario", name="uq_submission_key"),
)
Index("ix_submissions_model", submissions.c.model)
Index("ix_submissions_scenario", submissions.c.scenario)

tournaments = Table(
    "tournaments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False),
    Column("spec", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("started_at", Float),
    Column("finished_at", Float),
    Column("schedule", String(255)),
    Column("next_run_at", Float),
    Column("parent_id", Integer, ForeignKey("tournaments.id")),
)
Index("ix_tournaments_next_run", tournaments.c.next_run_at)

judgements = Table(
    "judgements",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("key", String(64), nullable=False, unique=True),
    Column("judge", String(255), nullable=False),
    Column("criteria", String(64), nullable=False),
    Column("template_version", String(64), nullable=False),
    Column("a_id", Integer, ForeignKey("submissions.id"), nullable=False),
    Column("b_id", Integer, ForeignKey("submissions.id"), nullable=False),
    Column("a_hash", String(64), nullable=False),
    Column("outcome", String(8), nullable=False),
    Column("consistent", Boolean, nullable=False),
    Column("calls", Text, nullable=False),
    Column("input_tokens", Integer, nullable=False, default=0),
    Column("output_tokens", Integer, nullable=False, default=0),
    Column("cost_usd", Float, nullable=False, default=0.0),
    Column("created_at", Float, nullable=False),
)
Index("ix_judgements_judge", judgements.c.judge)

matches = Table(
    "matches",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("tournament_id", Integer, ForeignKey("tournaments.id"), nullable=False),
    Column("a_id", Integer, ForeignKey("submissions.id"), nullable=False),
    Column("b_id", Integer, ForeignKey("submissions.id"), nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("job_id", String(64)),
    Column("last_error", Text),
    Column("judgement_id", Integer, ForeignKey("judgements.id")),
    Column("outcome", String(8)),
    Column("consistent", Boolean),
    Column("enqueued_at", Float),
    Column("started_at", Float),
    Column("finished_at", Float),
    UniqueConstraint("tournament_id", "a_id", "b_id", name="uq_match_pair"),
)
Index("ix_matches_tournament_status", matches.c.tournament_id, matches.c.status)
Index("ix_matches_status", matches.c.status)
Index("ix_matches_judgement", matches.c.judgement_id)


def migrate(conn: Connection) -> None:
    """Create the schema when absent and record its version; refuse a newer database."""
    metadata.create_all(conn)
    current = conn.execute(schema_version.select()).scalars().all()
    if not current:
        conn.execute(schema_version.insert().values(version=SCHEMA_VERSION))
    elif max(current) > SCHEMA_VERSION:
        raise RuntimeError(
            f"the database has schema version {max(current)}, newer than this joust "
            f"({SCHEMA_VERSION}); upgrade joust"
        )
