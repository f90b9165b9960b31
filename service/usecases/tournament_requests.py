"""A tournament asked for, made into the spec to store, or refused naming the field at fault.

Every front end (the API, and the CLI, the scheduler or a bench without HTTP) builds and checks a
run here, so each refuses the same requests with the same words: a `UseCaseError` (kind
`invalid`) whose problem names the field (`service.usecases.errors.refuse`).

A sampled tournament without a seed gets one drawn here and stored in its spec, so every run,
nightly re-runs included, can be planned again identically. A `budget` needs a judge with a
price (`leaderboard.pricing`, `JOUST_PRICES`): without one its spend could not be counted. A
judge needs its credentials here or on a live worker (`check_credentials`, `service.credentials`:
in docker compose only the workers hold the provider's key; the caller says how to ask the
workers, e.g. `service.ops.liveness.live_workers`): without them every match would fail; an
`offline/` judge must be one the workers have (`service.config.OFFLINE_JUDGES`). A dry run is
checked like a real run.
"""
from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.panel import panel_of
from leaderboard.players import player_of
from leaderboard.pricing import price_of
from leaderboard.reach import Reach
from leaderboard.spec import RunSpec
from leaderboard.templates import SHOWS_EXTRAS
from leaderboard.types import Delivery, Mode
from service.config import OFFLINE_JUDGES, Settings
from service.credentials import unreachable
from service.store import Store
from service.usecases import rounds
from service.usecases.errors import refuse

# What the live workers can reach, asked only when this process lacks a judge's credentials;
# None: they cannot be asked (the judge is accepted).
Workers = Callable[[], list[Reach] | None]


@dataclass(frozen=True)
class TournamentRequest:
    """A tournament as a client asks for it, already well-formed (the API's `TournamentIn`
    checks the shapes): None leaves a field to its default (the settings' judge, the mode's
    options, the delivery `delivery_of` picks)."""

    name: str = "tournament"
    mode: str = "round_robin"
    opponents: int | None = None
    seed: int | None = None
    judge: str | None = None
    order: str = "both"
    criteria: str = "overall"
    models: Sequence[str] | None = None
    scenarios: Sequence[str] | None = None
    questions: Sequence[str] | None = None
    schedule: str | None = None
    budget: float | None = None
    level: str | None = None
    round_size: int | None = None
    max_calls: int | None = None
    target_ci_width: float | None = None
    anchors: Sequence[str] | None = None
    baseline: str | None = None
    rpm: float | None = None
    tpm: float | None = None
    delivery: str | None = None
    reference_model: str | None = None
    reference_scenario: str | None = None
    judges: Sequence[str] | None = None
    aggregation: str | None = None
    panel: str | None = None


def checked_spec(request: TournamentRequest, settings: Settings, store: Store, workers: Workers = list) -> RunSpec:
    """The spec to store for `request`, built and checked (`build_spec`, `check_spec`); a
    `UseCaseError` naming the field at fault for the first check that fails."""
    return check_spec(build_spec(request, settings, workers), settings, store)


def build_spec(request: TournamentRequest, settings: Settings, workers: Workers = list) -> RunSpec:
    """The stored spec: everything needed to plan and judge the tournament again; refused when its
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
        baseline=request.baseline,  # kept for any mode: `check_baseline` refuses it but for mode baseline
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
    """Every check of a built spec (budget, criteria, delivery, baseline, anchors): refused for the
    first that fails; the spec to store (an anchored one with its anchors' ratings)."""
    for one in members_of(spec):
        check_budget(one, settings)
        check_criteria(one)
        check_delivery(one)
    check_baseline(spec, store)
    return with_anchor_ratings(spec, store)


def check_baseline(spec: RunSpec, store: Store) -> None:
    """Refused when a baseline run names no baseline, a baseline that is no player of its field
    at its level, or a field without another player to meet it: it would plan nothing. A
    baseline named for another mode is refused too (it would be ignored). Adaptive rounds with a
    baseline are refused on purpose, not left undone: a baseline run's worth is that every
    player's win rate against the baseline is over the same questions (AlpacaEval's design), and
    rounds that pick the most informative pairs would give each player other questions; its plan
    is already the cheap one (n-1 pairs a question), and `budget`, `questions` or `models` cap it."""
    if not spec.against_baseline:
        if spec.baseline is None:
            return
        if spec.adaptive:
            raise refuse("baseline", "not with mode 'adaptive': adaptive rounds pick pairs across the whole field, "
                                     "question by question, so win rates against a baseline would be over different "
                                     "questions for each player; use mode 'baseline' (n-1 pairs a question), with "
                                     "`budget` or `questions` to spend less")
        raise refuse("baseline", f"only for mode 'baseline', not {spec.mode.value!r}")
    if spec.baseline is None:
        raise refuse("baseline", "required when mode is 'baseline' (the player every other meets)")
    players = sorted({player_of(s.model, s.scenario, spec.level) for s in rounds.field_of(store, spec)})
    if spec.baseline not in players:
        shown = ", ".join(players[:20]) or "none: no submission matches the filters"
        raise refuse("baseline", f"{spec.baseline!r} is no {spec.level.value} of this tournament's field "
                                 f"(its players: {shown})")
    if len(players) < 2:
        raise refuse("baseline", f"the field has no player but the baseline {spec.baseline!r} at level "
                                 f"{spec.level.value}: a baseline run needs at least two players")


def check_judge(spec: RunSpec) -> None:
    """Refused for an `offline/` judge the workers do not have: every match would fail."""
    if spec.judge.partition("/")[0] == "offline" and spec.judge not in OFFLINE_JUDGES:
        raise refuse("judge", f"unknown offline judge {spec.judge!r} (known: {', '.join(OFFLINE_JUDGES)})")


def check_credentials(spec: RunSpec, settings: Settings, workers: Workers = list) -> None:
    """Refused, naming the variable to set and where, when neither this process nor any live
    worker (`workers()`, asked only when this process lacks them) holds the judge's credentials
    (see `leaderboard.reach.Reach.missing` for what each provider needs)."""
    if (why := unreachable(spec.judge, settings, workers)) is not None:
        raise refuse("judge", why)


def delivery_of(request: TournamentRequest, settings: Settings) -> str:
    """The run's delivery: as asked, else batch for a scheduled run of an Anthropic judge (half
    the price, for exactly the non-urgent work a nightly run is), else live."""
    if request.delivery is not None:
        return request.delivery
    if request.judges is not None:
        return Delivery.LIVE.value  # a panel's runs are judged live
    judge = request.judge or settings.judge
    return Delivery.BATCH.value if request.schedule and judge.startswith("anthropic/") else Delivery.LIVE.value


def check_delivery(spec: RunSpec) -> None:
    """Refused when batch delivery is asked of a judge whose provider has no batch API here."""
    if spec.batch and not spec.judge.startswith("anthropic/"):
        raise refuse("delivery", f"batch delivery needs an anthropic/ judge (Anthropic's Message Batches API); "
                                 f"{spec.judge!r} is judged live")


def _round_options(request: TournamentRequest) -> dict[str, Any]:
    """The adaptive, anchored and baseline options, set only for those modes (the others keep defaults)."""
    level = {"level": request.level} if request.level is not None else {}
    if request.mode == Mode.ADAPTIVE.value:
        size = {"round_size": request.round_size} if request.round_size is not None else {}
        return {**level, **size, "max_calls": request.max_calls, "target_ci_width": request.target_ci_width}
    if request.mode == Mode.ANCHORED.value:
        return {**level, "anchors": request.anchors}
    if request.mode == Mode.BASELINE.value:
        return level
    return {}


def with_anchor_ratings(spec: RunSpec, store: Store) -> RunSpec:
    """An anchored spec with its anchors' ratings from the judge's current board; refused when an
    anchor has no battles for this judge at the level. Any other spec as it is."""
    if not spec.anchored:
        return spec
    try:
        return spec.with_(anchor_ratings=rounds.anchor_ratings(store, spec.judge, spec.level, spec.anchors or ()))
    except ValueError as exc:
        raise refuse("anchors", str(exc)) from exc


def check_budget(spec: RunSpec, settings: Settings) -> None:
    """Refused when a budget is asked of a judge without a price."""
    if spec.budget is not None and price_of(spec.judge, settings.price_table()) is None:
        raise refuse("budget", f"the judge {spec.judge!r} has no price, so a budget cannot be kept: give it one "
                               "in the JOUST_PRICES file, or drop the budget")


# Criteria sets that need a chat judge: the offline judge answers no free-form prompt.
CHAT_ONLY_CRITERIA = ("dimensions", "factsim")


def check_criteria(spec: RunSpec) -> None:
    """Refused when the judge cannot answer the criteria set at all, instead of failing every match."""
    if spec.judge.startswith("offline/") and spec.criteria in CHAT_ONLY_CRITERIA:
        raise refuse("criteria", f"the offline judge {spec.judge!r} cannot judge {spec.criteria!r}, which "
                                 "needs a chat judge (anthropic/... or openai/...)")
    if spec.reference_model is not None and spec.criteria not in SHOWS_EXTRAS:
        raise refuse("reference_model", f"criteria {spec.criteria!r} shows the judge no reference answer "
                                        f"(only {', '.join(sorted(SHOWS_EXTRAS))} does)")
