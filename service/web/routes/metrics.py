"""`GET /metrics`: Prometheus's text format (see `service.ops.metrics` for what it holds and where
each figure comes from). Open like every read; with JOUST_PRIVATE=1 it needs a key (any scope:
issue Prometheus a key with no scope, which may only read)."""
from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from service.web.state import state_of

router = APIRouter(tags=["operations"])


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(request: Request) -> Response:
    """Queue depth and age, matches by status, judge calls, 429s, retries and latency, tokens
    and USD by judge, board times, HTTP requests by route and status."""
    body = await run_in_threadpool(state_of(request).metrics.render)  # store and Redis reads: off the loop
    return Response(body, media_type=CONTENT_TYPE_LATEST)
