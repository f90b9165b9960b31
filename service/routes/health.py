"""Health: for docker compose and load balancers. The database is required (503 without it);
Redis being down is reported but is not fatal, because tournaments started meanwhile are stored
and handed out by the scheduler once Redis is back."""
from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from redis import Redis
from redis.exceptions import RedisError

from service.api_models import HealthOut
from service.store import Store

from .common import get_redis, get_store

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api/health", tags=["health"])


@router.get("", response_model=HealthOut, responses={503: {"model": HealthOut}})
def health(
    store: Annotated[Store, Depends(get_store)], redis: Annotated[Redis, Depends(get_redis)]
) -> JSONResponse:
    """`{"status": "ok", "database": "ok", "redis": "ok"|"down"}`; 503 when the database fails."""
    database = "ok"
    try:
        store.list_tournaments(limit=1)
    except Exception as exc:  # any driver error means the same thing here
        log.warning("health: database check failed: %s", exc)
        database = "down"
    try:
        redis_state = "ok" if redis.ping() else "down"
    except (RedisError, OSError) as exc:
        log.warning("health: redis check failed: %s", exc)
        redis_state = "down"
    status = "ok" if database == "ok" else "down"
    body = HealthOut(status=status, database=database, redis=redis_state)
    return JSONResponse(body.model_dump(), status_code=200 if database == "ok" else 503)
