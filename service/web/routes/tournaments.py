"""Tournaments: start one (now, and again at each due time of its schedule), or only ask what it
would take (`?dry_run=true`); follow it, cancel it, and read its judgements.

A request is built into its spec and checked in `service.usecases.tournament_requests` (a seed
drawn for a sampled run, a budget only with a priced judge, the judge's credentials here or on a
live worker: `service.ops.liveness.live_workers`), which refuses a field with a `UseCaseError`
that the app answers 422 with `details`; a dry run is checked like a real run. A retry refused
(still running, nothing failed) is a conflict: 409.
"""
from __future__ import annotations

import time
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import TypeAdapter

from service.config import Settings
from service.ops.cron import next_due
from service.ops.liveness import live_workers
from service.store import Store
from service.store.queue import JobQueue
from service.usecases import tournaments
from service.usecases.tournament_requests import TournamentRequest, checked_spec
from service.web.api_models import TournamentIn
from service.web.api_responses import DryRunOut, TournamentCreated, TournamentRetried
from service.web.api_views import (
    TournamentCancelled,
    TournamentJudgement,
    TournamentJudgementsOut,
    TournamentOut,
    TournamentsOut,
    TournamentSummary,
)
from service.web.auth import require_run
from service.web.routes.common import (
    error_responses,
    get_queue,
    get_settings,
    get_store,
    id_path,
    json_body,
    request_body,
    validate,
)
from service.web.routes.pagination import Window, window

router = APIRouter(prefix="/api/tournaments", tags=["tournaments"], responses=error_responses(422))

_REQUEST = TypeAdapter(TournamentIn)
TournamentId = Annotated[int, id_path("tournament")]


@router.post(
    "",
    status_code=202,
    response_model=TournamentCreated | DryRunOut,
    responses={**error_responses(400, 401, 403, 413, 422),
               200: {"model": DryRunOut, "description": "a dry run: nothing was created"}},
    dependencies=[Depends(require_run)],
    openapi_extra=request_body(_REQUEST.json_schema()),
)
def create_tournament(
    body: Annotated[Any, Depends(json_body)],
    response: Response,
    store: Annotated[Store, Depends(get_store)],
    queue: Annotated[JobQueue, Depends(get_queue)],
    settings: Annotated[Settings, Depends(get_settings)],
    dry_run: Annotated[bool, Query(description="only count the calls and estimate the cost")] = False,
) -> TournamentCreated | DryRunOut:
    """Plan the pairs, store the matches and put one job per match on the queue; with
    `dry_run=true`, answer 200 with what that would take and create nothing."""
    request = validate(_REQUEST, body)
    spec = checked_spec(TournamentRequest(**request.model_dump()), settings, store, live_workers(queue, settings))
    if dry_run:
        estimate = tournaments.dry_run(store, spec, settings.price_table())
        response.status_code = 200
        return DryRunOut(**asdict(estimate), seed=spec.seed)
    next_run_at = next_due(request.schedule, time.time()) if request.schedule else None
    run = tournaments.launch(store, queue, request.name, spec, schedule=request.schedule, next_run_at=next_run_at)
    status = store.get_tournament(run.id).status
    response.headers["Location"] = f"/api/tournaments/{run.id}"
    return TournamentCreated(id=run.id, status=status, matches_total=run.matches_total, queued=run.queued)


@router.get("", response_model=TournamentsOut)
def list_tournaments(
    store: Annotated[Store, Depends(get_store)],
    page: Annotated[Window, Depends(window)],
    response: Response,
) -> TournamentsOut:
    """Tournaments, newest first, with their match counts, a page at a time."""
    shown, following = page.cut(store.list_tournaments(limit=page.fetch, offset=page.offset), response)
    return TournamentsOut(tournaments=[TournamentSummary(**row.as_json()) for row in shown], next=following)


@router.get("/{tournament_id}", response_model=TournamentOut, responses=error_responses(404, 422))
def get_tournament(tournament_id: TournamentId, store: Annotated[Store, Depends(get_store)]) -> TournamentOut:
    """Status and progress: matches_total, matches_done, matches_failed, the runs a schedule
    started, budget, spent_usd and stopped_reason ("budget" when the budget stopped it)."""
    return TournamentOut(**store.get_tournament(tournament_id).as_json())


@router.post(
    "/{tournament_id}/cancel",
    response_model=TournamentCancelled,
    responses=error_responses(401, 403, 404, 422),
    dependencies=[Depends(require_run)],
)
def cancel_tournament(tournament_id: TournamentId,
                      store: Annotated[Store, Depends(get_store)]) -> TournamentCancelled:
    """Cancel the matches not yet judged, stop the schedule and cancel the runs under it still
    in flight; judgements made stay. The tournament as it stands then, and `stopped`: what this
    stopped (the schedule, the runs, the matches)."""
    return TournamentCancelled(**store.cancel_tournament(tournament_id).as_json())


@router.post(
    "/{tournament_id}/retry",
    status_code=202,
    response_model=TournamentRetried,
    responses=error_responses(401, 403, 404, 409, 422),
    dependencies=[Depends(require_run)],
)
def retry_tournament(
    tournament_id: TournamentId,
    store: Annotated[Store, Depends(get_store)],
    queue: Annotated[JobQueue, Depends(get_queue)],
) -> TournamentRetried:
    """Hand a finished run's failed matches out again (and those its "failing" stop cancelled,
    once the judge is fixed); 409 while it runs or when nothing failed. Its status then counts
    them in `retried`."""
    retried = tournaments.retry(store, queue, tournament_id)  # a conflict is the app's 409
    return TournamentRetried(id=tournament_id, status="running", retried=retried)


@router.get("/{tournament_id}/judgements", response_model=TournamentJudgementsOut, response_model_exclude_unset=True,
            responses=error_responses(404, 422))
def tournament_judgements(
    tournament_id: TournamentId,
    store: Annotated[Store, Depends(get_store)],
    page: Annotated[Window, Depends(window)],
    response: Response,
) -> TournamentJudgementsOut:
    """Per judged match, in match order, a page at a time: a, b, outcome ("A" = a won, "B",
    "TIE"), consistent, and the calls (which submission was shown first, the positional winner,
    the reason)."""
    rows = store.tournament_judgements(tournament_id, limit=page.fetch, offset=page.offset)
    shown, following = page.cut(rows, response)
    return TournamentJudgementsOut(tournament=tournament_id, judgements=[TournamentJudgement(**row) for row in shown],
                                   next=following)
