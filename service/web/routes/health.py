"""Health: for docker compose, load balancers and people. 200 only when every part answers: the
database and Redis. Without Redis nothing is judged (workers wait, the scheduler retries), so a
health check that said "ok" then would hide a stalled service; writes still work meanwhile
(a tournament started then is stored and handed out by the scheduler once Redis is back).

A part out of space (`service.store.shortage`) is "full", not "down", and `out_of_space` says where
and why: the SQLite database's disk short of MIN_FREE_BYTES, or a Redis that refuses writes
(MISCONF: it cannot write its files; OOM: it is at its maxmemory)."""
from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from redis import Redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from service.config import Settings
from service.store import Shortage, Store, StoreFull, database_shortage, redis_shortage
from service.web.api_responses import HealthOut
from service.web.routes.common import get_settings, get_store

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api/health", tags=["health"])
PROBE_TIMEOUT_S = 2.0

DOWN = {
    "model": HealthOut,
    "description": 'A part is down: `{"status": "down", "database": "ok"|"down"|"full", "redis": "ok"|"down"|"full"}` '
                   "names which; a part out of space is \"full\", and `out_of_space` lists `{part, where, reason}`. "
                   "Writes that need the queue are still stored and handed out once Redis is back.",
}


@router.get("", response_model=HealthOut, responses={503: DOWN})
def health(
    store: Annotated[Store, Depends(get_store)], settings: Annotated[Settings, Depends(get_settings)]
) -> JSONResponse:
    """`{"status": "ok", "database": "ok", "redis": "ok"}`; 503 with `"status": "down"` when the
    database or Redis does not answer, or one is out of space ("full", with `out_of_space`)."""
    full: list[Shortage] = []
    database = "ok"
    try:
        store.list_tournaments(limit=1)
    except StoreFull as exc:
        full.append(Shortage("database", exc.where, exc.reason))
    except Exception as exc:  # any driver error means the same thing here
        log.warning("health: database check failed: %s", exc)
        database = "down"
    if database == "ok" and not full and (short := database_shortage(store.url)) is not None:
        full.append(short)
    redis_state, short = _redis_state(settings.redis_url)
    full += [short] if short is not None else []
    if any(s.part == "database" for s in full):
        database = "full"
    for shortage in full:
        log.warning("health: %s", shortage.line())
    up = database == "ok" and redis_state == "ok"
    body = HealthOut(status="ok" if up else "down", database=database, redis=redis_state,
                     out_of_space=[s.as_json() for s in full] or None)  # type: ignore[misc]
    return JSONResponse(body.model_dump(exclude_none=True), status_code=200 if up else 503)


def _redis_state(url: str | None) -> tuple[str, Shortage | None]:
    """"ok", "down", or "full" with what it lacks."""
    if not url:
        return "down", None
    probe = _probe(url)
    try:
        short = redis_shortage(probe)
    finally:
        probe.close()
    if short is not None:
        return "full", short
    return ("ok" if _redis_answers(url) else "down"), None


def _redis_answers(url: str | None) -> bool:
    """PING on a connection of its own that never retries: the app's client rides out a short
    outage by retrying, which would report a Redis that is down as up once it came back."""
    if not url:
        return False
    probe = _probe(url)
    try:
        return bool(probe.ping())
    except (RedisError, OSError) as exc:
        log.warning("health: redis check failed: %s", exc)
        return False
    finally:
        probe.close()


def _probe(url: str) -> Redis:
    return Redis.from_url(url, socket_timeout=PROBE_TIMEOUT_S, socket_connect_timeout=PROBE_TIMEOUT_S,
                          retry=Retry(NoBackoff(), 0))
