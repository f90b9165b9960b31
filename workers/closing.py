"""Releasing what a stopping engine holds, one bounded step at a time.

Why bounded: a step that never ends (a client whose peer never answers its goodbye, a pool
waiting for a connection a cancelled call kept) would hold a stopping worker, and the process
that waits on it, for as long as it hangs. Each step gets `CLOSE_STEP_S`; one that fails or
runs out is logged with what the loop was doing, and the next step runs all the same.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

CLOSE_STEP_S = 5.0


async def release(steps: list[tuple[str, Awaitable[object]]], explain: Callable[[], str],
                  timeout_s: float = CLOSE_STEP_S) -> list[str]:
    """Await each step within `timeout_s`; the names of those that failed or hung."""
    failed = []
    for what, step in steps:
        try:
            await asyncio.wait_for(step, timeout_s)
        except Exception as exc:  # noqa: BLE001 - the rest is released all the same
            failed.append(what)
            log.warning("closing %s failed (%r); going on. The loop:\n%s", what, exc, explain())
    return failed
