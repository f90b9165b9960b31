"""The web pages, one router: each page is a module of its own (`page*.py`), listed here once so
the app includes them all and a new page touches one line."""
from __future__ import annotations

from fastapi import APIRouter

from service.web.routes import page, page_judgements, page_judges, page_tournaments, page_vote

router = APIRouter(include_in_schema=False)
for module in (page, page_judges, page_judgements, page_tournaments, page_vote):
    router.include_router(module.router)
