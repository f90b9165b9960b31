"""The web page: the leaderboards and the recent tournaments, rendered on the server.

Plain HTML that reads without JavaScript and refreshes itself every 30 seconds. Every piece of
text that came from a user (model and scenario names, tournament names, judges) goes through
`html.escape`, so a model called `<script>` is shown, never run.
"""
from __future__ import annotations

import html
import time
from collections.abc import Iterable
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse

from leaderboard.types import Level
from service.config import Settings
from service.store import Store

from .common import get_settings, get_store
from .leaderboard import Board, board_at, finite

router = APIRouter(tags=["page"])

TITLES = {Level.MODEL: "Models", Level.SCENARIO: "Scenarios", Level.SYSTEM: "Systems (model + scenario)"}
RECENT = 20

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; margin-bottom: 2rem; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid #ddd; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: bold; font-size: 1.2rem; padding: .5rem 0; }
.muted { color: #777; }
"""


def esc(value: object) -> str:
    """Any value as HTML text, quotes included."""
    return html.escape(str(value), quote=True)


def number(value: float | None, digits: int = 0) -> str:
    """A rating for display; an em dash when there is none."""
    value = None if value is None else finite(value)
    return "—" if value is None else f"{value:.{digits}f}"


def board_table(board: Board) -> str:
    """One leaderboard as a <table>."""
    title = esc(TITLES[board.level])
    head = (
        "<tr><th class=num>#</th><th>Player</th><th class=num>Rating</th><th class=num>95% CI</th>"
        "<th class=num>Elo</th><th class=num>W / L / T</th><th class=num>Matches</th></tr>"
    )
    if not board.rows:
        return (
            f"<table><caption>{title}</caption><thead>{head}</thead>"
            "<tbody><tr><td colspan=7 class=muted>No judgements yet at this level.</td></tr></tbody></table>"
        )
    body = "".join(
        "<tr>"
        f"<td class=num>{rank}</td><td>{esc(row.player)}</td><td class=num>{number(row.rating)}</td>"
        f"<td class=num>{number(row.ci_low)} – {number(row.ci_high)}</td><td class=num>{number(row.elo)}</td>"
        f"<td class=num>{row.wins} / {row.losses} / {row.ties}</td><td class=num>{row.matches}</td>"
        "</tr>"
        for rank, row in enumerate(board.rows, start=1)
    )
    note = f"{board.judgements} judgement{'s' if board.judgements != 1 else ''} counted"
    caption = f"{title} <span class=muted>({esc(note)})</span>"
    return f"<table><caption>{caption}</caption><thead>{head}</thead><tbody>{body}</tbody></table>"


def when(stamp: float | None) -> str:
    """A unix time as UTC text."""
    return "—" if stamp is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(stamp))


def tournaments_table(rows: Iterable[dict]) -> str:
    """The recent tournaments with status and progress."""
    body = "".join(
        "<tr>"
        f"<td class=num>{esc(t['id'])}</td><td>{esc(t['name'])}</td><td>{esc(t['status'])}</td>"
        f"<td class=num>{t['matches_done'] + t['matches_failed']} / {t['matches_total']}"
        f"{' (' + esc(t['matches_failed']) + ' failed)' if t['matches_failed'] else ''}</td>"
        f"<td>{esc(t.get('judge') or '')}</td><td>{esc(t.get('schedule') or '')}</td><td>{esc(when(t['created_at']))}</td>"
        "</tr>"
        for t in rows
    )
    if not body:
        body = "<tr><td colspan=7 class=muted>No tournaments yet.</td></tr>"
    return (
        "<table><caption>Recent tournaments</caption><thead><tr><th class=num>#</th><th>Name</th><th>Status</th>"
        "<th class=num>Judged</th><th>Judge</th><th>Schedule</th><th>Created</th></tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def render_page(boards: Iterable[Board], recent: Iterable[dict]) -> str:
    """The whole page."""
    tables = "".join(board_table(b) for b in boards)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta http-equiv="refresh" content="30">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>joust leaderboard</title><style>{STYLE}</style></head><body>"
        "<h1>joust leaderboard</h1>"
        "<p class=muted>Bradley-Terry ratings on the Elo scale (1000 = the mean player) with 95% intervals; "
        "Elo is the online rating in judgement order. Order-inconsistent verdicts count as ties. "
        'JSON: <a href="/api/leaderboard">/api/leaderboard</a>, API docs: <a href="/docs">/docs</a>.</p>'
        f"{tables}{tournaments_table(recent)}"
        "</body></html>"
    )


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page(
    store: Annotated[Store, Depends(get_store)], settings: Annotated[Settings, Depends(get_settings)]
) -> HTMLResponse:
    """The leaderboards by model, by scenario and by system, and the recent tournaments."""
    rows = store.side_rows()
    boards = [board_at(rows, level, k=settings.elo_k) for level in (Level.MODEL, Level.SCENARIO, Level.SYSTEM)]
    return HTMLResponse(render_page(boards, store.list_tournaments(limit=RECENT)))
