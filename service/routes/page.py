"""The web page, rendered on the server: the boards, what a scenario is worth, judge health,
rubric scores, recent tournaments.

The boards and the scenario effects are one judge's, chosen as the API chooses
(`leaderboard.judges`; `/?judge=...` names one): the page says whose and why, and links the
other judges' pages. Players the verdicts never linked are shown as separate groups of a board
(`leaderboard.components`), each ranked on its own.

Plain HTML that reads without JavaScript and refreshes itself every 30 seconds; its style is a
stylesheet the app serves (no inline style or script, see the Content-Security-Policy in
service.app). Every piece of
text that came from a user (model and scenario names, tournament names, judges) goes through
`html.escape`, so a model called `<script>` is shown, never run.

Judge health comes from the cache GET /api/judges also serves (`service.judge_health_cache`:
one computation per app, redone only when judgements or parse failures change); the rubric
scores are the `GET /api/scores` figures (by model and scenario, `compqa`), read on each load
from the scores table, which holds one row per scored submission and judge.
"""
from __future__ import annotations

import html
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query
from fastapi.responses import HTMLResponse

from leaderboard.effects import fit_effects
from leaderboard.health import JudgeHealth
from leaderboard.judges import ChosenBy, JudgeChoice, UnknownJudge
from leaderboard.types import Level, Rating
from service.boards import Board, BoardCache, EffectsAt
from service.history_chart import history_svg
from service.judge_health_cache import JudgeHealthCache
from service.store import Store

from .common import FilterText, get_store
from .judges import get_judge_health
from .leaderboard import effect_rows, finite, get_boards

router = APIRouter(tags=["page"])

TITLES = {Level.MODEL: "Models", Level.SCENARIO: "Scenarios", Level.SYSTEM: "Systems (model + scenario)"}
RECENT = 20
SCORED = "compqa"  # the criteria set whose absolute scores the page shows (GET /api/scores' default)

# The page's stylesheet (service/static/page.css, served by routes.docs): no inline style, so the
# Content-Security-Policy (service.app) needs no 'unsafe-inline'.
STYLESHEET = "/static/page.css"


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


def interval_text(row: Rating) -> str:
    """The 95% interval, or why there is none: a group whose verdicts bound no rating."""
    if not row.extra.get("bounded", True):
        return ("<span class=muted title=\"someone in this group won every game against the rest of it: "
                "the verdicts order the players but do not say by how much\">unbounded</span>")
    return f"{number(row.ci_low)} – {number(row.ci_high)}"


def board_table(board: Board) -> str:
    """One leaderboard as a <table>: one <tbody> per component, headed when there are several."""
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
    groups: dict[int, list[Rating]] = {}
    for row in board.rows:
        groups.setdefault(int(row.extra.get("component", 1)), []).append(row)
    bodies = "".join(component_body(component, rows, len(groups)) for component, rows in groups.items())
    note = f"{board.judgements} judgement{'s' if board.judgements != 1 else ''} counted"
    if len(groups) > 1:
        note += f"; {len(groups)} groups never compared with each other, each ranked on its own"
    caption = f"{title} <span class=muted>({esc(note)})</span>"
    return f"<table><caption>{caption}</caption><thead>{head}</thead>{bodies}</table>"


def component_body(component: int, rows: Sequence[Rating], components: int) -> str:
    """The rows of one component as a <tbody>; headed when the board has several components."""
    heading = ""
    if components > 1:
        players = f"{len(rows)} player{'s' if len(rows) != 1 else ''}"
        heading = (f"<tr class=component><th colspan=7>Group {component} of {components} ({players}): "
                   "ratings and ranks compare within the group only</th></tr>")
    body = "".join(
        "<tr>"
        f"<td class=num>{rank_text(row, position)}</td><td>{esc(row.player)}</td>"
        f"<td class=num>{number(row.rating)}</td>"
        f"<td class=num>{interval_text(row)}</td><td class=num>{number(row.elo)}</td>"
        f"<td class=num>{row.wins} / {row.losses} / {row.ties}</td><td class=num>{row.matches}</td>"
        "</tr>"
        for position, row in enumerate(rows, start=1)
    )
    return f"<tbody>{heading}{body}</tbody>"


CHOSEN = {
    ChosenBy.NAMED: "named in the address",
    ChosenBy.LATEST_TOURNAMENT: "the judge of the latest tournament",
    ChosenBy.MOST_VERDICTS: "the judge with the most verdicts",
    ChosenBy.HUMANS_ONLY: "only human votes so far: every voter together",
}


def judge_link(judge: str) -> str:
    """The page of one judge's boards."""
    return "/?" + urlencode({"judge": judge})


def judges_text(choice: JudgeChoice) -> str:
    """Whose verdicts the boards hold, why that judge, and links to the other judges' boards."""
    if choice.judge is None:
        return ""
    why = esc(CHOSEN.get(choice.chosen_by, choice.chosen_by.value))
    if choice.chosen_by is ChosenBy.NAMED:
        why += '; <a href="/">the default judge</a>'
    others = ", ".join(
        f'<a href="{esc(judge_link(o.judge))}">{esc(o.judge)}</a> ({o.verdicts} verdict{"s" if o.verdicts != 1 else ""})'
        for o in choice.others
    )
    listed = f" Other judges: {others}." if others else ""
    return (f"<p class=judge>Boards of judge <strong>{esc(choice.judge)}</strong> <span class=muted>({why})</span>: "
            f"one judge's verdicts, never several pooled.{listed}</p>")


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


def percent(value: float | None) -> str:
    """A share as a percentage with one decimal; an em dash when there was nothing to count."""
    value = None if value is None else finite(value)
    return "—" if value is None else f"{100 * value:.1f}%"


HEALTH_LEGEND = (
    "Shares of each judge's calls (one call = one verdict on one display order). First position: of the "
    "calls naming a winner, the share won by the answer shown first; 50% means no position bias. "
    "Consistency: both-order judgements whose two orders agree. Longer wins: calls naming a winner "
    "that picked the longer answer. Human agreement: verdicts matching human votes on the same pairs; "
    "without ties: among the comparisons where both name a winner. "
    "— means nothing to count. JSON: "
)


def health_table(judges: Sequence[JudgeHealth]) -> str:
    """One row per judge: how far its verdicts can be trusted (see `leaderboard.health`)."""
    head = (
        "<tr><th>Judge</th><th class=num>Calls</th><th class=num>Consistency</th>"
        "<th class=num>First position</th><th class=num>Ties</th><th class=num>Parse failures</th>"
        "<th class=num>Longer wins</th><th class=num>Human agreement</th><th class=num>Without ties</th></tr>"
    )
    body = "".join(
        "<tr>"
        f"<td>{esc(h.judge)}</td><td class=num>{h.calls}</td><td class=num>{percent(h.consistency)}</td>"
        f"<td class=num>{percent(h.first_position_win_rate)}</td><td class=num>{percent(h.tie_rate)}</td>"
        f"<td class=num>{percent(h.parse_failure_rate)}</td><td class=num>{percent(h.longer_wins_rate)}</td>"
        f"<td class=num>{human_text(h.human_agreement, h.human_pairs)}</td>"
        f"<td class=num>{human_text(h.human_agreement_decided, h.human_decided_pairs)}</td>"
        "</tr>"
        for h in judges
    )
    if not body:
        body = "<tr><td colspan=9 class=muted>No judgements yet.</td></tr>"
    legend = f'<p class=muted>{esc(HEALTH_LEGEND)}<a href="/api/judges">/api/judges</a>.</p>'
    return f"<table><caption>Judge health</caption><thead>{head}</thead><tbody>{body}</tbody></table>{legend}"


def human_text(agreement: float | None, pairs: int) -> str:
    """Agreement with human votes and on how many pairs it rests."""
    if agreement is None:
        return "—"
    return f"{percent(agreement)} <span class=muted>({pairs} pair{'s' if pairs != 1 else ''})</span>"


def score_text(row: Mapping | None) -> str:
    """mean ± std (n) of one judge's scores of one system; em dashes for what is missing."""
    if row is None:
        return "—"
    return f"{number(row['mean'], 1)} ± {number(row['std'], 1)} <span class=muted>({int(row['n'])})</span>"


def scores_table(by_judge: Mapping[str, Sequence[Mapping]]) -> str:
    """Rubric scores per (model, scenario), one column per judge; nothing when none are stored."""
    judges = [name for name, rows in by_judge.items() if rows]
    if not judges:
        return ""
    cells = {(name, r.get("model"), r.get("scenario")): r for name in judges for r in by_judge[name]}
    systems = sorted({(model, scenario) for _, model, scenario in cells}, key=lambda s: (str(s[0]), str(s[1])))
    head = "<tr><th>Model</th><th>Scenario</th>" + "".join(f"<th class=num>{esc(j)}</th>" for j in judges) + "</tr>"
    body = "".join(
        f"<tr><td>{esc(model)}</td><td>{esc(scenario)}</td>"
        + "".join(f"<td class=num>{score_text(cells.get((j, model, scenario)))}</td>" for j in judges)
        + "</tr>"
        for model, scenario in systems
    )
    note = (
        f" <span class=muted>({esc(SCORED)} rubric, out of 19: mean ± standard deviation (number of scores); "
        f'JSON: <a href="/api/scores">/api/scores</a>)</span>'
    )
    return f"<table><caption>Rubric scores{note}</caption><thead>{head}</thead><tbody>{body}</tbody></table>"


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


def render_page(
    boards: list[Board], recent: Iterable[dict], effects: EffectsAt | None = None,
    health: Sequence[JudgeHealth] = (), scores: Mapping[str, Sequence[Mapping]] | None = None,
    history: str = "", choice: JudgeChoice | None = None,
) -> str:
    """The whole page; `scores` are score means by judge (`Store.score_means`, by model and
    scenario); `choice`: whose verdicts the boards and effects hold."""
    tables = "".join(board_table(b) for b in boards)
    revision = max((b.revision for b in boards), default=0)
    api = "/api/leaderboard" if choice is None or choice.judge is None else "/api/leaderboard?" + urlencode(
        {"judge": choice.judge})
    return (
        f"{page_head('joust leaderboard')}"
        "<p class=muted>Bradley-Terry ratings on the Elo scale (1000 = the mean player) with 95% intervals; "
        "Elo is the online rating in judgement order. Order-inconsistent verdicts count as ties. "
        f'JSON: <a href="{esc(api)}">/api/leaderboard</a>, API docs: <a href="/docs">/docs</a>.</p>'
        f"{judges_text(choice) if choice is not None else ''}"
        f"{tables}{scenarios_table(effects, revision)}{health_table(health)}{scores_table(scores or {})}"
        f"{history}{tournaments_table(recent)}"
        "</body></html>"
    )


def page_head(title: str) -> str:
    """The document up to the <h1>, which says `title`."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta http-equiv="refresh" content="30">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{esc(title)}</title><link rel="stylesheet" href="{STYLESHEET}"></head><body>'
        f"<h1>{esc(title)}</h1>"
    )


def render_unknown_judge(error: UnknownJudge) -> str:
    """The page for a judge without verdicts: what is wrong, and the judges there are."""
    links = "".join(f'<li><a href="{esc(judge_link(j))}">{esc(j)}</a></li>' for j in error.known)
    listed = f"<p>Judges with verdicts:</p><ul>{links}</ul>" if links else "<p>No judge has verdicts yet.</p>"
    return (f"{page_head('joust leaderboard')}<p>No verdicts from judge <strong>{esc(error.judge)}</strong>.</p>{listed}"
            '<p><a href="/">The default board</a></p></body></html>')


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page(
    store: Annotated[Store, Depends(get_store)], cache: Annotated[BoardCache, Depends(get_boards)],
    health: Annotated[JudgeHealthCache, Depends(get_judge_health)],
    judge: Annotated[FilterText | None, Query()] = None,
) -> HTMLResponse:
    """One judge's leaderboards by model, by scenario and by system (current as of this request;
    the judge named by `judge=`, else chosen as the API chooses), what a scenario is worth by that
    judge (fitted in the background when that takes long), each judge's health, the rubric
    scores when there are any, and the recent tournaments. 404 for a judge without verdicts."""
    try:
        choice = cache.choose(judge=judge)
    except UnknownJudge as exc:
        return HTMLResponse(render_unknown_judge(exc), status_code=404)
    # Named from here on, so that all three boards hold the judge the page names.
    boards = [cache.judged(level, judge=choice.judge)[1] for level in (Level.MODEL, Level.SCENARIO, Level.SYSTEM)]
    if choice.judge is None:  # nothing judged yet: nothing to fit
        effects: EffectsAt | None = EffectsAt(fit_effects([]), max(b.revision for b in boards))
    else:
        effects = cache.effects_soon(judge=choice.judge)
    scores = {name: store.score_means(name, SCORED, ("model", "scenario")) for name in store.score_judges(SCORED)}
    recent = store.list_tournaments(limit=RECENT)
    return HTMLResponse(render_page(
        boards, recent, effects, health.current().judges, scores, latest_history(store, recent), choice,
    ))


def latest_history(store: Store, recent: Iterable[dict]) -> str:
    """The history chart (by model) of the newest recent scheduled tournament with snapshots."""
    for t in recent:
        if t.get("schedule"):
            snapshots = store.snapshots(t["id"], Level.MODEL.value)
            if snapshots:
                return history_svg(f"History of {t['name']} (#{t['id']})", snapshots)
    return ""
