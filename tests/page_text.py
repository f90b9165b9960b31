"""Reading the pages as a person reads them, for TestClient tests: each table's body rows as
the text of their cells, found by the table's label (its caption, or the aria-label of the
scroll box around it). Parsed with the standard library's HTML parser, not regexes, so
attributes, line breaks and nesting in the markup do not matter."""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import httpx
from fastapi.testclient import TestClient

from tests.api_fixtures import app_state_of


class _Tables(HTMLParser):
    """Collects every <table>: its label and its rows (body and head) as cell texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[tuple[str, list[list[str]], list[list[str]]]] = []
        self._region: list[str] = []  # aria-labels of the open elements around
        self._open: list[str] = []
        self._table: tuple[str, list[list[str]], list[list[str]]] | None = None
        self._in_head = False
        self._caption: list[str] | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in ("div", "section", "figure"):
            self._open.append(tag)
            self._region.append(found.get("aria-label") or "")
        if tag == "table":
            self._table = (next((r for r in reversed(self._region) if r), ""), [], [])
        elif tag == "caption":
            self._caption = []
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("div", "section", "figure") and self._open:
            self._open.pop()
            self._region.pop()
        if tag == "caption" and self._caption is not None and self._table is not None:
            label = " ".join("".join(self._caption).split())
            self._table = (label, self._table[1], self._table[2])
            self._caption = None
        elif tag == "thead":
            self._in_head = False
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            (self._table[2] if self._in_head else self._table[1]).append(self._row)
            self._row = None
        elif tag == "table" and self._table is not None:
            self.tables.append(self._table)
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif self._caption is not None:
            self._caption.append(data)


def tables(text: str) -> dict[str, list[list[str]]]:
    """Every table's body rows by its label (caption, else the nearest aria-label around it)."""
    parser = _Tables()
    parser.feed(text)
    return {label: rows for label, rows, _ in parser.tables}


def heads(text: str) -> dict[str, list[str]]:
    """Every table's column headings by its label."""
    parser = _Tables()
    parser.feed(text)
    return {label: (head[0] if head else []) for label, _, head in parser.tables}


def rows_of(text: str, label: str) -> list[list[str]]:
    """The body rows of the table labelled `label`; fails naming the labels there are."""
    found = tables(text)
    assert label in found, f"no table {label!r}; tables: {list(found)}"
    return found[label]


def visible(text: str) -> str:
    """The page's text without tags, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def settled(client: TestClient, path: str) -> httpx.Response:
    """The page at `path` once nothing behind it is still being computed. A page waits up to a
    second for a board's first fit, effects and flags; on a loaded machine that second can pass
    and the page is then (rightly) served pending, without an ETag: wait for the background work
    and ask again."""
    state = app_state_of(client)
    page = client.get(path)
    for _ in range(6):  # a board, then its flags and effects: each may start the next
        if "etag" in page.headers:
            break
        for refreshes in (state.pages._refreshes, state.flags._refreshes, state.boards._boards._refreshes):  # type: ignore[attr-defined]
            refreshes.join_all(30)
        page = client.get(path)
    return page
