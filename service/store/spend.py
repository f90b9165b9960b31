"""What tournaments spent: each run's own figure, and what the runs under a tournament spent.

A run's spend is the sum of `cost_usd` over the judgements its own matches made (the
judgement's `match_id`), plus what its matches' attempts paid for calls no judgement records
(`matches.failed_cost_usd`: a compqa or factsim match that failed after some calls, a retried
attempt); a match answered by a stored judgement made nothing and paid nothing. A judgement
whose judge has no price adds nothing (its cost is NULL).

A schedule's runs, a panel's members' runs (and a scheduled panel's runs' members) hang under
their tournament by `parent_id`. Their spend is kept apart from the tournament's own (which its
budget caps, run by run) and rolled up beside it, so a schedule whose first run cost nothing
does not read $0 while its nightly runs spend dollars.
"""
from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from . import schema as s

CHUNK = 500  # ids per IN (...) clause: well under every backend's bound-parameter limit


def own_spend(conn: Connection, tournament_ids: Sequence[int]) -> dict[int, float]:
    """Tournament id -> USD its matches' judgements cost plus what their failed attempts paid
    (tournaments that spent nothing absent)."""
    j, m = s.judgements, s.matches
    spend: dict[int, float] = {}
    ids = list(tournament_ids)
    for start in range(0, len(ids), CHUNK):
        part = ids[start:start + CHUNK]
        judged = conn.execute(
            select(m.c.tournament_id, func.sum(j.c.cost_usd))
            .join(m, m.c.id == j.c.match_id)
            .where(m.c.tournament_id.in_(part))
            .group_by(m.c.tournament_id)
        )
        failed = conn.execute(
            select(m.c.tournament_id, func.sum(m.c.failed_cost_usd))
            .where(m.c.tournament_id.in_(part), m.c.failed_cost_usd.is_not(None))
            .group_by(m.c.tournament_id)
        )
        for tid, total in [*judged, *failed]:
            spend[tid] = spend.get(tid, 0.0) + float(total or 0.0)
    return spend


def runs_under(conn: Connection, tournament_ids: Sequence[int]) -> dict[int, int]:
    """Every run under the given tournaments, at any depth -> the one of them it hangs under.
    One query per level of runs (two at most: a scheduled panel's runs and their members)."""
    t = s.tournaments
    owner: dict[int, int] = {}
    frontier = {tid: tid for tid in tournament_ids}
    while frontier:  # a run's parent is always an older tournament: no cycle
        below: dict[int, int] = {}
        parents = list(frontier)
        for start in range(0, len(parents), CHUNK):
            for child, parent in conn.execute(
                select(t.c.id, t.c.parent_id).where(t.c.parent_id.in_(parents[start:start + CHUNK]))
            ):
                below[child] = frontier[parent]
        owner.update(below)
        frontier = below
    return owner


def runs_spend(conn: Connection, tournament_ids: Sequence[int]) -> dict[int, float]:
    """Tournament id -> USD spent by the runs under it, at any depth (every id present; 0.0 for
    none)."""
    owner = runs_under(conn, tournament_ids)
    rolled = {tid: 0.0 for tid in tournament_ids}
    for run, spent in own_spend(conn, list(owner)).items():
        rolled[owner[run]] += spent
    return rolled
