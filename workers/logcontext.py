"""The ids a worker's log lines carry: the match (and its tournament) being judged.

`judge_one` and the engine's task for a match set `MATCH_ID` and `TOURNAMENT_ID` (context
variables: each match runs as a task of its own, so they never mix), and `ContextFilter`,
installed on the process's log handlers by `install()`, stamps them on every record, which the
JSON format (`JOUST_LOG_FORMAT=json`, `service.ops.logs.JsonFormatter`) writes out.
"""
from __future__ import annotations

import logging
from contextvars import ContextVar

MATCH_ID: ContextVar[int | None] = ContextVar("joust_match_id", default=None)
TOURNAMENT_ID: ContextVar[int | None] = ContextVar("joust_tournament_id", default=None)


class ContextFilter(logging.Filter):
    """Stamp the current match and tournament ids on a record (kept if it has them already)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in (("match_id", MATCH_ID), ("tournament_id", TOURNAMENT_ID)):
            if getattr(record, name, None) is None:
                setattr(record, name, var.get())
        return True


def install() -> None:
    """Add the filter to every handler of the root logger (where every logger's lines end)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())
