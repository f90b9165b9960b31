"""The tournaments pages: `/tournaments`, the recent tournaments 50 a page (`?offset=`), and
`/tournaments/{id}`, one tournament's progress, pace, spend, failures, batches, runs and board.

A schedule's runs and an import's layers are listed under their parent, not as tournaments of
their own. The list costs a fixed number of queries whatever its length (`Store.list_tournaments`
counts the page's matches in one grouped query, `Store.runs_of` its runs in another), never one
per row. Each changing part of a tournament's page is a `data-live` region, so the live script
keeps a running tournament's page current without a reload.

No 304 here, unlike the board page: a failure, a cancellation or a new run moves no revision, so
a page answered "not modified" at the same revision could hide them; each request renders afresh
(a handful of indexed queries).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from leaderboard.baseline_board import BaselineRow
from leaderboard.types import Delivery, Level
from service.store import NotFound, Store, TournamentName
from service.store.tournament_rows import Tournament, TournamentRow
from service.usecases.boards import BoardCache
from service.web.api_views import TournamentOut, TournamentSummary
from service.web.pages.board_view import board_view
from service.web.pages.counted import Counted
from service.web.pages.figures import history_figure
from service.web.pages.render import Mark, mark_of, render
from service.web.pages.tournament_view import (
    COMPUTING,
    PACE_WINDOW_S,
    UNFINISHED,
    ListRow,
    Pace,
    SmallBoard,
    batch_wait,
    calls_per_minute,
    runs_noun,
    share,
    stop_reason,
    usd,
)
from service.web.routes.common import OFFSET_MAX, get_store
from service.web.routes.leaderboard import get_boards
from service.web.routes.page import PageProblem, board_link, parse_tournament
from service.web.routes.winrate import compared

log = logging.getLogger(__name__)
router = APIRouter(tags=["page"])

PAGE_SIZE = 50  # tournaments a page of the list
RUNS_LISTED = 10  # runs listed under each parent on the list (the rest on its own page)
RUNS_SHOWN = 50  # runs shown with their progress on a tournament's page (older ones as links)
BOARD_ROWS = 10  # players of the small board on a tournament's page
LISTS: Counted[list[TournamentRow]] = Counted("tournament-lists")  # pages of the list, by (store, offset)
SUMMARIES: Counted[Tournament] = Counted("tournament-summaries")  # tournaments with their counts, by (store, id)


def parse_offset(value: str | None) -> int:
    """`?offset=` as the page's links write it: a whole number of tournaments to skip."""
    if not value:
        return 0
    if not value.isdigit() or int(value) > OFFSET_MAX:
        raise PageProblem(f"offset={value!r} is not a number of tournaments to skip")
    return int(value)


def list_link(offset: int) -> str:
    return f"/tournaments?offset={offset}" if offset else "/tournaments"


@router.get("/tournaments", response_class=HTMLResponse, include_in_schema=False)
def tournaments_page(request: Request, store: Annotated[Store, Depends(get_store)]) -> Response:
    """The newest tournaments that are no run of another, each with its runs folded under it."""
    mark = mark_of(store)
    try:
        offset = parse_offset(request.query_params.get("offset"))
    except PageProblem as exc:
        return problem_page(request, mark, str(exc), 422)
    listed = LISTS.get(store, offset, mark.mark, lambda: counted_list(store, offset))
    found = listed.value
    shown = [TournamentSummary(**row.as_json()) for row in found[:PAGE_SIZE]]
    runs = store.runs_of([t.id for t in shown], newest=RUNS_LISTED)
    context = {
        "rows": [ListRow(t, runs.get(t.id)) for t in shown],
        "offset": offset,
        "previous": list_link(max(offset - PAGE_SIZE, 0)) if offset else None,
        "next": list_link(offset + PAGE_SIZE) if len(found) > PAGE_SIZE else None,
        "usd": usd,
    }
    return render(request, "tournaments.html", context, mark=mark, title="Tournaments",
                  pending=listed.mark != mark.mark)


@router.get("/tournaments/{tournament_id}", response_class=HTMLResponse, include_in_schema=False)
def tournament_page(
    tournament_id: str,
    request: Request,
    store: Annotated[Store, Depends(get_store)],
    cache: Annotated[BoardCache, Depends(get_boards)],
) -> Response:
    """One tournament: its settings and why it stopped, progress and pace, spend, failures by
    message, batches, runs, the top of its board (a baseline run's: and every player's win rate against
    its baseline) and its history. 404 for an unknown id, 422
    for one that is not an id, each as a page."""
    mark = mark_of(store)
    try:
        tid = parse_tournament(tournament_id)
    except PageProblem as exc:
        return problem_page(request, mark, str(exc), 422)
    assert tid is not None  # a path segment is never empty
    try:
        summary = SUMMARIES.get(store, tid, mark.mark, lambda: counted_tournament(store, tid))
    except NotFound as exc:
        return problem_page(request, mark, f"{exc}: the tournaments are listed at /tournaments", 404)
    failures = store.tournament_failures(tid)
    runs = store.runs_of([tid], newest=RUNS_SHOWN).get(tid)
    t = TournamentOut(**summary.value.as_json())
    pace = Pace(PACE_WINDOW_S, store.judged_within(tid, PACE_WINDOW_S)) if t.status.value in UNFINISHED else None
    listed = {r.id for r in runs.newest} if runs else set()
    board = small_board(cache, tid, mark)
    spec = summary.value.spec
    versus = (against_baseline(request, store, tid, board.judge, spec.level, spec.baseline)
              if spec.against_baseline and spec.baseline is not None else None)
    context = {
        "t": t,
        "stop": stop_reason(t, failures.streak),
        "failures": failures,
        "runs": runs,
        "older_runs": [i for i in reversed(t.runs) if i not in listed],
        "noun": runs_noun(t),
        "pace": pace,
        "calls_per_minute": calls_per_minute(t, pace) if pace else None,
        "batch_wait": batch_wait(t) if t.delivery is Delivery.BATCH else None,
        "spent_share": share(t.spent_usd, t.budget),
        "board": board,
        "versus": versus,
        "board_href": board_link(tournament=tid),
        "history": history_figure(store, TournamentName(t.id, t.name, t.schedule, t.parent_id)),
        "usd": usd,
    }
    return render(request, "tournament.html", context, mark=mark, title=f"Tournament #{t.id}",
                  pending=board.pending or summary.mark != mark.mark)


def counted_list(store: Store, offset: int) -> tuple[list[TournamentRow], int]:
    """A page of the list (one more row than shown: is there a next page?) and the matches it counted."""
    found = store.list_tournaments(limit=PAGE_SIZE + 1, offset=offset, top_level=True)
    return found, sum(row.matches_total for row in found)


def counted_tournament(store: Store, tournament_id: int) -> tuple[Tournament, int]:
    """A tournament with its counts and spend (`Store.get_tournament`), and the matches it counted."""
    found = store.get_tournament(tournament_id)
    return found, found.matches_total


def small_board(cache: BoardCache, tournament_id: int, mark: Mark) -> SmallBoard:
    """The first players of the tournament's board at model level (the judge chosen as the
    board page chooses it), served at once from its last computation while a newer one is made
    (`BoardCache.judged_soon`); a board that cannot be had says why instead of failing the page."""
    try:
        judged = cache.judged_soon(Level.MODEL, tournament_id=tournament_id)
    except Exception as exc:  # the rest of the page is worth showing whatever the fit does
        log.exception("the board of tournament %d could not be computed", tournament_id)
        return SmallBoard(None, (), 0, 0, f"its board could not be computed: {exc}")
    if judged is None:
        return SmallBoard(None, (), 0, 0, COMPUTING)
    choice, board = judged
    view = board_view(board.rows, {})
    rows = tuple(row for group in view.groups for row in group.rows)
    return SmallBoard(choice.judge, rows[:BOARD_ROWS], len(rows), len(view.groups), judgements=board.judgements,
                      revision=board.revision, behind=max(mark.revision - board.revision, 0))


def problem_page(request: Request, mark: Mark, message: str, status: int) -> HTMLResponse:
    """What was wrong with the address, as a page."""
    return render(request, "problem.html", {"message": message, "known": []}, mark=mark, title="Tournaments",
                  status=status, live=False)


@dataclass(frozen=True)
class Versus:
    """A baseline tournament's win rates against its baseline (`baseline`, a player at `level`);
    `problem` says why they could not be had."""

    baseline: str
    level: Level
    rows: list[BaselineRow]
    problem: str | None = None


def against_baseline(request: Request, store: Store, tournament_id: int, judge: str | None, level: Level,
                     baseline: str) -> Versus:
    """Every player's win rate against the baseline (plain and length-controlled) by the small
    board's judge, as `GET /api/leaderboard/winrate` gives them (no rows before a verdict); like
    the small board, a computation that fails says why instead of failing the page."""
    if judge is None:
        return Versus(baseline, level, [])
    try:
        return Versus(baseline, level, compared(request, store, level, tournament_id, judge, baseline).rows)
    except Exception as exc:  # the rest of the page is worth showing whatever the fit does
        log.exception("the win rates of tournament %d against %r could not be computed", tournament_id, baseline)
        return Versus(baseline, level, [], f"they could not be computed: {exc}")
