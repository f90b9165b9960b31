"""Security headers on every response (the page, the API, errors, /docs and its files), a page
and docs that satisfy the Content-Security-Policy without inline script or style, and /docs
served offline: every file it loads comes from the app itself."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from service.config import Settings
from service.web.app import create_app
from tests.api_fixtures import API_KEY, MakeClient, app_state_of

AUTH = {"Authorization": f"Bearer {API_KEY}"}
HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


def assert_secured(response) -> None:  # type: ignore[no-untyped-def]
    for name, value in HEADERS.items():
        assert response.headers.get(name) == value, (response.request.url, name)
    policy = dict(
        (part.split(" ", 1) + [""])[:2] for part in (p.strip() for p in response.headers["content-security-policy"].split(";"))
    )
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == "'self'"  # no 'unsafe-inline', no 'unsafe-eval'
    assert policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text inside <script> and <style>."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline: list[str] = []
        self._inside: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._inside = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag: str) -> None:
        self._inside = None

    def handle_data(self, data: str) -> None:
        if self._inside and data.strip():
            self.inline.append(data)


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


@pytest.mark.parametrize("path", ["/", "/judges", "/judgements", "/tournaments", "/vote"])
def test_the_pages_have_the_headers_and_nothing_inline(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert_secured(response)
    tags = parse(response.text)
    assert tags.inline == []  # no inline script or style
    scripts = [attrs for t, attrs in tags.tags if t == "script"]
    assert all(attrs.get("src", "").startswith("/static/") for attrs in scripts)  # package files only
    assert not [t for t, _ in tags.tags if t == "style"]
    assert not [attrs for _, attrs in tags.tags if "style" in attrs]  # no style attributes either
    assert not [name for _, attrs in tags.tags for name in attrs if name.startswith("on")]  # nor handlers
    [sheet] = [attrs["href"] for tag, attrs in tags.tags if tag == "link" and attrs.get("rel") == "stylesheet"]
    css = client.get(sheet)
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert "font-family" in css.text
    assert_secured(css)


@pytest.mark.parametrize("path", ["/api/leaderboard", "/api/submissions", "/api/tournaments", "/openapi.json"])
def test_api_routes_have_the_headers(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert_secured(response)


def test_error_responses_have_the_headers(make_client: MakeClient) -> None:
    client = make_client(max_body_bytes=100)
    answers = {
        404: client.get("/api/nothing"),
        405: client.delete("/api/leaderboard"),
        401: client.post("/api/tournaments", json={}),
        403: client.post("/api/tournaments", json={}, headers={"Authorization": "Bearer nope"}),
        422: client.get("/api/leaderboard", params={"by": "judge"}),
        400: client.post("/api/tournaments", content=b"{", headers={**AUTH, "Content-Type": "application/json"}),
        413: client.post("/api/submissions", content=b"x" * 101, headers=AUTH),  # refused by BodyLimit
    }
    for status, response in answers.items():
        assert response.status_code == status
        assert_secured(response)


def test_a_server_error_has_the_headers(api_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    with TestClient(create_app(api_settings), raise_server_exceptions=False) as client:
        def fail(**_: object) -> list[dict]:
            raise RuntimeError("the database fell over")

        monkeypatch.setattr(app_state_of(client).store, "list_tournaments", fail)
        response = client.get("/api/tournaments")
    assert response.status_code == 500
    assert response.json() == {"error": "internal server error"}
    assert_secured(response)


def test_docs_load_offline_from_the_app(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    assert_secured(page)
    assert not re.search(r"https?://", page.text)  # no other host, not even a link
    tags = parse(page.text)
    assert tags.inline == []
    scripts = [attrs["src"] for tag, attrs in tags.tags if tag == "script"]
    sheets = [attrs["href"] for tag, attrs in tags.tags if tag == "link"]
    assert any(src.endswith("swagger-ui-bundle.js") for src in scripts)
    for url in scripts + sheets:
        assert not url.startswith(("/", "http:", "https:")), url  # relative: from the app, behind any prefix
        asset = client.get("/" + url)
        assert asset.status_code == 200, url
        assert_secured(asset)
    starter = client.get("/docs/docs.js").text
    assert 'url: "openapi.json"' in starter and "validatorUrl: null" in starter
    assert client.get("/openapi.json").status_code == 200


def test_docs_serve_only_their_own_files_and_no_redoc(client: TestClient) -> None:
    for path in ("/docs/index.html", "/docs/..%2Fapp.py", "/static/docs.js", "/static/../app.py", "/redoc"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.headers["content-type"] == "application/json"
