"""The board page, `/`: one judge's board at one level and scope, chosen by a form whose choices
live in the URL (`/?judge=&by=&tournament=&dimension=`), so a view can be linked.

What it shows, each part a `data-live` region the live script swaps when the store moves
(`service.web.pages.render`): whose verdicts and why (the other judges linked); the board by
component of the comparison graph, each row with its rank range, rating and 95% interval drawn
on a shared axis, online Elo, record, matches, mean output length and a mark for a gaming flag
(`service.usecases.flag_cache`; the evidence listed under the table); the ratings as an interval
plot; the win-rate and battle-count matrices as heatmaps whose cells link to the judgements
behind them; model and scenario effects side by side; rubric scores when there are any; and a
recurring tournament's history. Boards come from the API's cache (`service.usecases.boards`), so the
page costs what `GET /api/leaderboard` costs.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from leaderboard.dimensions import DIMENSIONS
from leaderboard.effects import Effects, fit_effects
from leaderboard.judges import ChosenBy, JudgeChoice, UnknownJudge
from leaderboard.types import Level
from service.store import NotFound, Store, TournamentName
from service.usecases.boards import Board, BoardCache, EffectsAt
from service.usecases.flag_cache import FlagCache
from service.web.api_models import By
from service.web.pages.figures import Figure, latest_history
from service.web.pages.prepared import LEVEL_TITLES, PreparedBoards, View
from service.web.pages.render import Mark, mark_of, not_modified, render
from service.web.routes.board_effects import effect_rows
from service.web.routes.common import get_store
from service.web.routes.leaderboard import get_boards
from service.web.state import state_of

router = APIRouter(tags=["page"])

LEVELS = {"model": Level.MODEL, "scenario": Level.SCENARIO, "system": Level.SYSTEM}
SCORED = "compqa"  # the criteria set whose absolute scores the page shows (GET /api/scores' default)
CHOSEN = {
    ChosenBy.NAMED: "named in the address",
    ChosenBy.LATEST_TOURNAMENT: "the judge of the latest tournament",
    ChosenBy.MOST_VERDICTS: "the judge with the most verdicts",
    ChosenBy.HUMANS_ONLY: "only human votes so far: every voter together",
}


class PageProblem(ValueError):
    """A choice in the address that the page cannot show: answered 422 with the form."""


def parse_level(by: str | None) -> Level:
    """`by=` as the form sends it (or as the API spells it)."""
    if not by:
        return Level.MODEL
    if by in LEVELS:
        return LEVELS[by]
    try:
        return By(by).level
    except ValueError:
        raise PageProblem(f"by={by!r} is not a level: choose model, scenario or system") from None


def parse_tournament(value: str | None) -> int | None:
    if not value:
        return None
    if not value.isdigit() or not 1 <= int(value) <= 2**31 - 1:
        raise PageProblem(f"tournament={value!r} is not a tournament id")
    return int(value)


def parse_dimension(value: str | None) -> str | None:
    if not value:
        return None
    if value.lower() not in DIMENSIONS:
        raise PageProblem(f"dimension={value!r} is not one of: {', '.join(DIMENSIONS)}")
    return value.lower()


def board_link(**choices: str | int | None) -> str:
    """The page's URL for these choices (empty ones left out)."""
    query = urlencode({k: v for k, v in choices.items() if v not in (None, "")})
    return "/?" + query if query else "/"


def judgements_link(judge: str | None, level: Level, player: str, opponent: str | None = None,
                    tournament: int | None = None) -> str:
    """The judgements page for one player (and one opponent) under this board's judge."""
    query = {"judge": judge, "by": level.name.lower(), "player": player, "opponent": opponent,
             "tournament": tournament}
    return "/judgements?" + urlencode({k: v for k, v in query.items() if v is not None})


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page(
    request: Request,
    store: Annotated[Store, Depends(get_store)],
    cache: Annotated[BoardCache, Depends(get_boards)],
) -> Response:
    """One judge's board (named by `judge=`, else chosen as the API chooses) at `by=` level, over
    `tournament=` or everything, by `dimension=` or overall. 404 for a judge without verdicts or
    an unknown tournament, 422 for a choice that is not one, each as a page with the form."""
    mark = mark_of(store)
    cached = not_modified(request, mark)
    if cached is not None:
        return cached
    params = request.query_params
    judge = params.get("judge") or None
    try:
        level = parse_level(params.get("by"))
        tournament = parse_tournament(params.get("tournament"))
        dimension = parse_dimension(params.get("dimension"))
    except PageProblem as exc:
        return problem_page(request, store, mark, str(exc), 422)
    view = View(level, judge, tournament, dimension)
    try:
        prepared = get_pages(request).get(view, mark.revision)
    except UnknownJudge as exc:
        return problem_page(request, store, mark, str(exc), 404, known=exc.known)
    except NotFound as exc:
        return problem_page(request, store, mark, str(exc), 404)
    if prepared is None:
        return computing_page(request, mark)
    choice, board = prepared.choice, prepared.board
    effects = effects_of(cache, choice, tournament, board)
    context = {
        "form": form_context(store, choice, level, tournament, dimension),
        "choice": choice, "why": CHOSEN.get(choice.chosen_by, choice.chosen_by.value),
        "judge_links": [(o.judge, o.verdicts, board_link(judge=o.judge, by=level.name.lower(),
                                                         tournament=tournament, dimension=dimension))
                        for o in choice.others],
        "level": level, "level_title": LEVEL_TITLES[level], "board": board, "view": prepared.view,
        "prepared": prepared,
        "effects": effects, "effect_groups": effect_groups(effects.effects) if effects else [],
        "scores": scores_of(store),
        "api": "/api/leaderboard?" + urlencode({k: v for k, v in {
            "judge": choice.judge, "by": level.value, "tournament": tournament, "dimension": dimension}.items()
            if v is not None}),
    }
    context["history"] = history_of(store, level, tournament, context["form"]["tournaments"])
    context["behind"] = max(mark.revision - board.revision, 0)  # a board still being brought up to date
    pending = effects is None or effects.revision < board.revision or context["behind"] > 0 or not prepared.flags.current
    return render(request, "board.html", context, mark=mark, title="Leaderboard", pending=pending)


def effects_of(cache: BoardCache, choice: JudgeChoice, tournament: int | None, board: Board) -> EffectsAt | None:
    """Model and scenario effects by the board's judge: fitted in the background when that takes
    long (None meanwhile); over a tournament, that tournament's."""
    if choice.judge is None:
        return EffectsAt(fit_effects([]), board.revision)
    if tournament is not None:
        return cache.effects(tournament_id=tournament, judge=choice.judge)
    return cache.effects_soon(judge=choice.judge, stale_ok=True)


def effect_groups(effects: Effects) -> list[dict]:
    """Each group of systems' effects for the page: its number, size and judgements, and its
    models' and scenarios' (name, effect, low, high, bounded) rows, best first."""
    return [{"component": g.component, "systems": g.systems, "battles": g.battles,
             "models": [(*line, e.bounded) for line, e in zip(effect_rows(g.models), g.models.values())],
             "scenarios": [(*line, e.bounded) for line, e in zip(effect_rows(g.scenarios), g.scenarios.values())]}
            for g in effects.groups]


def scores_of(store: Store) -> list[dict]:
    """Rubric scores as rows of (model, scenario, cells by judge); empty when none are stored."""
    judges = store.score_judges(SCORED)
    cells = {(name, r["model"], r["scenario"]): r for name in judges
             for r in store.score_means(name, SCORED, ("model", "scenario"))}
    systems = sorted({(model, scenario) for _, model, scenario in cells}, key=lambda s: (str(s[0]), str(s[1])))
    return [{"model": model, "scenario": scenario, "judges": judges,
             "cells": [cells.get((j, model, scenario)) for j in judges]} for model, scenario in systems]


def form_context(store: Store, choice: JudgeChoice, level: Level, tournament: int | None,
                 dimension: str | None) -> dict:
    """The selector form's choices and what is selected."""
    return {
        "judges": [(s.judge, s.verdicts) for s in choice.judges],
        "judge": choice.judge,
        "levels": [(name, LEVEL_TITLES[lvl]) for name, lvl in LEVELS.items()],
        "by": level.name.lower(),
        "tournaments": store.tournament_names(),
        "tournament": tournament,
        "dimensions": DIMENSIONS,
        "dimension": dimension,
    }


def history_of(store: Store, level: Level, tournament: int | None, names: list[TournamentName]) -> Figure | None:
    """The history of the tournament in scope, or of the newest scheduled one."""
    scoped = [n for n in names if n.id == tournament] if tournament is not None else names
    if tournament is not None and not scoped:  # a run of a schedule, or an import's layer
        scoped = [TournamentName(tournament, f"tournament {tournament}", "scoped", None)]
    return latest_history(store, scoped, level if level is not Level.SYSTEM else Level.MODEL)


def page_links(choice: JudgeChoice, view: View) -> tuple[Callable[[str], str], Callable[[str, str], str]]:
    """A prepared board's links: a row's judgements, and a heatmap cell's (the two players')."""
    def row(player: str) -> str:
        return judgements_link(choice.judge, view.level, player, tournament=view.tournament)

    def cell(player: str, opponent: str) -> str:
        return judgements_link(choice.judge, view.level, player, opponent, view.tournament)

    return row, cell


def prepared_boards(store: Store, boards: BoardCache, flags: FlagCache) -> PreparedBoards:
    """The app's prepared boards (`AppState.pages`, made with the store), linked as this page links."""
    return PreparedBoards(store, boards, flags, page_links)


def get_pages(request: Request) -> PreparedBoards:
    return state_of(request).pages


def computing_page(request: Request, mark: Mark) -> HTMLResponse:
    """The first board of a scope still being computed after a second: said so, and fetched
    again by the live script (pending) rather than waited for."""
    message = ("This board is being computed for the first time (it reads every judgement of its scope): "
               "this page reloads when it is ready.")
    return render(request, "problem.html", {"message": message, "known": []}, mark=mark, title="Leaderboard",
                  pending=True)


def problem_page(request: Request, store: Store, mark: Mark, message: str, status: int,
                 known: list[str] | None = None) -> HTMLResponse:
    """What was wrong with the address, the form to choose again, and the judges there are."""
    context = {"message": message, "known": [(j, board_link(judge=j)) for j in (known or [])]}
    return render(request, "problem.html", context, mark=mark, title="Leaderboard", status=status, live=False)
