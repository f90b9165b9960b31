"""API keys: an admin issues named keys with scopes, lists them and revokes them.

`POST /api/keys` answers the new key's secret once (only its SHA-256 is stored); `GET /api/keys`
lists every key, revoked ones included, never a secret; `DELETE /api/keys/{id}` revokes one (its
row stays: the writes it made keep its name). All three need the `admin` scope (see
`service.web.auth`).
"""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, StrictStr, TypeAdapter

from service.store import Scope, Store
from service.store.api_keys import NAME_MAX, name_problem
from service.web.auth import Caller, require_admin
from service.web.routes.common import (
    ApiError,
    error_responses,
    get_store,
    id_path,
    json_body,
    request_body,
    validate,
)

router = APIRouter(prefix="/api/keys", tags=["keys"], responses=error_responses(401, 403, 422))


class KeyIn(BaseModel):
    """A key to issue: its name (letters, digits, '-', '_', '.'; never reused) and its scopes
    (none: a key that may only read, e.g. for Prometheus when JOUST_PRIVATE=1)."""

    model_config = ConfigDict(extra="forbid", strict=True,
                              json_schema_extra={"examples": [{"name": "ci-submitter", "scopes": ["submit"]}]})

    name: Annotated[StrictStr, Field(min_length=1, max_length=NAME_MAX)]
    scopes: list[Annotated[Scope, Field(strict=False)]] = Field(default_factory=list)


_REQUEST = TypeAdapter(KeyIn)


class KeyOut(BaseModel):
    """An API key as listed: never its secret; `prefix` (its first characters) recognises it."""

    id: int
    name: str
    prefix: str
    scopes: list[Scope]
    created_at: float
    created_by: str | None
    revoked_at: float | None
    revoked: bool


class IssuedKeyOut(KeyOut):
    """A new key with its secret, answered once: only its SHA-256 is stored."""

    secret: str


class KeysOut(BaseModel):
    keys: list[KeyOut]


@router.post("", status_code=201, response_model=IssuedKeyOut, responses=error_responses(400, 409),
             openapi_extra=request_body(_REQUEST.json_schema()))
def create_key(
    caller: Annotated[Caller, Depends(require_admin)],
    body: Annotated[Any, Depends(json_body)],
    store: Annotated[Store, Depends(get_store)],
) -> dict:
    """Issue a key; the answer holds its `secret`, shown this once."""
    request = validate(_REQUEST, body)
    problem = name_problem(request.name)
    if problem is not None:
        raise ApiError(422, f"name: {problem}", details=[{"path": "name", "message": problem}])
    key, secret = store.create_api_key(request.name, request.scopes, created_by=caller.name)
    return {**key.as_dict(), "secret": secret}


@router.get("", response_model=KeysOut, dependencies=[Depends(require_admin)])
def list_keys(store: Annotated[Store, Depends(get_store)]) -> dict:
    """Every key (revoked ones included): id, name, prefix, scopes, who created it and when,
    revoked_at. Never a secret."""
    return {"keys": [key.as_dict() for key in store.list_api_keys()]}


@router.delete("/{key_id}", response_model=KeyOut, dependencies=[Depends(require_admin)], responses=error_responses(404))
def revoke_key(key_id: Annotated[int, id_path("key")], store: Annotated[Store, Depends(get_store)]) -> dict:
    """Revoke a key: from now on it is refused (403). Revoking it again changes nothing."""
    return store.revoke_api_key(key_id).as_dict()
