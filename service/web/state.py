"""What an app's handlers read, as one typed value: `AppState`, kept on `app.state.joust`.

Starlette's `app.state` takes any attribute and types none, so a misspelt or mistyped part
would surface only in a request; the app keeps this one value there instead (its lifespan opens
it, see `service.web.app`) and handlers read it through `state_of`.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import Request
from redis import Redis
from starlette.applications import Starlette

from service.config import Settings
from service.ops.metrics import Metrics
from service.store import Store
from service.store.queue import JobQueue
from service.usecases.boards import BoardCache
from service.usecases.flag_cache import FlagCache
from service.usecases.judge_health_cache import JudgeHealthCache
from service.usecases.revisioned import Lru

if TYPE_CHECKING:  # both import the routes, which read this module
    from service.web.pages.prepared import PreparedBoards
    from service.web.routes.winrate import Compared


@dataclass(frozen=True)
class AppState:
    """One app's settings and the resources its lifespan opened (and closes)."""

    settings: Settings
    metrics: Metrics
    vote_rng: random.Random  # the vote page's pairs and sides: unpredictable to voters; a test reseeds it
    store: Store
    redis: Redis
    queue: JobQueue
    boards: BoardCache  # a `service.ops.metrics.TimedBoards`: the cache itself, each fit timed
    judge_health: JudgeHealthCache
    flags: FlagCache
    pages: PreparedBoards
    winrates: Lru[Compared]


def keep_state(app: Starlette, state: AppState) -> None:
    """Put `state` where `app_state` finds it."""
    app.state.joust = state


def app_state(app: Starlette) -> AppState:
    """The state `app`'s lifespan opened (AttributeError before it starts)."""
    state: AppState = app.state.joust
    return state


def state_of(request: Request) -> AppState:
    """The state of the app serving `request`: what handlers and dependencies read."""
    return app_state(request.app)
