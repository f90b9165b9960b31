"""Cron expressions for recurring tournaments, evaluated in UTC."""
from __future__ import annotations

from datetime import datetime, timezone

from croniter import croniter


def is_valid(expression: str) -> bool:
    """True for a five-field cron expression croniter understands."""
    return len(expression.split()) == 5 and croniter.is_valid(expression)


def next_due(expression: str, after: float) -> float:
    """The first due time strictly after `after` (unix seconds, UTC)."""
    start = datetime.fromtimestamp(after, tz=timezone.utc)
    return float(croniter(expression, start).get_next(float))
