"""The judges page, `/judges`: how far each judge's verdicts can be trusted, each figure
explained in one line, against the reference humans (every voter unless `?humans=` names some).

The figures are `GET /api/judges`' (the app's one `JudgeHealthCache`); the page never waits for a
full recomputation while judgements arrive: it shows the last one and says which revision it
counts up to (`JudgeHealthCache.soon`).
"""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from leaderboard.judge_health import HUMAN_PREFIX
from leaderboard.reference_humans import NotHuman, NoVotes, chosen, names_of
from service.store import Store
from service.usecases.judge_health_cache import JudgeHealthCache
from service.web.pages.render import mark_of, not_modified, render
from service.web.routes.common import get_store
from service.web.routes.judges import get_judge_health

router = APIRouter(tags=["page"])

# (column, what it means): the page's legend, one line each.
FIGURES = (
    ("Calls", "verdicts asked of the judge; one call is one verdict on one display order."),
    ("Consistency", "of the judgements made in both orders, the share whose two orders agree; "
                    "the rest count as ties on the boards."),
    ("First position", "of the calls naming a winner, the share won by the answer shown first; "
                       "50% means no position bias."),
    ("Ties", "the share of calls that named no winner."),
    ("Parse failures", "the share of matches that failed because the judge's answer could not be read."),
    ("Longer wins", "of the calls naming a winner, the share that picked the longer answer; "
                    "far above 50% is a taste for length."),
    ("Human agreement", "verdicts matching the reference humans' votes on the same pairs (ties count)."),
    ("Without ties", "the same among the comparisons where both the judge and the human named a winner."),
    ("Human α", "Krippendorff's alpha with the reference humans' votes on the same pairs, and its 95% interval: "
                "1 is full agreement, 0 what the verdicts' frequencies give by chance."),
)


def chosen_humans(values: list[str], known: tuple[str, ...]) -> frozenset[str] | None | str:
    """The reference humans the form chose (None: every voter), or what is wrong with the choice:
    names or patterns (`human/expert_*`), as GET /api/judges takes them (`leaderboard.reference_humans`)."""
    parts = [part for value in values for part in value.split(",") if part.strip()]
    if not parts:
        return None
    try:
        return chosen(names_of(parts), known)
    except (NotHuman, NoVotes) as exc:
        return str(exc)


@router.get("/judges", response_class=HTMLResponse, include_in_schema=False)
def judges_page(
    request: Request,
    store: Annotated[Store, Depends(get_store)],
    health: Annotated[JudgeHealthCache, Depends(get_judge_health)],
) -> Response:
    """Every judge's health and the reference humans' agreement with each other."""
    mark = mark_of(store)
    cached = not_modified(request, mark)
    if cached is not None:
        return cached
    every = health.current()
    chosen = chosen_humans(request.query_params.getlist("humans"), every.humans)
    if isinstance(chosen, str):
        return render(request, "problem.html", {"message": chosen, "known": []}, mark=mark, title="Judges",
                      status=422, live=False)
    latest = every if chosen is None else health.current(chosen)
    context = {
        "health": latest,
        "voters": every.humans,
        "chosen": set(latest.humans) if chosen is not None else set(),
        "figures": FIGURES,
        "llm_judges": [h for h in latest.judges if not h.judge.startswith(HUMAN_PREFIX)],
        "human_judges": [h for h in latest.judges if h.judge.startswith(HUMAN_PREFIX)],
    }
    return render(request, "judges.html", context, mark=mark, title="Judges")
