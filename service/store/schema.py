"""The database schema, one definition for SQLite and PostgreSQL, created and migrated by joust
(`service.store.migrations` upgrades an older one in place).

Ratings are not stored: they are views computed from judgements, the single source of truth.
"""
from __future__ import annotations

from enum import Enum

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
from sqlalchemy.types import TypeDecorator

SCHEMA_VERSION = 11

metadata = MetaData()


class Status(TypeDecorator[str]):
    """A status column: the store's queries name statuses by their enum (`MatchStatus`,
    `TournamentStatus`), stored as the plain string; reads give the string back, so every
    answer and export reads exactly as before."""

    impl = String(16)
    cache_ok = True

    def process_bind_param(self, value: object, dialect: object) -> object:
        return value.value if isinstance(value, Enum) else value

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
    # The name of the API key that stored it ("admin": the admin key); NULL: a local command or
    # a store older than keys.
    Column("created_by", String(64)),
    # The question's reference answer as this submission states it (the question's submissions
    # agree on it), and a conversation's turns (`leaderboard.conversation.canonical`), whose
    # assistant turns are then `output`; NULL: none (schema 10).
    Column("reference", Text),
    Column("turns", Text),
    # The turn of a multi-turn question it answers (`leaderboard.turns.turn_of`; 1 for a
    # single-turn question): what `?turn=` scopes boards and judge health by (schema 11).
    Column("turn", Integer, nullable=False, default=1, server_default="1"),
    UniqueConstraint("question_id", "model", "scenario", name="uq_submission_key"),
)
# A player at each level (`leaderboard.players.keys_of`): a model, a scenario, or both (a system).
Index("ix_submissions_model_scenario", submissions.c.model, submissions.c.scenario)
Index("ix_submissions_scenario", submissions.c.scenario)

tournaments = Table(
    "tournaments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False),
    Column("spec", Text, nullable=False),
    Column("status", Status(), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("started_at", Float),
    Column("finished_at", Float),
    Column("schedule", String(255)),
    Column("next_run_at", Float),
    Column("parent_id", Integer, ForeignKey("tournaments.id")),
    # Why a run ended before judging all its matches, when it was not asked to: "budget".
    Column("stopped_reason", String(32)),
    # Adaptive tournaments: how many rounds were planned; a planner claims the next round by
    # moving it with a compare-and-set, so two schedulers never plan one round twice.
    Column("rounds", Integer, nullable=False, default=0, server_default="0"),
    # Matches that ended failed in a row, with no judgement made between them: the run stops
    # itself ("failing") when this reaches the worker's limit, rather than failing every match.
    Column("failure_streak", Integer, nullable=False, default=0, server_default="0"),
    # Matches handed out again by POST /api/tournaments/{id}/retry, over all its retries.
    Column("retried", Integer, nullable=False, default=0, server_default="0"),
    # How its calls reach the provider: "live" (RQ jobs, the workers' engines) or "batch" (the
    # provider's batch API, driven by workers.batches); also in the spec, here to filter on.
    Column("delivery", String(8), nullable=False, default="live", server_default="live"),
    # The spec's mode, here to filter on (an adaptive run stays open between rounds; adaptive
    # runs are snapshotted): the spec itself is JSON text.
    Column("mode", String(16), nullable=False, default="round_robin", server_default="round_robin"),
    # The name of the API key that created it (a scheduled run: its parent's); NULL: a local command.
    Column("created_by", String(64)),
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
    # USD, the sum over the calls; NULL when the judge's model has no price (never a guess).
    Column("cost_usd", Float),
    Column("created_at", Float, nullable=False),
    # The match whose worker made (and paid for) this judgement; NULL for imports. A
    # tournament's spend is the cost of the judgements its matches made.
    Column("match_id", Integer),
    # The tie analysis (JSON), once asked for and answered.
    Column("analysis", Text),
    # The order policy it was judged with ("both", "single"; part of its key): a run asking for
    # both orders never takes a single-order judgement. NULL: the order does not matter
    # (criteria that score outputs alone, imports).
    Column("order_policy", String(8)),
    # Human votes: the name of the API key that filed it; NULL for everything else.
    Column("created_by", String(64)),
)
Index("ix_judgements_match", judgements.c.match_id)
# For lists of judgements (`store.judgement_lists`): one judge's newest first (PostgreSQL keeps
# equal keys in no id order; SQLite's index holds the rowid anyway), its inconsistent ones
# newest first (often none: single-order judges, imports, votes), and a player's through its
# submissions, the other side's submission read in the index.
Index("ix_judgements_judge_id", judgements.c.judge, judgements.c.id)
Index("ix_judgements_judge_consistent", judgements.c.judge, judgements.c.consistent, judgements.c.id)
Index("ix_judgements_a", judgements.c.a_id, judgements.c.b_id)
Index("ix_judgements_b", judgements.c.b_id, judgements.c.a_id)

matches = Table(
    "matches",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("tournament_id", Integer, ForeignKey("tournaments.id"), nullable=False),
    Column("a_id", Integer, ForeignKey("submissions.id"), nullable=False),
    Column("b_id", Integer, ForeignKey("submissions.id"), nullable=False),
    Column("status", Status(), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("job_id", String(64)),
    Column("last_error", Text),
    Column("judgement_id", Integer, ForeignKey("judgements.id")),
    Column("outcome", String(8)),
    Column("consistent", Boolean),
    Column("enqueued_at", Float),
    Column("started_at", Float),
    Column("finished_at", Float),
    # Stamped from the `resolved` counter when the match is resolved: the order ratings replay,
    # and the cursor an incremental board reads from.
    Column("seq", Integer),
    # True for the first resolved match of its (judgement, pair of submissions): a judgement
    # counts once however many tournaments include its pair.
    Column("counted", Boolean, nullable=False, default=False),
    # USD its attempts paid for calls that no stored judgement records (an attempt that failed
    # after paying, or whose judgement a twin stored first); NULL: none. Part of the run's spend.
    Column("failed_cost_usd", Float),
    # The calls those attempts received replies for (priced or not): an adaptive run's
    # `max_calls` counts them.
    Column("failed_calls", Integer, nullable=False, default=0, server_default="0"),
    UniqueConstraint("tournament_id", "a_id", "b_id", name="uq_match_pair"),
)
Index("ix_matches_tournament_status", matches.c.tournament_id, matches.c.status)
Index("ix_matches_status", matches.c.status)
Index("ix_matches_judgement", matches.c.judgement_id, matches.c.a_id, matches.c.b_id)
Index("ix_matches_seq", matches.c.seq, unique=True)
Index("ix_matches_tournament_seq", matches.c.tournament_id, matches.c.seq)
Index("ix_matches_tournament_finished", matches.c.tournament_id, matches.c.status, matches.c.finished_at)

# The board (one level) when a scheduled tournament's run finished: one row per player.
board_snapshots = Table(
    "board_snapshots",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("tournament_id", Integer, ForeignKey("tournaments.id"), nullable=False),
    Column("run_id", Integer, ForeignKey("tournaments.id"), nullable=False),
    Column("level", String(16), nullable=False),
    Column("taken_at", Float, nullable=False),
    Column("rows", Text, nullable=False),
    UniqueConstraint("run_id", "level", name="uq_snapshot_run_level"),
)
Index("ix_board_snapshots_tournament", board_snapshots.c.tournament_id, board_snapshots.c.run_id)

# One row per counter. `resolved`: matches ever resolved, the boards' revision (each resolved
# match is stamped with it). `changes`: write transactions that may have changed what a page
# shows (`base.Database._write`). Both rows are made when absent, on any database (no version
# bump: an older joust leaves `changes` still, but still moves `resolved`).
RESOLVED, CHANGES = "resolved", "changes"
COUNTERS = (RESOLVED, CHANGES)
counters = Table(
    "counters",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", Integer, nullable=False),
)

scores = Table(
    "scores",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("submission_id", Integer, ForeignKey("submissions.id"), nullable=False),
    Column("judge", String(255), nullable=False),
    Column("criteria", String(64), nullable=False),
    Column("total", Float, nullable=False),
    Column("detail", Text, nullable=False, default="{}"),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("submission_id", "judge", "criteria", name="uq_score"),
)
Index("ix_scores_judge", scores.c.judge, scores.c.criteria)

# Message Batches (workers.batches). A request is stored once under its custom_id, a hash of its
# content, so two runs asking the same judgement (twins) share it and it is paid once; its
# status goes pending -> submitted -> succeeded | errored | expired | canceled. New tables: made
# by create_all on any database, no version bump.
batch_requests = Table(
    "batch_requests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("custom_id", String(64), nullable=False, unique=True),
    Column("judge", String(255), nullable=False),
    Column("model", String(255), nullable=False),
    Column("params", Text, nullable=False),  # the Messages API params, JSON, as submitted
    Column("size", Integer, nullable=False),  # bytes of the request in a create call
    Column("status", String(16), nullable=False),
    Column("batch_id", Integer, ForeignKey("batches.id")),  # the batch it is in (or last was)
    Column("attempts", Integer, nullable=False, default=0),  # times submitted
    Column("text", Text),
    Column("input_tokens", Integer),
    Column("output_tokens", Integer),
    Column("error", Text),
    # errored for good (invalid_request_error...): asking again would get the same answer
    Column("permanent", Boolean, nullable=False, default=False),
    # The run whose budget reserved its estimated cost (workers.budget), settled at its result.
    Column("tournament_id", Integer),
    Column("reserved_usd", Float),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)
Index("ix_batch_requests_status", batch_requests.c.status, batch_requests.c.model)
Index("ix_batch_requests_batch", batch_requests.c.batch_id, batch_requests.c.status)

# One provider batch: "creating" is written before the create call (with its request count and
# time), so a driver that died before storing the provider's id can adopt the batch afterwards.
batches = Table(
    "batches",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("provider_id", String(128), unique=True),
    Column("model", String(255), nullable=False),
    Column("status", String(16), nullable=False),  # creating, in_progress, canceling, ended, abandoned
    Column("request_count", Integer, nullable=False),
    Column("counts", Text, nullable=False, default="{}"),  # the provider's request_counts, JSON
    Column("created_at", Float, nullable=False),
    Column("ended_at", Float),
    Column("error", Text),
)
Index("ix_batches_status", batches.c.status)

# Every request each batch held (a request re-submitted is in several).
batch_members = Table(
    "batch_members",
    metadata,
    Column("batch_id", Integer, ForeignKey("batches.id"), primary_key=True),
    Column("custom_id", String(64), primary_key=True),
)
Index("ix_batch_members_request", batch_members.c.custom_id)

# The requests a match of a batch run asked for: it is replayed once none is pending or submitted.
match_waits = Table(
    "match_waits",
    metadata,
    Column("match_id", Integer, ForeignKey("matches.id"), primary_key=True),
    Column("custom_id", String(64), primary_key=True),
)
Index("ix_match_waits_request", match_waits.c.custom_id)

# API keys an admin issued (`service.web.auth`): only the SHA-256 of the secret is kept, with its first
# characters (`prefix`) to recognise it by; `scopes` is a comma-separated list (submit, vote, run,
# admin; empty: reads only). A revoked key keeps its row (and its name, which writes record).
api_keys = Table(
    "api_keys",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("prefix", String(16), nullable=False),
    Column("secret_hash", String(64), nullable=False, unique=True),
    Column("scopes", String(255), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("created_by", String(64)),
    Column("revoked_at", Float),
)
