"""The web page, rendered on the server: the boards, what a scenario is worth, recent tournaments.

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

from leaderboard.types import Level, Rating
from service.boards import Board, BoardCache, EffectsAt
from service.store import Store

from .common import get_store
from .leaderboard import effect_rows, finite, get_boards

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


def rank_text(row: Rating, position: int) -> str:
    """The rank, with the range its interval allows when that is wider than one place."""
    rank, low, high = row.extra.get("rank", position), row.extra.get("rank_low"), row.extra.get("rank_high")
    if low is None or high is None or low == high:
        return esc(rank)
    return f"{esc(rank)} <span class=muted>({esc(low)}–{esc(high)})</span>"


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
        f"<td class=num>{rank_text(row, position)}</td><td>{esc(row.player)}</td>"
        f"<td class=num>{number(row.rating)}</td>"
        f"<td class=num>{number(row.ci_low)} – {number(row.ci_high)}</td><td class=num>{number(row.elo)}</td>"
        f"<td class=num>{row.wins} / {row.losses} / {row.ties}</td><td class=num>{row.matches}</td>"
        "</tr>"
        for position, row in enumerate(board.rows, start=1)
    )
    note = f"{board.judgements} judgement{'s' if board.judgements != 1 else ''} counted"
    caption = f"{title} <span class=muted>({esc(note)})</span>"
    return f"<table><caption>{caption}</caption><thead>{head}</thead><tbody>{body}</tbody></table>"


def scenarios_table(fitted: EffectsAt | None, revision: int) -> str:
    """What each scenario adds to a system's rating across models, from the joint effects fit;
    `revision` is the boards', so an older fit (still being refitted) says so."""
    head = "<tr><th>Scenario</th><th class=num>Effect (Elo points)</th><th class=num>95% CI</th></tr>"
    rows = effect_rows(fitted.effects.scenarios) if fitted is not None else []
    body = "".join(
        f"<tr><td>{esc(name)}</td><td class=num>{signed(effect)}</td>"
        f"<td class=num>{signed(low)} – {signed(high)}</td></tr>"
        for name, effect, low, high in rows
    )
    if fitted is None:
        body = "<tr><td colspan=3 class=muted>Being fitted; refresh in a moment.</td></tr>"
    elif not body:
        body = "<tr><td colspan=3 class=muted>No judgements between systems yet.</td></tr>"
    note = ""
    if fitted is not None:
        battles = fitted.effects.battles
        note = f"model and scenario effects fitted together on {battles} judgement{'s' if battles != 1 else ''}"
        if fitted.revision < revision:
            note += f", {revision - fitted.revision} newer being added"
        note = f" <span class=muted>({esc(note)})</span>"
    return (
        f"<table><caption>What a scenario is worth{note}</caption><thead>{head}</thead>"
        f"<tbody>{body}</tbody></table>"
    )


def signed(value: float | None) -> str:
    """An effect with its sign, so +35 and -35 read as what they are."""
    return "—" if value is None else f"{value:+.0f}"


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


def render_page(boards: list[Board], recent: Iterable[dict], effects: EffectsAt | None = None) -> str:
    """The whole page."""
    tables = "".join(board_table(b) for b in boards)
    revision = max((b.revision for b in boards), default=0)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta http-equiv="refresh" content="30">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>joust leaderboard</title><style>{STYLE}</style></head><body>"
        "<h1>joust leaderboard</h1>"
        "<p class=muted>Bradley-Terry ratings on the Elo scale (1000 = the mean player) with 95% intervals; "
        "Elo is the online rating in judgement order. Order-inconsistent verdicts count as ties. "
        'JSON: <a href="/api/leaderboard">/api/leaderboard</a>, API docs: <a href="/docs">/docs</a>.</p>'
        f"{tables}{scenarios_table(effects, revision)}{tournaments_table(recent)}"
        "</body></html>"
    )


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page(
    store: Annotated[Store, Depends(get_store)], cache: Annotated[BoardCache, Depends(get_boards)]
) -> HTMLResponse:
    """The leaderboards by model, by scenario and by system (current as of this request), what a
    scenario is worth (fitted in the background when that takes long), and the recent tournaments."""
    boards = [cache.board(level) for level in (Level.MODEL, Level.SCENARIO, Level.SYSTEM)]
    return HTMLResponse(render_page(boards, store.list_tournaments(limit=RECENT), cache.effects_soon()))
