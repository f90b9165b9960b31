"""GET /api/revision: what the pages poll, every few seconds, to learn whether to refresh.

Why a route of its own: a page reloads only when something it shows may have changed, and the
poll must stay cheap with a million judgements stored while a tournament writes. It answers the
store's page mark (`Store.page_mark`: two counter rows, one indexed read) and is never cached
(`Cache-Control: no-store`), so a poll always reaches the store.
"""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, Field

from service.store import Store
from service.web.routes.common import get_store

router = APIRouter(prefix="/api/revision", tags=["pages"])


class RevisionOut(BaseModel):
    """Where the store stands, for the pages to poll."""

    revision: int = Field(ge=0, description="matches ever resolved: the `revision` of the boards current now")
    mark: str = Field(description="differs whenever anything the pages show may have changed (a judgement "
                                  "resolved, a match failed, cancelled or retried, a tournament created, started, "
                                  "finished or stopped, a vote, a submission); compare it, do not parse it")


@router.get("", response_model=RevisionOut)
def get_revision(store: Annotated[Store, Depends(get_store)], response: Response) -> RevisionOut:
    """The store's revision and the pages' mark, as of this request; never cached."""
    response.headers["Cache-Control"] = "no-store"
    found = store.page_mark()
    return RevisionOut(revision=found.revision, mark=found.mark)
