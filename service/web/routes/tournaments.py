"""Tournaments: start one (now, and again at each due time of its schedule), or only ask what it
would take (`?dry_run=true`); follow it, cancel it, and read its judgements.

A sampled tournament without a seed gets one drawn here and stored in its spec, so every run,
nightly re-runs included, can be planned again identically. A `budget` needs a judge with a
price (`leaderboard.pricing`, `JOUST_PRICES`): without one its spend could not be counted. A
judge needs its credentials here or on a live worker (`check_credentials`, `service.credentials`:
in docker compose only the workers hold the provider's key): without them every match would
fail; an `offline/` judge must be one the workers have (`service.config.OFFLINE_JUDGES`). A dry
run is checked like a real run.
"""
from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict
from functools import cache
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import TypeAdapter
from redis.exceptions import RedisError

from leaderboard.panel import panel_of
from leaderboard.pricing import price_of
from leaderboard.reach import Reach
from leaderboard.spec import RunSpec
from leaderboard.templates import SHOWS_EXTRAS
from leaderboard.types import Delivery, Mode
from service.config import OFFLINE_JUDGES, Settings
from service.credentials import unreachable
from service.ops.cron import next_due
from service.ops.liveness import worker_reaches
from service.store import RetryRefused, Store
from service.store.queue import JobQueue
from service.usecases import rounds, tournaments
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
    ApiError,
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

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api/tournaments", tags=["tournaments"], responses=error_responses(422))

_REQUEST = TypeAdapter(TournamentIn)
TournamentId = Annotated[int, id_path("tournament")]


def build_spec(request: TournamentIn, settings: Settings,
               workers: Callable[[], list[Reach] | None] = list) -> RunSpec:
    """The stored spec: everything needed to plan and judge the tournament again; 422 when its
    judge is unknown or has no credentials here nor on any of the live `workers` (`check_judge`,
    `check_credentials`, so that every front end refuses it)."""
    seed = request.seed
    if request.mode == Mode.SAMPLED.value and seed is None:
        seed = secrets.randbelow(2**31)
    panel = None if request.judges is None else panel_of(request.judges, request.aggregation or "majority",
                                                           request.panel)
    spec = RunSpec(
        mode=Mode(request.mode),
        judge=(request.judge or settings.judge) if panel is None else panel.judge,
        order=request.order,
        criteria=request.criteria,
        models=request.models,
        scenarios=request.scenarios,
        questions=request.questions,
        opponents=request.opponents,
        seed=seed,
        budget=request.budget,
        rpm=request.rpm,
        tpm=request.tpm,
        delivery=delivery_of(request, settings),
        reference_model=request.reference_model,
        reference_scenario=request.reference_scenario or "default",
        judges=None if panel is None else panel.members,
        aggregation=None if panel is None else panel.aggregation,
        panel=None if panel is None else panel.name,
        **_round_options(request),
    )
    for one in members_of(spec):
        check_judge(one)
        check_credentials(one, settings, workers)
    return spec


def members_of(spec: RunSpec) -> list[RunSpec]:
    """The specs each judge of the run judges with: the run's own, or each panel member's."""
    return [spec] if spec.judges is None else [spec.for_member(member) for member in spec.judges]


def check_spec(spec: RunSpec, settings: Settings, store: Store) -> RunSpec:
    """Every check of a built spec (budget, criteria, delivery, anchors): 422 for the first that
    fails; the spec to store (an anchored one with its anchors' ratings)."""
    for one in members_of(spec):
        check_budget(one, settings)
        check_criteria(one)
        check_delivery(one)
    return with_anchor_ratings(spec, store)


def _refuse(field: str, message: str) -> ApiError:
    return ApiError(422, f"{field}: {message}", details=[{"path": field, "message": message}])


def check_judge(spec: RunSpec) -> None:
    """422 for an `offline/` judge the workers do not have: every match would fail."""
    if spec.judge.partition("/")[0] == "offline" and spec.judge not in OFFLINE_JUDGES:
        raise _refuse("judge", f"unknown offline judge {spec.judge!r} (known: {', '.join(OFFLINE_JUDGES)})")


def check_credentials(spec: RunSpec, settings: Settings, workers: Callable[[], list[Reach] | None] = list) -> None:
    """422 naming the variable to set and where when neither this server nor any live worker
    (`workers()`, asked only when this server lacks them) holds the judge's credentials (see
    `leaderboard.reach.Reach.missing` for what each provider needs)."""
    if (why := unreachable(spec.judge, settings, workers)) is not None:
        raise _refuse("judge", why)


def live_workers(queue: JobQueue, settings: Settings) -> Callable[[], list[Reach] | None]:
    """What the live workers on the queue can reach, read from Redis once when first asked. With
    Redis down nothing can be asked: the judge is accepted (a tournament is stored meanwhile and
    handed out once Redis is back), and a worker without the key fails its matches saying so."""

    @cache
    def read() -> list[Reach] | None:
        try:
            return worker_reaches(queue.redis, settings.queue_name)
        except RedisError as exc:
            log.warning("cannot ask the workers which judges they reach (Redis: %s); accepting the judge", exc)
            return None

    return read


def delivery_of(request: TournamentIn, settings: Settings) -> str:
    """The run's delivery: as asked, else batch for a scheduled run of an Anthropic judge (half
    the price, for exactly the non-urgent work a nightly run is), else live."""
    if request.delivery is not None:
        return request.delivery
    if request.judges is not None:
        return Delivery.LIVE.value  # a panel's runs are judged live
    judge = request.judge or settings.judge
    return Delivery.BATCH.value if request.schedule and judge.startswith("anthropic/") else Delivery.LIVE.value


def check_delivery(spec: RunSpec) -> None:
    """422 when batch delivery is asked of a judge whose provider has no batch API here."""
    if spec.batch and not spec.judge.startswith("anthropic/"):
        raise _refuse("delivery", f"batch delivery needs an anthropic/ judge (Anthropic's Message Batches API); "
                                  f"{spec.judge!r} is judged live")


def _round_options(request: TournamentIn) -> dict[str, Any]:
    """The adaptive and anchored options, set only for those modes (the others keep defaults)."""
    level = {"level": request.level} if request.level is not None else {}
    if request.mode == Mode.ADAPTIVE.value:
        size = {"round_size": request.round_size} if request.round_size is not None else {}
        return {**level, **size, "max_calls": request.max_calls, "target_ci_width": request.target_ci_width}
    if request.mode == Mode.ANCHORED.value:
        return {**level, "anchors": request.anchors}
    return {}


def with_anchor_ratings(spec: RunSpec, store: Store) -> RunSpec:
    """An anchored spec with its anchors' ratings from the judge's current board; 422 when an
    anchor has no battles for this judge at the level. Any other spec as it is."""
    if not spec.anchored:
        return spec
    try:
        return spec.with_(anchor_ratings=rounds.anchor_ratings(store, spec.judge, spec.level, spec.anchors or ()))
    except ValueError as exc:
        raise _refuse("anchors", str(exc)) from exc


def check_budget(spec: RunSpec, settings: Settings) -> None:
    """422 when a budget is asked of a judge without a price."""
    if spec.budget is not None and price_of(spec.judge, settings.price_table()) is None:
        raise _refuse("budget", f"the judge {spec.judge!r} has no price, so a budget cannot be kept: give it one "
                                "in the JOUST_PRICES file, or drop the budget")


# Criteria sets that need a chat judge: the offline judge answers no free-form prompt.
CHAT_ONLY_CRITERIA = ("dimensions", "factsim")


def check_criteria(spec: RunSpec) -> None:
    """422 when the judge cannot answer the criteria set at all, instead of failing every match."""
    if spec.judge.startswith("offline/") and spec.criteria in CHAT_ONLY_CRITERIA:
        raise _refuse("criteria", f"the offline judge {spec.judge!r} cannot judge {spec.criteria!r}, which "
                                  "needs a chat judge (anthropic/... or openai/...)")
    if spec.reference_model is not None and spec.criteria not in SHOWS_EXTRAS:
        raise _refuse("reference_model", f"criteria {spec.criteria!r} shows the judge no reference answer "
                                         f"(only {', '.join(sorted(SHOWS_EXTRAS))} does)")


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
    spec = check_spec(build_spec(request, settings, live_workers(queue, settings)), settings, store)
    if dry_run:
        estimate = tournaments.dry_run(store, spec, settings.price_table())
        response.status_code = 200
        return DryRunOut(**asdict(estimate), seed=spec.seed)
    next_run_at = next_due(request.schedule, time.time()) if request.schedule else None
    run = tournaments.launch(store, queue, request.name, spec, schedule=request.schedule, next_run_at=next_run_at)
    status = store.get_tournament(run.id)["status"]
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
    return TournamentsOut(tournaments=[TournamentSummary(**row) for row in shown], next=following)


@router.get("/{tournament_id}", response_model=TournamentOut, responses=error_responses(404, 422))
def get_tournament(tournament_id: TournamentId, store: Annotated[Store, Depends(get_store)]) -> TournamentOut:
    """Status and progress: matches_total, matches_done, matches_failed, the runs a schedule
    started, budget, spent_usd and stopped_reason ("budget" when the budget stopped it)."""
    return TournamentOut(**store.get_tournament(tournament_id))


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
    return TournamentCancelled(**store.cancel_tournament(tournament_id))


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
    try:
        ids = store.retry_failed(tournament_id)
    except RetryRefused as exc:
        raise ApiError(409, str(exc)) from exc
    if store.get_tournament(tournament_id)["delivery"] == Delivery.LIVE.value:
        tournaments.hand_out(store, queue, ids)  # a batch run's driver takes pending matches itself
    return TournamentRetried(id=tournament_id, status="running", retried=len(ids))


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
