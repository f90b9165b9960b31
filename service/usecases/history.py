"""Board history: every finished run of a scheduled (or adaptive) tournament snapshots its board.

The scheduler's tick takes the snapshots: for each finished run without one, the tournament's
board (all its runs so far) at each level, stored once per run (a unique row per run and level,
so two schedulers never store it twice). `GET /api/leaderboard/history` reads them back.
"""
from __future__ import annotations

import logging
import math

from leaderboard.board import build_board
from leaderboard.players import battles_at_level
from service.store import Store

log = logging.getLogger(__name__)

LEVELS = ("model", "scenario", "model+scenario")


def _number(value: float) -> float | None:
    """JSON-safe: NaN and infinities become None."""
    return float(value) if math.isfinite(value) else None


def board_rows(store: Store, tournament_id: int, level: str) -> list[dict]:
    """The tournament's board at one level as snapshot rows, best first."""
    battles = battles_at_level(store.side_rows(tournament_id=tournament_id), level)
    return [
        {"player": r.player, "rating": _number(r.rating), "ci_low": _number(r.ci_low), "ci_high": _number(r.ci_high)}
        for r in build_board(battles)
    ]


def take_snapshots(store: Store) -> list[int]:
    """Snapshot every finished run that has none yet; the run ids this call stored."""
    taken = []
    for run in store.runs_to_snapshot():
        boards = {level: board_rows(store, run.tournament, level) for level in LEVELS}
        if store.save_snapshots(run.tournament, run.run, boards):
            log.info("snapshot of run %d of tournament %d", run.run, run.tournament)
            taken.append(run.run)
    return taken
