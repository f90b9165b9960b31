"""The judgements pages: `/judgements`, the list behind a board's number (a row: `player=`; a
heatmap cell: `player=` and `opponent=`), filtered by question and by inconsistent, tied or
decided verdicts; and `/judgements/{id}`, one judgement with the question, both outputs side by
side, each call with the order it was shown in and the judge's reason, and whether the orders
agreed.

The list is `GET /api/judgements`' (`Store.list_judgements`, the same judge rule as the boards),
50 a page, newest first; its later pages hold still while judgements arrive (`upto=`).
"""
from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from leaderboard.judges import UnknownJudge
from service.store import JudgementQuery, NotFound, Shown, Store
from service.usecases.boards import BoardCache
from service.web.api_views import JudgementOut
from service.web.pages.judgement_view import judgement_view
from service.web.pages.prepared import LEVEL_TITLES
from service.web.pages.render import Mark, mark_of, not_modified, render
from service.web.routes.common import get_store
from service.web.routes.leaderboard import get_boards
from service.web.routes.page import LEVELS, PageProblem, board_link, parse_level, parse_tournament

router = APIRouter(tags=["page"])

PAGE = 50
FILTERS = {"": "every judgement", "inconsistent": "orders disagreed", "ties": "ties", "decided": "a winner named"}
TEXT_MAX = 255  # a player, an opponent, a question id: as long as the store keeps them


def parse_text(name: str, value: str | None) -> str | None:
    if not value:
        return None
    if len(value) > TEXT_MAX or any(ord(c) < 32 for c in value):
        raise PageProblem(f"{name}= must be at most {TEXT_MAX} printable characters")
    return value


def parse_filter(value: str | None) -> Shown | None:
    if not value:
        return None
    try:
        return Shown(value)
    except ValueError:
        raise PageProblem(f"filter={value!r} is not one of: {', '.join(s.value for s in Shown)}") from None


def parse_count(name: str, value: str | None) -> int | None:
    if not value:
        return None
    if not value.isdigit() or int(value) > 2**31 - 1:
        raise PageProblem(f"{name}={value!r} is not a number")
    return int(value)


@router.get("/judgements", response_class=HTMLResponse, include_in_schema=False)
def judgements_page(
    request: Request,
    store: Annotated[Store, Depends(get_store)],
    cache: Annotated[BoardCache, Depends(get_boards)],
) -> Response:
    """One judge's judgements, newest first, 50 a page, narrowed by the form's choices. 404 for
    a judge without verdicts or an unknown tournament, 422 for a choice that is not one."""
    mark = mark_of(store)
    cached = not_modified(request, mark)
    if cached is not None:
        return cached
    params = request.query_params
    try:
        level = parse_level(params.get("by"))
        tournament = parse_tournament(params.get("tournament"))
        player = parse_text("player", params.get("player"))
        opponent = parse_text("opponent", params.get("opponent"))
        question = parse_text("question", params.get("question"))
        shown = parse_filter(params.get("filter"))
        offset = parse_count("offset", params.get("offset")) or 0
        upto = parse_count("upto", params.get("upto"))
        judge = parse_text("judge", params.get("judge"))
    except PageProblem as exc:
        return problem(request, mark, str(exc), 422)
    try:
        choice = cache.choose(tournament_id=tournament, judge=judge)
    except (UnknownJudge, NotFound) as exc:
        return problem(request, mark, str(exc), 404)
    rows = []
    if choice.judge is not None:
        rows = store.list_judgements(JudgementQuery(
            judge=choice.judge, level=level, player=player, opponent=opponent, question_id=question, shown=shown,
            tournament_id=tournament, upto=upto, limit=PAGE + 1, offset=offset))
    choices = {"judge": choice.judge, "by": level.name.lower(), "player": player, "opponent": opponent,
               "question": question, "filter": shown.value if shown else None, "tournament": tournament}
    pinned = {**choices, "upto": upto if upto is not None else (rows[0].id if rows else None)}
    context = {
        "rows": rows[:PAGE], "choice": choice, "level": level, "choices": choices, "levels": LEVELS,
        "titles": LEVEL_TITLES, "filters": FILTERS, "judges": [s.judge for s in choice.judges],
        "older": link(pinned, offset + PAGE) if len(rows) > PAGE else None,
        "newer": link(pinned, max(offset - PAGE, 0)) if offset else None,
        "board": board_link(judge=choice.judge, by=level.name.lower(), tournament=tournament),
        "api": "/api/judgements?" + urlencode({k: v for k, v in {
            "judge": choice.judge, "level": level.value, "player": player, "opponent": opponent,
            "question_id": question, "filter": shown.value if shown else None, "tournament": tournament,
        }.items() if v is not None}),
        "offset": offset,
    }
    return render(request, "judgements.html", context, mark=mark, title="Judgements")


def link(choices: dict, offset: int) -> str:
    """The list's URL with these choices at `offset`."""
    query = {k: v for k, v in {**choices, "offset": offset or None}.items() if v not in (None, "")}
    return "/judgements?" + urlencode(query)


@router.get("/judgements/{judgement_id}", response_class=HTMLResponse, include_in_schema=False)
def judgement_page(
    judgement_id: str,
    request: Request,
    store: Annotated[Store, Depends(get_store)],
) -> Response:
    """One judgement: the question, both outputs, every call in words, whether the orders
    agreed; 404 for an unknown id, 422 for one that is not an id."""
    mark = mark_of(store)
    if not judgement_id.isdigit() or not 1 <= int(judgement_id) <= 2**31 - 1:
        return problem(request, mark, f"{judgement_id[:40]!r} is not a judgement id", 422)
    try:
        judgement = JudgementOut(**store.get_judgement(int(judgement_id), outputs=True).as_json())
    except NotFound as exc:
        return problem(request, mark, str(exc), 404)
    view = judgement_view(judgement)
    context = {
        "view": view, "j": judgement,
        "back": "/judgements?" + urlencode({"judge": judgement.judge, "by": "system", "player": view.a_name,
                                            "opponent": view.b_name}),
        "question_link": "/judgements?" + urlencode({"judge": judgement.judge, "question": judgement.question_id}),
    }
    return render(request, "judgement.html", context, mark=mark, title=f"Judgement #{judgement.id}", live=False)


def problem(request: Request, mark: Mark, message: str, status: int) -> HTMLResponse:
    return render(request, "problem.html", {"message": message, "known": []}, mark=mark, title="Judgements",
                  status=status, live=False)

