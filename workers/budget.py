"""A tournament's budget, as a worker enforces it before paying for a match.

`budget` (USD, in the tournament's spec) caps what one run spends. Before calling the judge for
a match that no stored judgement answers, the worker reads the run's spend
(`Store.tournament_spend`: the cost of the judgements its own matches made; a reused judgement
costs nothing). Once the spend has reached the budget the worker calls nothing and stops the run:
its active matches are cancelled, its status becomes "cancelled" with `stopped_reason`
"budget". Workers check independently, so a run can overshoot by the matches already being
judged when the budget is reached: at most one match per busy worker.

A judge without a price cannot be held to a budget: such a run is stopped with
`stopped_reason` "unpriced" before any call (the API refuses it up front; this catches a price
table that changed since).
"""
from __future__ import annotations

import logging

from leaderboard.pricing import price_of
from service.config import Settings
from service.store import MatchContext, Store

log = logging.getLogger(__name__)

BUDGET = "budget"
UNPRICED = "unpriced"


def stop_if_over_budget(store: Store, settings: Settings, ctx: MatchContext) -> str | None:
    """Stop the match's tournament when its budget forbids judging; the reason, or None to go on."""
    budget = ctx.spec.get("budget")
    if budget is None:
        return None
    if price_of(ctx.spec["judge"], settings.price_table()) is None:
        reason = UNPRICED
    elif store.tournament_spend(ctx.tournament_id) >= float(budget):
        reason = BUDGET
    else:
        return None
    if store.stop_tournament(ctx.tournament_id, reason):
        log.info("tournament %d stopped (%s) before match %d", ctx.tournament_id, reason, ctx.match_id)
    return reason
