"""Interactive API docs at /docs, served offline, and the app's own static files.

Swagger UI's files come from a package on disk (the `fastapi-offline` wheel ships Swagger UI 5,
which reads OpenAPI 3.1, FastAPI's version; the `swagger-ui-bundle` wheel's 4.15 does not), so
the docs work without a network and trust no CDN. The page that starts it has no inline script
(service/static/docs.js does), so the Content-Security-Policy of service.app holds for it too.
ReDoc is not served: its styles are injected inline, which that policy forbids.

Only the files named here are served: nothing else in either directory is reachable.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from .common import ApiError

router = APIRouter(include_in_schema=False)

STATIC = Path(__file__).resolve().parent.parent / "static"
SWAGGER_UI = Path(str(files("fastapi_offline") / "static"))
# Cached by the browser for an hour: they change only when the package does.
CACHE = {"Cache-Control": "public, max-age=3600"}

DOCS_ASSETS = {
    "swagger-ui.css": SWAGGER_UI / "swagger-ui.css",
    "swagger-ui-bundle.js": SWAGGER_UI / "swagger-ui-bundle.js",
    "favicon.png": SWAGGER_UI / "favicon.png",
    "docs.js": STATIC / "docs.js",
}
STATIC_FILES = {name: STATIC / name for name in (
    "page.css", "live.js", "board.js", "favicon.svg", "vote.js",
    # axe-core (MPL-2.0, its notice kept at the top of the file), for accessibility checks of the
    # pages in a browser (tests/test_browser.py) without a CDN.
    "axe.min.js",
)}

DOCS_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>joust API</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
<link rel="icon" type="image/png" href="docs/favicon.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/docs.js"></script>
</body>
</html>
"""


def _file(table: dict[str, Path], name: str, where: str) -> FileResponse:
    path = table.get(name)
    if path is None:
        raise ApiError(404, f"no such file: {where}/{name}")
    return FileResponse(path, headers=CACHE)


@router.get("/openapi.json")
def openapi(request: Request) -> JSONResponse:
    """The OpenAPI document, served here rather than by FastAPI's own route (which bypasses the
    app's dependencies) so that a private joust (JOUST_PRIVATE=1) closes it like every read."""
    return JSONResponse(request.app.openapi())


@router.get("/docs")
def docs() -> HTMLResponse:
    """Swagger UI over /openapi.json (its URLs are relative, so a proxy prefix keeps working)."""
    return HTMLResponse(DOCS_PAGE)


@router.get("/docs/{name}")
def docs_asset(name: str) -> FileResponse:
    """One of Swagger UI's files, or its starter script."""
    return _file(DOCS_ASSETS, name, "/docs")


@router.get("/static/{name}")
def static_file(name: str) -> FileResponse:
    """The pages' stylesheet, scripts and icon."""
    return _file(STATIC_FILES, name, "/static")
