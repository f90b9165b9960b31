"""Cron expressions for recurring tournaments, evaluated in UTC.

A schedule is accepted only when it is a five-field expression croniter understands *and* it
fires within a year of now (`HORIZON_S`): `0 0 31 2 *` (February 31st) is well formed but never
fires, and `0 0 29 2 *` fires once in four years; neither makes a recurring tournament.
"""
from __future__ import annotations

from datetime import datetime, timezone

from croniter import croniter

# How soon a schedule must fire next: a year, leap day included.
HORIZON_S = 366 * 24 * 3600


def is_valid(expression: str) -> bool:
    """True for a five-field cron expression croniter understands."""
    return len(expression.split()) == 5 and croniter.is_valid(expression)


def next_due(expression: str, after: float) -> float:
    """The first due time strictly after `after` (unix seconds, UTC)."""
    start = datetime.fromtimestamp(after, tz=timezone.utc)
    return float(croniter(expression, start).get_next(float))


def next_due_within(expression: str, after: float, horizon_s: float = HORIZON_S) -> float | None:
    """The first due time after `after` when it comes within `horizon_s` seconds, else None
    (never, or later than that; also None for an expression croniter cannot evaluate)."""
    start = datetime.fromtimestamp(after, tz=timezone.utc)
    years = max(1, int(horizon_s // (365 * 24 * 3600)) + 1)
    try:
        due = float(croniter(expression, start, max_years_between_matches=years).get_next(float))
    except (ValueError, OverflowError, KeyError, IndexError):  # croniter's errors are ValueErrors
        return None
    return due if due - after <= horizon_s else None
