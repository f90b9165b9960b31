"""One judgement over the API: read it, and ask its judge to analyse a tie.

`POST /api/judgements/{id}/analysis` puts `workers.analysis.analyse_tie` on the queue (by dotted
path) and answers 202; the analysis appears on `GET /api/judgements/{id}` once a worker has it
(`analysis` is null until then, `{"error": ...}` when it could not be had). Only ties are
analysed (409 otherwise), and only judgements made by a judge joust can ask (409 for imported
verdicts). A judgement already analysed answers 200 with itself and asks nothing again.
"""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response
from redis.exceptions import RedisError

from service.api_models import JUDGE_PROVIDERS, AnalysisQueued
from service.api_views import JudgementOut
from service.auth import require_run
from service.queue import JobQueue
from service.store import Store

from .common import ApiError, error_responses, get_queue, get_store, id_path

router = APIRouter(prefix="/api/judgements", tags=["judgements"], responses=error_responses(422))

JudgementId = Annotated[int, id_path("judgement")]


@router.get("/{judgement_id}", response_model=JudgementOut, response_model_exclude_unset=True,
            responses=error_responses(404, 422))
def get_judgement(judgement_id: JudgementId, store: Annotated[Store, Depends(get_store)]) -> JudgementOut:
    """The judgement: the question, both sides (model, scenario, output length), the outcome
    for a, whether the orders agreed, every call, tokens, cost, and `analysis`."""
    return JudgementOut(**store.get_judgement(judgement_id))


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
    if judgement["outcome"] != "TIE":
        raise ApiError(409, f"judgement {judgement_id} is not a tie (outcome {judgement['outcome']}): "
                            "only ties are analysed")
    if judgement["judge"].partition("/")[0] not in JUDGE_PROVIDERS:
        raise ApiError(409, f"judgement {judgement_id} was made by {judgement['judge']!r}, which joust cannot ask")
    analysis = judgement["analysis"]
    if analysis is not None and "error" not in analysis:
        response.status_code = 200
        return JudgementOut(**judgement)
    try:
        job_id = queue.enqueue_analysis(judgement_id)
    except RedisError as exc:
        raise ApiError(503, f"the job queue is unreachable ({exc}); nothing was queued, try again") from None
    response.headers["Location"] = f"/api/judgements/{judgement_id}"
    return AnalysisQueued(judgement_id=judgement_id, status="queued", job_id=job_id)
