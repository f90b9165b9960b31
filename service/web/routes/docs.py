"""Interactive API docs at /docs, served offline, and the app's own static files.

Swagger UI's files come from a package on disk (the `fastapi-offline` wheel ships Swagger UI 5,
which reads OpenAPI 3.1, FastAPI's version; the `swagger-ui-bundle` wheel's 4.15 does not), so
the docs work without a network and trust no CDN. The page that starts it has no inline script
(service/web/static/docs.js does), so the Content-Security-Policy of service.web.app holds for it too.
ReDoc is not served: its styles are injected inline, which that policy forbids.

Only the files named here are served: nothing else in either directory is reachable.

The manual (docs/, built by `mkdocs build` into site/ in joust's checkout, see mkdocs.yml) is
served at /docs/guide/ when it has been built, so that a deployed joust carries its own manual;
when it has not, /docs/guide answers 404 saying how to build it. Only files inside site/ are
served. Material's pages carry small inline scripts and styles, so the manual's answers carry a
Content-Security-Policy of their own that allows those (and search's worker), and nothing from
another origin.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse

from service.web.routes.common import ApiError

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

# Where `mkdocs build` writes the manual in a checkout (mkdocs.yml's site_dir).
GUIDE = Path(__file__).resolve().parents[3] / "site"
GUIDE_NOT_BUILT = ("the manual is not built here: in joust's checkout run `.venv/bin/mkdocs build` "
                   "(the dev extra installs MkDocs), which writes site/; then reload /docs/guide/")
GUIDE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self' 'unsafe-inline' blob:; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; "
        "frame-src 'self' blob: data:; child-src 'self' blob: data:; form-action 'self'; base-uri 'self'; "
        "frame-ancestors 'self'"
    ),
    "X-Frame-Options": "SAMEORIGIN",
    "Cache-Control": "public, max-age=300",
}

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


@router.get("/docs/guide")
def guide_root() -> RedirectResponse:
    """The manual's front page (relative, so a proxy prefix keeps working)."""
    return RedirectResponse("guide/index.html", status_code=307)


@router.get("/docs/guide/{path:path}")
def guide_file(path: str) -> FileResponse:
    """A file of the built manual (site/); 404 saying how to build it when it is not built."""
    return FileResponse(guide_path(GUIDE, path), headers=GUIDE_HEADERS)


def guide_path(root: Path, path: str) -> Path:
    """The file of the built manual under `root` that `path` names (a folder: its index.html);
    ApiError 404 when the manual is not built, or `path` names nothing inside it."""
    root = root.resolve()
    if not (root / "index.html").is_file():
        raise ApiError(404, GUIDE_NOT_BUILT)
    target = (root / path).resolve()
    if target.is_dir():
        target = target / "index.html"
    if not target.is_relative_to(root) or not target.is_file():
        raise ApiError(404, f"no such page in the manual: /docs/guide/{path}")
    return target


@router.get("/docs/{name}")
def docs_asset(name: str) -> FileResponse:
    """One of Swagger UI's files, or its starter script."""
    return _file(DOCS_ASSETS, name, "/docs")


@router.get("/static/{name}")
def static_file(name: str) -> FileResponse:
    """The pages' stylesheet, scripts and icon."""
    return _file(STATIC_FILES, name, "/static")
