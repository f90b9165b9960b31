"""The FastAPI application: `create_app(settings)` builds one; its lifespan owns the resources.

No globals: the store, the Redis client, the job queue and the board cache (warmed in a
background thread) are opened when the app starts and closed when it stops, and live in the
app's one `AppState` (`service.web.state`), so tests (and several apps in one process) each build their own.

Error convention: every 4xx answers JSON `{"error": "<what is wrong>", ...}`.
- 400 malformed JSON or an empty body; 401 no Bearer key (with `WWW-Authenticate: Bearer`);
  403 wrong key; 404 unknown id or route (`store.NotFound`); 405 wrong method;
  409 same key, different content (`store.Conflict`); 413 body over `max_body_bytes` or a batch
  over `max_batch`; 422 invalid fields, with `details: [{"path", "message"}]`; a use case's
  error (`usecases.errors.UseCaseError`) with the status `web.errors.from_use_case` gives its kind.
- 503 the database does not answer (`store.StoreUnavailable`: stopped, restarting, unreachable),
  with `Retry-After`: the request was fine, and may be sent again once the database is back.
- 507 a part is out of space (`store.StoreFull`: the database's disk is full; or Redis refused
  a write with MISCONF or OOM): `{"error", "part", "where", "reason"}`, with `Retry-After`;
  nothing was stored (the transaction rolled back), and the request may be sent again once
  space is freed.
- 500 answers `{"error": "internal server error"}`; the traceback goes to the log.
- 405 carries `Allow` with every method the path has (Starlette names only one route's).

Answers of GZIP_MINIMUM_BYTES or more are gzipped when the request accepts it (Starlette's
GZipMiddleware; a streamed answer is compressed chunk by chunk, one that already names its
encoding is left alone).

Every response carries the security headers of `SECURITY_HEADERS` (`SecurityHeaders`): a
Content-Security-Policy that allows scripts, styles, images, fonts and requests from the app
itself only (no inline script or style: the page links its stylesheet, /docs loads Swagger UI
from the app, see routes.docs), no framing, no sniffing, no referrer.
"""
from __future__ import annotations

import logging
import random
import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast
from urllib.parse import urlsplit

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from redis import Redis
from redis.exceptions import ResponseError
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import GZipMiddleware
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.config import Settings
from service.ops import heap
from service.ops.logs import RequestId
from service.ops.metrics import HttpMetrics, JoustCollector, Metrics, TimedBoards
from service.store import Conflict, NotFound, Store, StoreFull, StoreUnavailable, redis_full_reason
from service.store.queue import JobQueue
from service.usecases.boards import BoardCache
from service.usecases.errors import UseCaseError
from service.usecases.flag_cache import FlagCache
from service.usecases.judge_health_cache import JudgeHealthCache
from service.web.api_models import check_judge_spec
from service.web.auth import private_reads
from service.web.errors import from_use_case
from service.web.routes import (
    docs,
    health,
    judgements,
    judges,
    keys,
    leaderboard,
    metrics,
    revision,
    scores,
    site,
    submissions,
    tournaments,
    votes,
    winrate,
)
from service.web.routes.common import ApiError, describe_errors
from service.web.routes.page import prepared_boards
from service.web.routes.winrate import winrate_cache
from service.web.state import AppState, keep_state, state_of

log = logging.getLogger(__name__)

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
# Answers from GZIP_MINIMUM_BYTES up are gzipped for a client that accepts it (a page or a board
# shrinks several times; below that the header costs more than it saves), at zlib's fastest level:
# the 400-player board page (1.1 MiB of HTML) took 34 ms at the default level 6 and takes 3.4 ms at
# level 1, for 124 KiB instead of 95; a page must stay fast.
GZIP_MINIMUM_BYTES = 1000
GZIP_LEVEL = 1
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


class SecurityHeaders:
    """Add SECURITY_HEADERS to every HTTP response that does not set them itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    if name not in headers:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


class BodyLimit:
    """Refuse request bodies over `max_bytes` with 413 before the app sees any of them.

    The declared Content-Length is checked first; the body is then read (chunked uploads have
    no length) up to the limit and replayed to the app, so no route ever acts on part of a body.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared == -1:
            await _reject(scope, send, 400, "the Content-Length header is not a number")
            return
        if declared is not None and declared > self.max_bytes:
            await _reject(scope, send, 413, self._too_large(declared))
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _reject(scope, send, 413, self._too_large(None))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(b"".join(chunks), receive), send)

    def _too_large(self, declared: int | None) -> str:
        size = f" ({declared} bytes)" if declared is not None else ""
        return f"the request body is too large{size}: the limit is {self.max_bytes} bytes"


def _content_length(scope: Scope) -> int | None:
    """The declared length; None when absent, -1 when unreadable."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return -1
            return length if length >= 0 else -1
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands out the buffered body once, then defers to the server's."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _reject(scope: Scope, send: Send, status: int, message: str) -> None:
    response = JSONResponse({"error": message}, status_code=status, headers={"Connection": "close"})
    await response(scope, _never, send)


async def _never() -> Message:  # JSONResponse never reads the request
    return {"type": "http.disconnect"}


# ---- exception handlers ---------------------------------------------------------------------


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, UseCaseError):  # a use case's error: answered as the ApiError it maps to
        exc = from_use_case(exc)
    assert isinstance(exc, ApiError)
    return JSONResponse({"error": exc.message, **exc.extra}, status_code=exc.status, headers=exc.headers)


async def _conflict(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": f"conflict: {exc}; nothing was stored"}, status_code=409)


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=404)


DATABASE_RETRY_AFTER_S = 5


async def _database_down(request: Request, exc: Exception) -> JSONResponse:
    """503, not 500: the request was fine and may succeed once the database is back. The
    driver's words go to the log only (they may name the database's host)."""
    assert isinstance(exc, StoreUnavailable)
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, exc.reason)
    return JSONResponse({"error": "the database is unavailable (down or restarting): try again shortly"},
                        status_code=503, headers={"Retry-After": str(DATABASE_RETRY_AFTER_S)})


STORAGE_RETRY_AFTER_S = 30


def out_of_space(part: str, where: str, reason: str) -> JSONResponse:
    """507 Insufficient Storage: which part, where, and its own words; nothing was stored."""
    return JSONResponse({"error": f"the {part} is out of space at {where}: free some space, then try again; "
                                  "nothing was stored", "part": part, "where": where, "reason": reason},
                        status_code=507, headers={"Retry-After": str(STORAGE_RETRY_AFTER_S)})


async def _database_full(request: Request, exc: Exception) -> JSONResponse:
    """507, not 503: the database answers, but its disk is full; waiting alone will not help."""
    assert isinstance(exc, StoreFull)
    log.warning("database out of space on %s %s: %s (%s)", request.method, request.url.path, exc.reason, exc.where)
    return out_of_space("database", exc.where, exc.reason)


async def _redis_refused(request: Request, exc: Exception) -> JSONResponse:
    """A Redis error that reached no route's own handling: 507 when Redis refused to write for
    want of disk or memory (MISCONF, OOM), else the internal error it is."""
    reason = redis_full_reason(exc)
    if reason is None:
        return await _internal(request, exc)
    log.warning("redis out of space on %s %s: %s", request.method, request.url.path, reason)
    return out_of_space("redis", shown_redis(request), reason)


def shown_redis(request: Request) -> str:
    """The Redis the app uses, its password masked."""
    url = state_of(request).settings.redis_url or ""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]).geturl() if url else "(no Redis)"


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        message = f"no such endpoint: {request.method} {request.url.path}"
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405:
        allowed = allowed_methods(request)
        headers["Allow"] = ", ".join(allowed)
        message = f"method {request.method} is not allowed on {request.url.path}; use {' or '.join(allowed)}"
    return JSONResponse({"error": message}, status_code=exc.status_code, headers=headers or None)


METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at the request's path (Starlette's 405 names only the
    first route's methods, though GET and POST /api/submissions are two routes): each is asked
    of the router's routes as the request would be routed."""
    routes = request.app.router.routes
    return [method for method in METHODS
            if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes)]


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    """Query and path parameters (bodies are validated by the routes, see routes.common)."""
    assert isinstance(exc, RequestValidationError)
    errors = []
    for error in exc.errors():
        loc = tuple(error.get("loc", ()))
        where = {"query": "query parameter ", "path": "path parameter ", "header": "header "}.get(str(loc[0]) if loc else "", "")
        errors.append({**error, "loc": (f"{where}{loc[1]}", *loc[2:]) if len(loc) > 1 else loc})
    message, details = describe_errors(errors)
    return JSONResponse({"error": message, "details": details}, status_code=422)


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    # Answered by Starlette's outermost middleware, outside SecurityHeaders: set them here.
    return JSONResponse({"error": "internal server error"}, status_code=500, headers=SECURITY_HEADERS)


# ---- the app --------------------------------------------------------------------------------


def warm_then_settle(boards: BoardCache, settle: bool) -> None:
    """Warm the boards; with `settle`, then freeze the heap they built out of the collector's
    sight (`service.ops.heap`): the boards live as long as the process."""
    boards.warm()
    if settle:
        heap.settle()


def create_app(settings: Settings, *, own_process: bool = False) -> FastAPI:
    """The API and page for `settings`; raises ValueError for settings it cannot serve with.
    `own_process`: the app is the whole process (`joust api`), so it may set the process's
    garbage collector (`service.ops.heap`); an app inside a test or another program leaves it."""
    if not settings.api_key:
        raise ValueError("an API key is required to serve the API (JOUST_API_KEY; `joust up` makes one)")
    if not settings.redis_url:
        raise ValueError("a Redis URL is required to serve the API (REDIS_URL; `joust up` starts one)")
    try:
        check_judge_spec(settings.judge)
    except ValueError as exc:
        raise ValueError(f"default judge (JOUST_JUDGE): {exc}") from None
    redis_url = settings.redis_url
    app_metrics = Metrics()
    # The vote page's pairs and sides (service.web.routes.page_vote): unpredictable to voters; a test
    # reseeds it.
    vote_rng = random.Random(secrets.randbits(128))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store(settings.resolved_database_url)
        redis = Redis.from_url(redis_url, socket_connect_timeout=5, socket_timeout=30)
        queue = JobQueue(redis, settings.queue_name, job_timeout_s=settings.match_timeout_s / 2)
        boards = BoardCache(store, k=settings.elo_k)
        timed = cast(BoardCache, TimedBoards(boards, app_metrics.board_seconds))  # stands in for the cache
        app_metrics.attach(JoustCollector(settings, store, redis))
        judge_health = JudgeHealthCache(store)
        flags = FlagCache(store)
        keep_state(app, AppState(settings=settings, metrics=app_metrics, vote_rng=vote_rng, store=store, redis=redis,
                                 queue=queue, boards=timed, judge_health=judge_health, flags=flags,
                                 pages=prepared_boards(store, timed, flags), winrates=winrate_cache()))
        # Reading a large store takes seconds: start now rather than on the first request.
        warm = threading.Thread(target=warm_then_settle, args=(boards, own_process), name="joust-boards-warm", daemon=True)
        warm.start()
        try:
            yield
        finally:
            warm.join(timeout=5)
            app_metrics.detach()
            redis.close()
            store.close()

    app = FastAPI(
        title="joust",
        summary="Pairwise tournaments and Elo / Bradley-Terry leaderboards for LLM outputs.",
        lifespan=lifespan,
        docs_url=None,  # routes.docs serves /docs offline, under the Content-Security-Policy
        redoc_url=None,
        openapi_url=None,  # routes.docs serves /openapi.json, behind JOUST_PRIVATE like every read
        dependencies=[Depends(private_reads)],  # JOUST_PRIVATE=1: reads need a key too (service.web.auth)
    )
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    # Inside HttpMetrics, so a request's time includes compressing its answer.
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MINIMUM_BYTES, compresslevel=GZIP_LEVEL)
    app.add_middleware(HttpMetrics, metrics=app_metrics)
    app.add_middleware(SecurityHeaders)  # 413s of BodyLimit get the headers too
    app.add_middleware(RequestId)  # outermost: every line logged for a request carries its id
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(UseCaseError, _api_error)
    app.add_exception_handler(Conflict, _conflict)
    app.add_exception_handler(NotFound, _not_found)
    app.add_exception_handler(StoreUnavailable, _database_down)
    app.add_exception_handler(StoreFull, _database_full)
    app.add_exception_handler(ResponseError, _redis_refused)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(Exception, _internal)
    for module in (submissions, tournaments, votes, judgements, leaderboard, winrate, health, site, judges, scores,
                   docs, keys, metrics, revision):
        app.include_router(module.router)
    return app
