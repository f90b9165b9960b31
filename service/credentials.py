"""Where a judge's credentials are checked, when the API and the workers may be different
machines.

Only the workers call a judge, so only they need its credentials: in docker compose (or on
several machines) the API holds no provider key at all. So a judge is checked twice:

- When a tournament is created, the API accepts a judge that it can reach itself (`joust up`:
  every role shares one environment) or that a live worker can reach: each `joust worker` says
  what it can reach in its RQ registration (`Settings.reach()`, the names of what is set, never
  a key), and the API reads the live workers' word (`service.ops.liveness.worker_reaches`).
  Otherwise it refuses with 422, naming the variable to set and where. With Redis down the
  workers cannot be asked and the judge is accepted, as any write is then.
- When a worker takes a match, it checks its own settings (`workers.registry.build_judge`): a
  worker without the key (a scheduled run after the key was removed, another machine set up
  without it) fails the match at once naming the variable, sends nothing, and the run stops
  itself after `JOUST_STOP_AFTER_FAILURES` such failures, the reason on each failed match.
"""
from __future__ import annotations

from collections.abc import Callable

from leaderboard.reach import Reach
from service.config import Settings


def unreachable(judge: str, here: Settings, workers: Callable[[], list[Reach] | None]) -> str | None:
    """None when this process or one of the live workers (`workers()`, asked only when this
    process lacks the credentials; None when they cannot be asked) can call `judge`; else why
    not, naming the variable to set and where."""
    missing = here.reach().missing(judge)
    if missing is None:
        return None
    live = workers()
    if live is None or any(w.missing(judge) is None for w in live):
        return None
    if not live:
        return f"{missing}, here or where the workers run (no worker is running to judge with it)"
    count = f"{len(live)} live worker{'s' if len(live) != 1 else ''}"
    return f"{missing} where the workers run (this server holds none, and neither do its {count})"
