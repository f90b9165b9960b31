"""Pages of the list routes: `limit` rows from `offset`, and a `next` link to the page after.

A list that grows with the store (submissions, tournaments, a tournament's judgements) is never
answered whole: a client takes `limit` rows (default DEFAULT_LIMIT, at most `common.LIMIT_MAX`)
and follows `next` until it is null. `next` is the request's own URL, filters kept, with the next
offset (absolute, as the request reached the app), and is sent as a `Link: <...>; rel="next"`
header too, for tools that page by header. Whether another page follows is known by reading one
row more than the page, so the last page says so without an empty request after it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from fastapi import Request, Response
from starlette.datastructures import URL

from service.web.routes.common import OFFSET_MAX, Limit, Offset

T = TypeVar("T")
DEFAULT_LIMIT = 1000


@dataclass(frozen=True)
class Window:
    """The page a list request asks for: `limit` rows from `offset`, asked at `url`."""

    limit: int
    offset: int
    url: URL

    @property
    def fetch(self) -> int:
        """How many rows to read: one more than the page, to know whether another follows."""
        return self.limit + 1

    def keeping(self, **params: Any) -> Window:
        """This window, the next page's URL carrying `params` too: a cursor the first page
        fixes, such as the newest id of a newest-first list, so that rows stored since do not
        shift the pages after it."""
        return replace(self, url=self.url.include_query_params(**params))

    def cut(self, rows: Sequence[T], response: Response) -> tuple[list[T], str | None]:
        """The page's rows, and the next page's URL (None on the last page), also set as the
        response's `Link` header. `rows` holds at most `fetch` rows read from `offset`."""
        following = self.offset + self.limit
        if len(rows) <= self.limit or following > OFFSET_MAX:
            return list(rows), None
        link = str(self.url.include_query_params(limit=self.limit, offset=following))
        response.headers["Link"] = f'<{link}>; rel="next"'
        return list(rows[: self.limit]), link


def window(request: Request, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Window:
    """The `limit` and `offset` query parameters of a list route, as one value."""
    return Window(limit=limit, offset=offset, url=request.url)
