"""Creating the schema, and upgrading a database an older joust wrote, in place.

Each upgrade runs once, inside the store's first write transaction (`base.Database`), so a
failure leaves the database as it was; a database newer than this joust is refused.
"""
from __future__ import annotations

import json

from sqlalchemy import inspect, select, text, update
from sqlalchemy.engine import Connection

from leaderboard.keys import SCORED_ALONE, judgement_key
from leaderboard.turns import turn_of
from leaderboard.types import MatchStatus, Mode, OrderPolicy

from .schema import (
    COUNTERS,
    SCHEMA_VERSION,
    counters,
    judgements,
    matches,
    metadata,
    schema_version,
    submissions,
    tournaments,
)


def migrate(conn: Connection) -> None:
    """Create the schema when absent, upgrade an older one in place, refuse a newer one."""
    metadata.create_all(conn)  # new tables (and every table of a new database)
    current = conn.execute(schema_version.select()).scalars().all()
    version = max(current) if current else None
    if version is not None and version > SCHEMA_VERSION:
        raise RuntimeError(
            f"the database has schema version {version}, newer than this joust "
            f"({SCHEMA_VERSION}); upgrade joust"
        )
    if version == 1:
        _upgrade_1_to_2(conn)
    if version is not None and version < 3:
        _upgrade_2_to_3(conn)
    if version is not None and version < 4:
        _upgrade_3_to_4(conn)
    if version is not None and version < 5:
        _upgrade_4_to_5(conn)
    if version is not None and version < 6:
        _upgrade_5_to_6(conn)
    if version is not None and version < 7:
        _upgrade_6_to_7(conn)
    if version is not None and version < 8:
        _upgrade_7_to_8(conn)
    if version is not None and version < 9:
        _upgrade_8_to_9(conn)
    if version is not None and version < 10:
        _upgrade_9_to_10(conn)
    if version is not None and version < 11:
        _upgrade_10_to_11(conn)
    if version != SCHEMA_VERSION:
        conn.execute(schema_version.delete())
        conn.execute(schema_version.insert().values(version=SCHEMA_VERSION))
    for name in COUNTERS:
        if conn.execute(select(counters.c.value).where(counters.c.name == name)).first() is None:
            conn.execute(counters.insert().values(name=name, value=0))


def _upgrade_1_to_2(conn: Connection) -> None:
    """Add matches.seq and matches.counted, stamped for the matches already resolved."""
    conn.execute(text("ALTER TABLE matches ADD COLUMN seq INTEGER"))
    conn.execute(text("ALTER TABLE matches ADD COLUMN counted BOOLEAN NOT NULL DEFAULT FALSE"))
    conn.execute(text("DROP INDEX IF EXISTS ix_matches_judgement"))
    # Plain SQL: an Index object built here would attach itself to the table's metadata.
    conn.execute(text("CREATE INDEX ix_matches_judgement ON matches (judgement_id, a_id, b_id)"))
    conn.execute(text("CREATE UNIQUE INDEX ix_matches_seq ON matches (seq)"))
    done = conn.execute(
        select(matches.c.id, matches.c.judgement_id, matches.c.a_id, matches.c.b_id)
        .where(matches.c.status == MatchStatus.DONE)
        .order_by(matches.c.judgement_id, matches.c.id)
    ).all()
    seen: set[tuple[int, int, int]] = set()
    for seq, row in enumerate(done, start=1):
        pair = (row.judgement_id, min(row.a_id, row.b_id), max(row.a_id, row.b_id))
        conn.execute(
            update(matches).where(matches.c.id == row.id).values(seq=seq, counted=pair not in seen)
        )
        seen.add(pair)
    conn.execute(counters.insert().values(name="resolved", value=len(done)))


def _upgrade_2_to_3(conn: Connection) -> None:
    """judgements.cost_usd may be NULL (no price known); add judgements.match_id (who paid) and
    judgements.analysis, and tournaments.stopped_reason."""
    # Renaming, adding and dropping a column is the one way to drop NOT NULL that both SQLite
    # (3.35+) and PostgreSQL take inside a transaction.
    conn.execute(text("ALTER TABLE judgements RENAME COLUMN cost_usd TO cost_usd_v2"))
    conn.execute(text("ALTER TABLE judgements ADD COLUMN cost_usd FLOAT"))
    conn.execute(text("UPDATE judgements SET cost_usd = cost_usd_v2"))
    conn.execute(text("ALTER TABLE judgements DROP COLUMN cost_usd_v2"))
    conn.execute(text("ALTER TABLE judgements ADD COLUMN match_id INTEGER"))
    conn.execute(text("ALTER TABLE judgements ADD COLUMN analysis TEXT"))
    conn.execute(text("CREATE INDEX ix_judgements_match ON judgements (match_id)"))
    conn.execute(text("ALTER TABLE tournaments ADD COLUMN stopped_reason VARCHAR(32)"))


def _upgrade_3_to_4(conn: Connection) -> None:
    """Add tournaments.rounds (adaptive rounds planned); board_snapshots is a new table, made by
    create_all."""
    conn.execute(text("ALTER TABLE tournaments ADD COLUMN rounds INTEGER NOT NULL DEFAULT 0"))


def _upgrade_4_to_5(conn: Connection) -> None:
    """Add matches.failed_cost_usd (what failed attempts paid); NULL for the matches already
    there, whose failed attempts were never metered."""
    conn.execute(text("ALTER TABLE matches ADD COLUMN failed_cost_usd FLOAT"))


def _upgrade_5_to_6(conn: Connection) -> None:
    """Add tournaments.failure_streak (a failing judge stops its run), tournaments.retried and
    tournaments.delivery (every run before was live)."""
    conn.execute(text("ALTER TABLE tournaments ADD COLUMN failure_streak INTEGER NOT NULL DEFAULT 0"))
    conn.execute(text("ALTER TABLE tournaments ADD COLUMN retried INTEGER NOT NULL DEFAULT 0"))
    conn.execute(text("ALTER TABLE tournaments ADD COLUMN delivery VARCHAR(8) NOT NULL DEFAULT 'live'"))


def _upgrade_7_to_8(conn: Connection) -> None:
    """Add created_by (the API key that wrote the row) to submissions, tournaments and judgements
    (votes); NULL for the rows already there. api_keys is a new table, made by create_all."""
    for table in ("submissions", "tournaments", "judgements"):
        conn.execute(text(f"ALTER TABLE {table} ADD COLUMN created_by VARCHAR(64)"))


def _upgrade_8_to_9(conn: Connection) -> None:
    """Index what a list of judgements goes by (`store.judgement_lists`, see schema): a judge's
    in id order (in place of the judge's own index, a prefix of it), its inconsistent ones, each
    side's submission with the other's, and a submission's model with its scenario (in place of
    the model's own index); and a tournament's matches by resolve and by finish time (the
    tournament pages). Built inside the upgrade's transaction: on PostgreSQL writers wait
    for it (seconds at a million judgements), readers do not."""
    conn.execute(text("DROP INDEX IF EXISTS ix_judgements_judge"))
    conn.execute(text("DROP INDEX IF EXISTS ix_submissions_model"))
    for name, table, columns in (("ix_judgements_judge_id", "judgements", "judge, id"),
                                 ("ix_judgements_judge_consistent", "judgements", "judge, consistent, id"),
                                 ("ix_judgements_a", "judgements", "a_id, b_id"),
                                 ("ix_judgements_b", "judgements", "b_id, a_id"),
                                 ("ix_submissions_model_scenario", "submissions", "model, scenario"),
                                 # a tournament's newest resolve (its board is rebuilt only when it moves)
                                 # and its pace (matches finished lately: a range, not a scan)
                                 ("ix_matches_tournament_seq", "matches", "tournament_id, seq"),
                                 ("ix_matches_tournament_finished", "matches", "tournament_id, status, finished_at")):
        conn.execute(text(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({columns})"))


def _upgrade_9_to_10(conn: Connection) -> None:
    """Add a submission's reference answer and a conversation's turns; NULL (none) for the rows
    already there, whose judgement keys therefore stay as they were. (A store whose version was
    set back keeps the columns it has.)"""
    present = {c["name"] for c in inspect(conn).get_columns("submissions")}
    for column in ("reference", "turns"):
        if column not in present:
            conn.execute(text(f"ALTER TABLE submissions ADD COLUMN {column} TEXT"))


def _upgrade_10_to_11(conn: Connection) -> None:
    """Add submissions.turn (`leaderboard.turns`): 1, except for the rows whose question id ends
    in `#turn<N>` or whose metadata states a `turn`, read a chunk at a time."""
    if "turn" not in {c["name"] for c in inspect(conn).get_columns("submissions")}:
        conn.execute(text("ALTER TABLE submissions ADD COLUMN turn INTEGER NOT NULL DEFAULT 1"))
    t = submissions
    stated = t.c.question_id.contains("#turn", autoescape=True) | t.c.metadata.contains('"turn"', autoescape=True)
    last = 0
    while True:
        rows = conn.execute(select(t.c.id, t.c.question_id, t.c.metadata).where(stated, t.c.id > last)
                            .order_by(t.c.id).limit(MIGRATION_CHUNK)).all()
        if not rows:
            return
        last = rows[-1].id
        by_turn: dict[int, list[int]] = {}
        for row in rows:
            try:
                found = json.loads(row.metadata or "{}")
            except ValueError:
                found = {}
            turn = turn_of(row.question_id, found if isinstance(found, dict) else {})
            if turn != 1:
                by_turn.setdefault(turn, []).append(row.id)
        for turn, ids in by_turn.items():
            conn.execute(update(t).where(t.c.id.in_(ids)).values(turn=turn))


MIGRATION_CHUNK = 2000  # rows read at a time while upgrading: memory stays bounded on a large store


def _upgrade_6_to_7(conn: Connection) -> None:
    """Add tournaments.mode (from each spec), matches.failed_calls (none were counted before) and
    judgements.order_policy; a worker's pairwise judgement made with one call was judged with
    order "single": it gets that policy and its key gets the policy, so a run asking for both
    orders no longer takes it; one with two calls was "both", whose key is unchanged."""
    conn.execute(text("ALTER TABLE tournaments ADD COLUMN mode VARCHAR(16) NOT NULL DEFAULT 'round_robin'"))
    conn.execute(text("ALTER TABLE matches ADD COLUMN failed_calls INTEGER NOT NULL DEFAULT 0"))
    conn.execute(text("ALTER TABLE judgements ADD COLUMN order_policy VARCHAR(8)"))
    t = tournaments
    by_mode: dict[str, list[int]] = {}
    for row in conn.execute(select(t.c.id, t.c.spec)):
        by_mode.setdefault(_stored_mode(row.spec), []).append(row.id)
    for mode, ids in by_mode.items():
        if mode != Mode.ROUND_ROBIN.value:
            for start in range(0, len(ids), MIGRATION_CHUNK):
                conn.execute(update(t).where(t.c.id.in_(ids[start:start + MIGRATION_CHUNK])).values(mode=mode))
    _key_order_policies(conn)


def _stored_mode(spec: str) -> str:
    try:
        mode = json.loads(spec).get("mode")
    except (ValueError, AttributeError):
        return Mode.ROUND_ROBIN.value
    return mode if mode in {m.value for m in Mode} else Mode.ROUND_ROBIN.value


def _key_order_policies(conn: Connection) -> None:
    """Stamp each worker-made pairwise judgement with its order policy (one call: single, two:
    both) and move a single one to its single key, where its legacy key is the one this joust
    computes from its two submissions (anything else keeps its key)."""
    j, sa, sb = judgements, submissions.alias("sa"), submissions.alias("sb")
    made = (j.c.template_version != "import") & j.c.criteria.not_in(sorted(SCORED_ALONE))
    last = 0
    while True:
        rows = conn.execute(
            select(j.c.id, j.c.calls).where(made, j.c.id > last).order_by(j.c.id).limit(MIGRATION_CHUNK)
        ).all()
        if not rows:
            return
        last = rows[-1].id
        policy: dict[str, list[int]] = {}
        for row in rows:
            found = {1: OrderPolicy.SINGLE.value, 2: OrderPolicy.BOTH.value}.get(len(json.loads(row.calls or "[]")))
            if found is not None:
                policy.setdefault(found, []).append(row.id)
        for value, ids in policy.items():
            conn.execute(update(j).where(j.c.id.in_(ids)).values(order_policy=value))
        singles = policy.get(OrderPolicy.SINGLE.value, [])
        if not singles:
            continue
        found_rows = conn.execute(
            select(j.c.id, j.c.key, j.c.judge, j.c.criteria, j.c.template_version, sa.c.question,
                   sa.c.output.label("output_a"), sb.c.output.label("output_b"))
            .join(sa, sa.c.id == j.c.a_id).join(sb, sb.c.id == j.c.b_id).where(j.c.id.in_(singles))
        ).all()
        for r in found_rows:
            legacy = (r.judge, r.template_version, r.criteria, r.question, r.output_a, r.output_b)
            if judgement_key(*legacy) == r.key:
                conn.execute(update(j).where(j.c.id == r.id).values(key=judgement_key(*legacy, OrderPolicy.SINGLE)))
