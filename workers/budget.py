"""A tournament's budget, as a worker enforces it before paying for a match.

`budget` (USD, in the tournament's spec) caps what one run spends. Before calling the judge for
a match that no stored judgement answers, the worker reads the run's spend
(`Store.tournament_spend`: the cost of the judgements its own matches made and what their
failed attempts paid, below; a reused judgement costs nothing). Once the spend has reached the
budget the worker calls nothing and stops the run: its active matches are cancelled, its status
becomes "cancelled" with `stopped_reason` "budget". Workers check independently, so a run can
overshoot by the matches already being judged when the budget is reached: at most one match per
busy worker.

A judge without a price cannot be held to a budget: such a run is stopped with
`stopped_reason` "unpriced" before any call (the API refuses it up front; this catches a price
table that changed since).

The spend also counts what failed attempts paid. A match can fail after some calls were paid
for (compqa scored one side, then the other's reply was unreadable; factsim extracted the
sources, then found no fact in them; a provider error part-way): no judgement records those
calls. The job judges through a `MeteredJudge`, which adds the usage of every reply to a
`Meter`, and when an attempt ends without storing its judgement it charges the meter's cost
to the match (`Store.charge_match`), which the run's spend includes. Not seen: the replies
inside a pairwise `compare` that fails (no readable verdict even after the reminder), and a
call of an `overall` or `dimensions` match still in flight when its sibling call fails.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from leaderboard.pricing import Price, cost_usd, price_of
from service.config import Settings
from service.store import MatchContext, Store
from workers.errors import VerdictParseError
from workers.judge import Completion, Judge, JudgeReply, Message

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


@dataclass
class Meter:
    """What one attempt at a match received from its judge: replies and their tokens."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, input_tokens: int, output_tokens: int) -> None:
        self.calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens

    def cost(self, judge: str, table: Mapping[str, Price]) -> float | None:
        """What these tokens cost at `judge`'s price; None when it has none."""
        return cost_usd(judge, self.input_tokens, self.output_tokens, table)


class MeteredJudge:
    """`judge`, adding the usage of every reply it receives to `meter`: each free-form call
    (`complete`: every call of the criteria sets other than `overall`, reminders included) and
    each verdict `compare` returns, or fails to return after paying (no readable verdict even
    after the reminder: `VerdictParseError` carries the usage). Everything else
    (`score_compqa`, `version`, `offline`, the absence of `complete`) is the judge's own."""

    def __init__(self, judge: Judge, meter: Meter) -> None:
        self._judge = judge
        self.meter = meter

    async def compare(self, question: str, first: str, second: str) -> JudgeReply:
        try:
            reply = await self._judge.compare(question, first, second)
        except VerdictParseError as exc:
            self.meter.add(exc.input_tokens, exc.output_tokens)
            raise
        self.meter.add(reply.input_tokens, reply.output_tokens)
        return reply

    def __getattr__(self, name: str) -> Any:
        if name == "_judge":
            raise AttributeError(name)
        found = getattr(self._judge, name)
        if name != "complete":
            return found

        async def complete(system: str, messages: list[Message]) -> Completion:
            completion = await found(system, messages)
            self.meter.add(completion.input_tokens, completion.output_tokens)
            return completion

        return complete


def charge_unrecorded(store: Store, settings: Settings, ctx: MatchContext, meter: Meter) -> float | None:
    """Charge the match what this attempt paid when no judgement of it records the calls (it
    failed, or a twin stored the pair's judgement first); the cost charged, None when nothing
    was paid or the judge has no price (a cost is never guessed)."""
    cost = meter.cost(ctx.spec["judge"], settings.price_table()) if meter.calls else None
    if cost:
        store.charge_match(ctx.match_id, cost)
        log.info("match %d: charged $%.6f for %d calls no judgement records", ctx.match_id, cost, meter.calls)
    return cost
