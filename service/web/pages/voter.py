"""Who votes on the vote page: a voter key kept in a cookie, and the token each vote form carries.

Why a cookie, and which key: a plain form cannot send an `Authorization` header, and a key in a
URL leaks (history, logs, the Referer). So the page asks for the key once, in a password field
it POSTs, checks it, and keeps it in a cookie that scripts cannot read (HttpOnly), that no other
site's page makes the browser send (SameSite=Strict), that goes to `/vote` only (Path) and, when
the page came over HTTPS, over HTTPS only (Secure). Only a key of its own with the `vote` scope
may vote here: never the admin key nor a key with the `admin` scope, so no secret that may do
everything ever sits in a browser. The key is looked up on every request, so revoking it stops
its voting at once.

Each vote form carries a token, an HMAC of the voter's key and the pair as shown (which answer
was left) under a secret derived from the admin key (every API process has it, and it survives
a restart, so a form loaded before one still counts). A vote whose token does not match (a
forged post, another voter's form, ids or sides changed) is refused and stores nothing.
"""
from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field

from fastapi import Request, Response

from leaderboard.votes import vote_judge
from service.store import Scope
from service.web.auth import caller_of
from service.web.errors import ApiError

COOKIE = "joust_voter"
COOKIE_PATH = "/vote"
ISSUE = 'POST /api/keys {"name": "alice", "scopes": ["vote"]} or joust keys create alice --scope vote'


@dataclass(frozen=True)
class Voter:
    """A voter: the name of the key (votes are filed as `human/<name>`) and the key itself."""

    name: str
    key: str = field(repr=False)

    @property
    def judge(self) -> str:
        return vote_judge(self.name)


class VoterRefused(Exception):
    """A key the page cannot vote with; the message says why and what to do instead."""


def voter_of(request: Request, key: str) -> Voter:
    """The voter a key names (blocking: a store read); VoterRefused for any other key."""
    if not key:
        raise VoterRefused(f"enter your voter key; an admin issues one with {ISSUE}")
    try:
        caller = caller_of(request, key)
    except ApiError as exc:
        raise VoterRefused(f"{exc.message}: sign in with a voter key, which an admin issues with {ISSUE}") from None
    if caller.key_id is None:
        raise VoterRefused("that is the admin key, which this page never keeps in a browser: issue each voter a key "
                           f"of their own with the vote scope ({ISSUE}) and sign in with it")
    if Scope.ADMIN in caller.scopes:
        raise VoterRefused(f"the key {caller.name!r} has the admin scope, which this page never keeps in a "
                           f"browser: sign in with a key whose scope is vote ({ISSUE})")
    if not caller.allows(Scope.VOTE):
        raise VoterRefused(f"the key {caller.name!r} lacks the vote scope; an admin issues a voter key with {ISSUE}")
    return Voter(caller.name, key)


def cookie_voter(request: Request) -> Voter | None:
    """The voter whose key the request's cookie holds; None without the cookie, VoterRefused
    when its key no longer votes (revoked, say)."""
    key = request.cookies.get(COOKIE)
    return None if key is None else voter_of(request, key)


def keep(response: Response, request: Request, voter: Voter) -> None:
    """Set the cookie that holds the voter's key (see the module docstring for its flags)."""
    response.set_cookie(COOKIE, voter.key, path=COOKIE_PATH, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")


def forget(response: Response, request: Request) -> None:
    """Clear the cookie."""
    response.delete_cookie(COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict",
                           secure=request.url.scheme == "https")


def pair_token(admin_key: str, voter: Voter, left: int, right: int) -> str:
    """The token of a vote form showing `left` and `right` to `voter`."""
    secret = hmac.new(admin_key.encode("utf-8"), b"joust vote page", hashlib.sha256).digest()
    voter_hash = hashlib.sha256(voter.key.encode("utf-8")).hexdigest()
    return hmac.new(secret, f"{voter_hash}|{left}|{right}".encode(), hashlib.sha256).hexdigest()


def token_matches(admin_key: str, voter: Voter, left: int, right: int, token: str) -> bool:
    """Whether `token` is the one `pair_token` gives (compared in constant time)."""
    return hmac.compare_digest(pair_token(admin_key, voter, left, right).encode(), token.encode("utf-8"))
