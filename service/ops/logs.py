"""How joust's processes log: text lines by default, or one JSON object per line
(`JOUST_LOG_FORMAT=json`), each carrying the id of the work it belongs to.

A JSON line holds `time` (ISO 8601, UTC), `level`, `logger`, `message`, `exc_info` (a traceback,
when there is one) and the ids of its unit of work: `request_id` in the API (the client's
`X-Request-ID`, or one made here; echoed in the response's `X-Request-ID`), `match_id` and
`tournament_id` in a worker (set by the worker for each match it judges). The ids travel in
context variables, so every line logged while serving one request or judging one match carries
them, whichever module logs it. A context id is read from the record's attributes: a process
fills them with a `logging.Filter` on its handlers (`ContextFilter` here for the API; a worker adds
its own, see `workers.logcontext`), since the workers package keeps its own variables.

We wrote the formatter (twenty lines over the standard `logging` module) rather than take
python-json-logger: it needs no more than `json.dumps` of a handful of fields, and one less
dependency is one less thing to pin.
"""
from __future__ import annotations

import json
import logging
import re
import secrets
from contextvars import ContextVar
from datetime import datetime, timezone

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The ids a line may carry, in the order written.
CONTEXT_FIELDS = ("request_id", "tournament_id", "match_id")
REQUEST_ID: ContextVar[str | None] = ContextVar("joust_request_id", default=None)
REQUEST_ID_HEADER = "X-Request-ID"
# A client's request id is taken when it is short printable ASCII without spaces; else one is made.
_GOOD_ID = re.compile(r"^[\x21-\x7e]{1,128}$")
TEXT_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)


class ContextFilter(logging.Filter):
    """Stamp the API's request id on each record (kept if the record has one already)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = REQUEST_ID.get()
        return True


def configure(log_format: str, level: str = "INFO") -> None:
    """Set up the root logger of a process: text or JSON lines on stderr, with request ids.
    Other loggers (uvicorn's, RQ's) propagate to it, so they are written the same way."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(ContextFilter())
    # On the handler too: a library that sets its own logger's level (RQ sets INFO) still writes
    # nothing below the level asked for.
    handler.setLevel(level.upper())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # One INFO line per HTTP request of an SDK or of the CLI's client would drown the log (and
    # the CLI's own output): those loggers speak from WARNING up unless asked for debug.
    for noisy in ("httpx", "httpx2", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if level.upper() == "DEBUG" else logging.WARNING)


def add_filter(log_filter: logging.Filter) -> None:
    """Add a filter to every handler of the root logger (a process's own context ids)."""
    for handler in logging.getLogger().handlers:
        handler.addFilter(log_filter)


def request_id_of(given: str | None) -> str:
    """The client's request id when it is usable, else a new one."""
    if given is not None and _GOOD_ID.match(given):
        return given
    return secrets.token_hex(8)


class RequestId:
    """Give every HTTP request an id (its `X-Request-ID` or a new one), set it for the logs of
    its work, and echo it in the response's `X-Request-ID`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"x-request-id"), None)
        request_id = request_id_of(given)
        # Not reset afterwards: each request runs in a task of its own (its own copy of the
        # context), and the 500 handler, outside every middleware, logs with the id still set.
        REQUEST_ID.set(request_id)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = request_id
            await send(message)

        await self.app(scope, receive, send_with_id)
