"""Pages from templates: one Jinja2 environment with autoescaping, the filters the templates
share, and the response rule every page follows.

Why templates rather than HTML assembled in Python strings: autoescaping is on for every value a
template prints, so a model called `<script>` is shown, never run, without a call to remember at
each place. The templates live in `service/web/templates/`; scripts and styles are package files
served by `service.web.routes.docs` (the Content-Security-Policy of `service.web.app` forbids inline
ones).

Every page carries the store's change mark (`Store.page_mark`): its ETag is the mark with the
page's URL, so a browser that asks again with `If-None-Match` at the same mark gets a 304 without
the page being rendered, and the live script (`static/live.js`) asks `GET /api/revision` every
few seconds and refetches the page only when the mark moved.
"""
from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from service.store import Store

PENDING = "~pending"  # added to a page's shown mark while a part of it is still being computed
NAV = (
    ("/", "Board"),
    ("/tournaments", "Tournaments"),
    ("/judges", "Judges"),
    ("/judgements", "Judgements"),
    ("/vote", "Vote"),
    ("/docs", "API"),
)


def number(value: float | None, digits: int = 0) -> str:
    """A figure for display; an em dash when there is none (None, NaN, infinite)."""
    if value is None or not math.isfinite(float(value)):
        return "—"
    return f"{float(value):.{digits}f}"


def percent(value: float | None, digits: int = 1) -> str:
    """A share as a percentage; an em dash when there was nothing to count."""
    if value is None or not math.isfinite(float(value)):
        return "—"
    return f"{100 * float(value):.{digits}f}%"


def signed(value: float | None) -> str:
    """An effect with its sign, so +35 and -35 read as what they are."""
    if value is None or not math.isfinite(float(value)):
        return "—"
    return f"{float(value):+.0f}"


def when(stamp: float | None) -> str:
    """A Unix time as UTC text."""
    return "—" if stamp is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(stamp))


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`1 judgement`, `2 judgements`."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("service.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,  # a misspelt name fails the test that renders it, not silently
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(number=number, percent=percent, signed=signed, when=when, plural=plural)
    env.globals["nav"] = NAV
    return env


ENV = _environment()


@dataclass(frozen=True)
class Mark:
    """Where the store stands, as the live script compares it: `revision` counts resolved
    judgements; `mark` moves on any change a page shows (a judgement, a failure, a vote...)."""

    revision: int
    mark: str


def etag_of(mark: Mark, request: Request) -> str:
    """A weak ETag for the page at `request`'s URL (path and query) as of `mark`."""
    digest = hashlib.sha256(f"{mark.mark}|{request.url.path}?{request.url.query}".encode()).hexdigest()[:20]
    return f'W/"{digest}"'


def not_modified(request: Request, mark: Mark) -> Response | None:
    """A 304 when the browser already holds this page at this mark; None otherwise."""
    etag = etag_of(mark, request)
    sent = request.headers.get("if-none-match", "")
    if etag in (tag.strip() for tag in sent.split(",")):
        return Response(status_code=304, headers={"ETag": etag, "Cache-Control": "no-cache"})
    return None


def render(request: Request, template: str, context: Mapping[str, Any], *, mark: Mark,
           title: str, status: int = 200, live: bool = True, pending: bool = False) -> HTMLResponse:
    """`template` rendered into the page layout (`base.html`): the navigation with `request`'s
    page marked current, the live stamp at `mark`, an ETag on it. `live` False: a page that must
    not change under its reader (the vote page) has no live script.

    `pending`: a part of the page was served from an older background computation (the effects
    being refitted) that may finish without the store moving: such a page has no ETag, and its
    stamp's mark differs from the store's, so the live script fetches it again at its next look."""
    shown = Mark(mark.revision, mark.mark + PENDING) if pending else mark
    body = ENV.get_template(template).render(
        **context, title=title, path=request.url.path, mark=shown, live=live,
        updated=time.strftime("%H:%M:%S", time.gmtime()),
    )
    headers = {"Cache-Control": "no-cache"} if pending else {"ETag": etag_of(mark, request),
                                                             "Cache-Control": "no-cache"}
    return HTMLResponse(body, status_code=status, headers=headers)


def mark_of(store: Store) -> Mark:
    """The store's change mark (`Store.page_mark`): one read of two counters."""
    now = store.page_mark()
    return Mark(now.revision, now.mark)
