"""Judgements over the API: list one judge's (the judgements behind a board's row or cell), read
one with both outputs, and ask its judge to analyse a tie.

`GET /api/judgements` pages through one judge's judgements, newest first, narrowed to a player at
a level (and an opponent: a cell of the win-rate matrix), a question, a tournament, or the
inconsistent, tied or decided ones (`service.store.judgement_lists`). The judge is named or
chosen as the boards choose it (`judge_choice`), so a list opened from a board holds the board's
verdicts. `next` names that judge, and the first page's `next` carries `upto`, its newest id, so
the pages after it hold the same list while new judgements (or a new default judge) land. No
total is given: the board's row (`matches`) and cell (`battles`) already say how many, and
counting every judgement of a common player costs what the page saves.

`POST /api/judgements/{id}/analysis` puts `workers.analysis.analyse_tie` on the queue (by dotted
path) and answers 202; the analysis appears on `GET /api/judgements/{id}` once a worker has it
(`analysis` is null until then, `{"error": ...}` when it could not be had). Only ties are
analysed (409 otherwise), and only judgements made by a judge joust can ask (409 for imported
verdicts). A judgement already analysed answers 200 with itself and asks nothing again.
"""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response
from redis.exceptions import RedisError

from service.store import JudgementQuery, JudgementSummary, Shown, Store
from service.store.queue import JobQueue
from service.usecases.boards import BoardCache
from service.web.api_models import JUDGE_PROVIDERS, By, JudgementFilter
from service.web.api_responses import AnalysisQueued
from service.web.api_views import JudgementOut, JudgementRow
from service.web.auth import require_run
from service.web.routes.common import ID_MAX, ApiError, FilterText, TournamentFilter, error_responses, get_queue, get_store, id_path
from service.web.routes.judge_choice import JudgedOut, judge_fields, judge_not_found, with_judge_rule
from service.web.routes.leaderboard import get_boards
from service.web.routes.pagination import Window, window

router = APIRouter(prefix="/api/judgements", tags=["judgements"], responses=error_responses(422))

JudgementId = Annotated[int, id_path("judgement")]


@with_judge_rule
class JudgementsOut(JudgedOut):
    """One page of one judge's judgements, newest first, as asked: `level`, `player`,
    `opponent` and `tournament` echo the request; `next` is the next page's URL, null on the
    last. A judgement whose two sides are the same player at `level` is never listed for that
    player (the boards do not count it)."""

    level: str
    player: str | None
    opponent: str | None
    tournament: int | None
    judgements: list[JudgementRow]
    next: str | None


JudgeParam = Annotated[FilterText | None, Query(
    description='whose judgements: "provider/model", "human/<voter>", or "human" for all human voters; left '
                "out, the judge of the board (see the response's `judge_chosen_by`)")]
LevelParam = Annotated[By, Query(
    description="the level `player` and `opponent` are named at: model, scenario or model+scenario (alias: "
                "system; any case)")]
PlayerParam = Annotated[FilterText | None, Query(
    description='only judgements with this player on one side, named as the board names it ("model-x", '
                '"terse", "model-x + terse"); `result` is then the outcome for it')]
OpponentParam = Annotated[FilterText | None, Query(
    description="only judgements with this player on the other side (with `player`: a cell of the matrix; "
                "alone: as `player`, without `result`)")]
QuestionParam = Annotated[FilterText | None, Query(description="only judgements of this question")]
FilterParam = Annotated[JudgementFilter | None, Query(  # type: ignore[valid-type]
    alias="filter", description="inconsistent: the two orders disagreed; ties: outcome TIE; decided: A or B")]
UptoParam = Annotated[int | None, Query(
    ge=1, le=ID_MAX, description="only judgements with an id at most this (the first page's `next` sets it, so "
                                 "that judgements stored since do not shift the pages)")]


@router.get("", response_model=JudgementsOut, response_model_exclude_unset=True, responses=error_responses(404, 422))
def list_judgements(
    boards: Annotated[BoardCache, Depends(get_boards)],
    page: Annotated[Window, Depends(window)],
    response: Response,
    judge: JudgeParam = None,
    level: LevelParam = By.MODEL,
    player: PlayerParam = None,
    opponent: OpponentParam = None,
    question_id: QuestionParam = None,
    kind: FilterParam = None,
    tournament: TournamentFilter = None,
    upto: UptoParam = None,
) -> JudgementsOut:
    """One judge's judgements, newest first, a page at a time: each with both sides (model,
    scenario, output length), the outcome for a, whether the orders agreed and, for a `player`,
    `result` (win, loss or tie for it). The judgements behind a board's row (`player`) or a
    matrix cell (`player` and `opponent`; the same name twice: none, a player never meets
    itself). 404 for an unknown tournament or a judge without verdicts here."""
    with judge_not_found():
        choice = boards.choose(tournament_id=tournament, judge=judge)
    shown = Shown(kind.value) if kind is not None else None
    rows: list[JudgementSummary] = []
    if choice.judge is not None:
        rows = boards.store.list_judgements(JudgementQuery(
            judge=choice.judge, level=level.level, player=player, opponent=opponent, question_id=question_id,
            shown=shown, tournament_id=tournament, upto=upto, limit=page.fetch, offset=page.offset))
    # the pages after this one hold the same list: this judge's, as of this page's newest
    pinned: dict[str, str | int] = {}
    if judge is None and choice.judge is not None:
        pinned["judge"] = choice.judge
    if rows and upto is None and page.offset == 0:
        pinned["upto"] = rows[0].id
    listed, following = page.keeping(**pinned).cut(rows, response)
    return JudgementsOut(
        **judge_fields(choice, "/api/judgements", level=level.level.value, player=player, opponent=opponent,
                       question_id=question_id, filter=shown.value if shown else None, tournament=tournament),
        level=level.level.value, player=player, opponent=opponent, tournament=tournament,
        judgements=[JudgementRow.model_validate(row, from_attributes=True) for row in listed], next=following,
    )


@router.get("/{judgement_id}", response_model=JudgementOut, response_model_exclude_unset=True,
            responses=error_responses(404, 422))
def get_judgement(
    judgement_id: JudgementId,
    store: Annotated[Store, Depends(get_store)],
    outputs: Annotated[bool, Query(description="include both outputs (`a.output`, `b.output`)")] = False,
) -> JudgementOut:
    """The judgement: the question, both sides (model, scenario, output length, and with
    `outputs=true` the output), the outcome for a, whether the orders agreed, every call (the
    submission shown first, its verdict and reason), tokens, cost, and `analysis`."""
    return JudgementOut(**store.get_judgement(judgement_id, outputs=outputs).as_json())


@router.post(
    "/{judgement_id}/analysis",
    status_code=202,
    response_model=AnalysisQueued | JudgementOut,
    response_model_exclude_unset=True,
    responses={**error_responses(401, 403, 404, 409, 422, 503), 202: {"model": AnalysisQueued},
               200: {"model": JudgementOut, "description": "already analysed: the judgement"}},
    dependencies=[Depends(require_run)],
)
def analyse_tie(
    judgement_id: JudgementId,
    response: Response,
    store: Annotated[Store, Depends(get_store)],
    queue: Annotated[JobQueue, Depends(get_queue)],
) -> AnalysisQueued | JudgementOut:
    """Ask the judge of a tied judgement what each side does better and whom each suits."""
    judgement = store.get_judgement(judgement_id)
    if judgement.outcome != "TIE":
        raise ApiError(409, f"judgement {judgement_id} is not a tie (outcome {judgement.outcome}): "
                            "only ties are analysed")
    if judgement.judge.partition("/")[0] not in JUDGE_PROVIDERS:
        raise ApiError(409, f"judgement {judgement_id} was made by {judgement.judge!r}, which joust cannot ask")
    analysis = judgement.analysis
    if analysis is not None and "error" not in analysis:
        response.status_code = 200
        return JudgementOut(**judgement.as_json())
    try:
        job_id = queue.enqueue_analysis(judgement_id)
    except RedisError as exc:
        raise ApiError(503, f"the job queue is unreachable ({exc}); nothing was queued, try again") from None
    response.headers["Location"] = f"/api/judgements/{judgement_id}"
    return AnalysisQueued(judgement_id=judgement_id, status="queued", job_id=job_id)
