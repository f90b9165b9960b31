"""RQ job entry points. Jobs carry match ids only; the database holds the rest.

`judge_match` hands its match to the process's engine (`workers.engine`), which judges dozens of
matches at once (`workers.match.judge_one`), and returns as soon as the engine has taken it, so
RQ gives the worker its next job while earlier matches still wait on the judge. From then on the
match's lease (`workers.leases`), not the RQ job, says that a live worker holds it.

Only `joust worker` (RQ's `SimpleWorker`, jobs in the worker's own process) may run these jobs: a
forking worker would judge in a work-horse that exits after each job.
"""
from __future__ import annotations

from . import logcontext, runtime


def judge_match(match_id: int) -> str:
    """Give one match to this process's engine: "admitted", "requeued" (this process stayed full
    too long: another worker takes it) or "skipped" (it is in flight here already)."""
    token = logcontext.MATCH_ID.set(match_id)  # the lines of handing it over say which match
    try:
        return runtime.engine().admit(match_id)
    finally:
        logcontext.MATCH_ID.reset(token)
