"""Who may do what: the admin key, and named keys with scopes that an admin issues.

A request says who it is with `Authorization: Bearer <key>`. The admin key (JOUST_API_KEY, or the
data dir's `api_key`) may do everything and writes as "admin"; a named key (`POST /api/keys`,
`joust keys create`) may do what its scopes say: `submit` (POST /api/submissions), `vote`
(POST /api/votes), `run` (create, cancel and retry tournaments; ask a tie analysis), `admin`
(everything, keys included). A key with no scope may only read. Writes record the name of the
key that made them (`created_by`, through `service.store.WRITER`).

Reads are open unless JOUST_PRIVATE=1; then every request but GET /api/health needs a key of any
scope, sent as a Bearer key or, for a browser, as HTTP Basic credentials whose password is the
key (the user name is ignored): the page answers 401 with a Basic challenge, so the browser asks.
Two exceptions: the vote page (`/vote`) asks for its own key, a voter key it keeps in a cookie
only it receives, and shows nothing but its sign-in form without one (`service.web.pages.voter`),
so a voter needs no other key; and the pages' static files (the package's own stylesheet,
scripts and icon, the same in every joust) are public, so that form is styled without a prompt.

Statuses: no (or a non-Bearer) key on a write is a 401 with `WWW-Authenticate: Bearer`; a key that
is unknown or revoked is a 403, and so is a key without the scope a route needs (the message
names it). The admin key is compared with `hmac.compare_digest` on bytes (the same time wherever
the first difference is); a named key is found by the SHA-256 of what was sent, so the secret
itself is never compared or stored.
"""
from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from service.store import ADMIN_NAME, WRITER, Scope
from service.web.errors import ApiError
from service.web.state import state_of

# For the OpenAPI document (the routes read the header themselves, see `caller_of`).
bearer = HTTPBearer(auto_error=False, description="The API key `joust up` prints (or JOUST_API_KEY), or a named key.")
# Paths anyone may read, even with JOUST_PRIVATE=1: the health probe, and the vote page, which
# checks its voter's key itself (its cookie) and shows nothing else without one.
PUBLIC_PATHS = frozenset({"/api/health", "/vote"})
# Path prefixes anyone may read: the package's static files, which hold no data.
PUBLIC_PREFIXES = ("/static/",)
CHALLENGE = "Bearer"
BROWSER_CHALLENGE = 'Basic realm="joust", charset="UTF-8"'


@dataclass(frozen=True)
class Caller:
    """Who a request's key says it is: a key's name, its id (None: the admin key) and scopes."""

    name: str
    scopes: tuple[Scope, ...]
    key_id: int | None = None

    def allows(self, scope: Scope) -> bool:
        return scope in self.scopes or Scope.ADMIN in self.scopes


ADMIN = Caller(ADMIN_NAME, tuple(Scope))


def keys_match(given: str, expected: str) -> bool:
    """Constant-time comparison that also accepts non-ASCII input."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def sent_key(request: Request, *, basic: bool) -> str | None:
    """The key of the Authorization header: a Bearer key, or (when `basic`) the password of
    Basic credentials; None when there is none."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return value
    if basic and scheme.lower() == "basic" and value:
        try:
            password = base64.b64decode(value, validate=True).decode("utf-8").partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return None
        return password or None
    return None


def caller_of(request: Request, key: str) -> Caller:
    """The caller a key names; 403 when it names none, or a revoked key (blocking: a store read)."""
    if keys_match(key, state_of(request).settings.api_key):
        return ADMIN
    store = state_of(request).store
    found = store.find_api_key(key)
    if found is None:
        raise ApiError(403, "the API key is not valid")
    if found.revoked:
        raise ApiError(403, f"the API key {found.name!r} was revoked")
    return Caller(found.name, found.scopes, found.id)


async def identify(request: Request, *, basic: bool = False) -> Caller | None:
    """The request's caller (looked up once per request), or None when it sent no key."""
    known: dict[bool, Caller | None] = getattr(request.state, "callers", None) or {}
    if basic not in known:
        key = sent_key(request, basic=basic)
        known[basic] = None if key is None else await run_in_threadpool(caller_of, request, key)
        request.state.callers = known
    return known[basic]


def require_scope(scope: Scope) -> Callable[..., Awaitable[Caller]]:
    """A dependency for a route that writes: 401 without a Bearer key, 403 with a key that is
    not valid or lacks `scope`; the writes of the request then record the key's name."""

    async def dependency(
        request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> Caller:
        caller = await identify(request)
        if caller is None:
            raise ApiError(
                401,
                "authentication required: send the header 'Authorization: Bearer <api key>'",
                headers={"WWW-Authenticate": CHALLENGE},
            )
        if not caller.allows(scope):
            raise ApiError(403, f"the API key {caller.name!r} lacks the {scope.value!r} scope this needs")
        WRITER.set(caller.name)  # async, in the request's task: the route's thread sees it
        return caller

    dependency.__name__ = f"require_{scope.value}"
    return dependency


require_submit = require_scope(Scope.SUBMIT)
require_vote = require_scope(Scope.VOTE)
require_run = require_scope(Scope.RUN)
require_admin = require_scope(Scope.ADMIN)
# The one key of before: a route not yet given its scope needs the admin's.
require_api_key = require_admin


async def private_reads(request: Request) -> None:
    """An app-wide dependency: with JOUST_PRIVATE=1 every route but PUBLIC_PATHS and
    PUBLIC_PREFIXES needs a key (any scope but a voter's alone; Bearer, or Basic for a browser):
    401 with both challenges without one, 403 with one that is not valid. A key whose only scope
    is `vote` reads nothing (403; it may still post votes): it opens `/vote`, whose answers are
    blind, and would otherwise find in the submissions which model wrote each. Without JOUST_PRIVATE it does nothing."""
    path = request.url.path
    if not state_of(request).settings.private or path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
        return
    caller = await identify(request, basic=True)
    if caller is None:
        raise ApiError(
            401,
            "this joust is private: send the header 'Authorization: Bearer <api key>' (any key but a voter's may read)",
            headers={"WWW-Authenticate": f"{CHALLENGE}, {BROWSER_CHALLENGE}"},
        )
    if set(caller.scopes) == {Scope.VOTE} and request.method in ("GET", "HEAD"):  # its votes it may still post
        raise ApiError(403, f"the API key {caller.name!r} is a voter's: in a private joust it opens /vote only, "
                            "where the answers are blind, and reads nothing else")
