"""API keys an admin issues: named, with scopes, stored as the SHA-256 of their secret.

A secret is `jst_` and 43 URL-safe characters (256 random bits); the store keeps its SHA-256 and
its first 12 characters (`prefix`, to recognise a key in a list), never the secret itself, which
`create_api_key` returns once. A request's key is found by the hash of what it sent. A revoked key
keeps its row, so its name still says who made the writes it recorded; names are never reused.

Also here: who is writing (`WRITER`), the name of the key behind the current request, which the
store stamps as `created_by` on the submissions, tournaments and votes it inserts. The API's auth
dependency sets it for its request (`service.web.auth`); a local command writes as nobody (NULL).
"""
from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from enum import Enum

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from . import schema as s
from .base import Conflict, Database, NotFound

SECRET_PREFIX = "jst_"
SHOWN_CHARS = 12  # of the secret, kept as its prefix: "jst_" and 8 random characters
NAME_MAX = 64
ADMIN_NAME = "admin"  # what writes made with the admin key (JOUST_API_KEY) record

# The name of the API key the current unit of work writes for (None: nobody, a local command).
WRITER: ContextVar[str | None] = ContextVar("joust_writer", default=None)


class Scope(str, Enum):
    """What a key may do: submit outputs, vote, run tournaments, administer keys (admin may do
    everything). Every key (and with JOUST_PRIVATE, only a key) may read."""

    SUBMIT = "submit"
    VOTE = "vote"
    RUN = "run"
    ADMIN = "admin"


@dataclass(frozen=True)
class StoredKey:
    """An API key as listed: never its secret."""

    id: int
    name: str
    prefix: str
    scopes: tuple[Scope, ...]
    created_at: float
    created_by: str | None
    revoked_at: float | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def allows(self, scope: Scope) -> bool:
        return scope in self.scopes or Scope.ADMIN in self.scopes

    def as_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "prefix": self.prefix, "scopes": [x.value for x in self.scopes],
                "created_at": self.created_at, "created_by": self.created_by, "revoked_at": self.revoked_at,
                "revoked": self.revoked}


def hash_secret(secret: str) -> str:
    """The SHA-256 (hex) a key is stored and found by."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a key, or None."""
    if not name or len(name) > NAME_MAX:
        return f"a key's name has 1 to {NAME_MAX} characters"
    if not all(c.isalnum() or c in "-_." for c in name):
        return "a key's name holds letters, digits, '-', '_' and '.' only"
    if name == ADMIN_NAME:
        return f"{ADMIN_NAME!r} is the admin key's name"
    return None


def parse_scopes(values: Iterable[str]) -> tuple[Scope, ...]:
    """Scopes in a stable order, without repeats; ValueError naming an unknown one."""
    known = {x.value: x for x in Scope}
    found = set()
    for value in values:
        if value not in known:
            raise ValueError(f"unknown scope {value!r}: use {', '.join(known)}")
        found.add(known[value])
    return tuple(x for x in Scope if x in found)


def _key_of(row: object) -> StoredKey:
    scopes = tuple(Scope(x) for x in row.scopes.split(",") if x)  # type: ignore[attr-defined]
    return StoredKey(id=row.id, name=row.name, prefix=row.prefix, scopes=scopes,  # type: ignore[attr-defined]
                     created_at=row.created_at, created_by=row.created_by,  # type: ignore[attr-defined]
                     revoked_at=row.revoked_at)  # type: ignore[attr-defined]


class ApiKeys(Database):
    """Named, scoped API keys, kept as hashes."""

    def create_api_key(self, name: str, scopes: Iterable[Scope], created_by: str | None = None) -> tuple[StoredKey, str]:
        """Store a new key; it and its secret (shown this once). Raises ValueError for a bad
        name, Conflict when a key (revoked ones included) has the name."""
        problem = name_problem(name)
        if problem is not None:
            raise ValueError(problem)
        secret = new_secret()
        t = s.api_keys
        try:
            with self._write(shown=False) as conn:  # no page shows keys
                if conn.execute(select(t.c.id).where(t.c.name == name)).first() is not None:
                    raise Conflict(f"a key named {name!r} exists (names are never reused, revoked keys' included)")
                new_id = conn.execute(t.insert().values(
                    name=name, prefix=secret[:SHOWN_CHARS], secret_hash=hash_secret(secret),
                    scopes=",".join(x.value for x in parse_scopes(x.value for x in scopes)),
                    created_at=self._clock(), created_by=created_by,
                )).inserted_primary_key[0]
                row = conn.execute(select(t).where(t.c.id == new_id)).one()
        except IntegrityError:
            raise Conflict(f"a key named {name!r} was created concurrently") from None
        return _key_of(row), secret

    def list_api_keys(self) -> list[StoredKey]:
        """Every key, revoked ones included, in id order."""
        t = s.api_keys
        with self._read() as conn:
            return [_key_of(r) for r in conn.execute(select(t).order_by(t.c.id))]

    def find_api_key(self, secret: str) -> StoredKey | None:
        """The key whose secret this is (revoked or not), or None."""
        t = s.api_keys
        with self._read() as conn:
            row = conn.execute(select(t).where(t.c.secret_hash == hash_secret(secret))).first()
        return None if row is None else _key_of(row)

    def revoke_api_key(self, key_id: int) -> StoredKey:
        """Revoke a key (again: no change); raises NotFound."""
        t = s.api_keys
        with self._write(shown=False) as conn:  # no page shows keys
            conn.execute(update(t).where(t.c.id == key_id, t.c.revoked_at.is_(None)).values(revoked_at=self._clock()))
            row = conn.execute(select(t).where(t.c.id == key_id)).first()
        if row is None:
            raise NotFound(f"no API key {key_id}")
        return _key_of(row)
