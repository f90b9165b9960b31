"""A tournament's budget, kept while many calls are in flight: spend is reserved before each call.

`budget` (USD, in the tournament's spec) caps what one run spends. With one match at a time a
worker could read the run's spend before each match and overshoot by one match per worker; with
dozens of matches in flight per worker that overshoot would be dozens of matches. So spend is
**reserved** before each call, in a counter per run in Redis that every worker shares
(`SpendBook`): the call's largest cost (its prompt's estimated tokens in, `max_tokens` out, at the
judge's price, halved for batch delivery) is added if it still fits under the budget, and the
call is not sent otherwise; when the reply comes the reservation is replaced by the call's real
cost (usually less). The counter starts from the run's spend in the database
(`Store.tournament_spend`) the first time a worker touches it. A run therefore never spends more
than its budget, except by what a reply's real tokens exceed their estimate (chars/4 can
undercount code or non-Latin text); it stops with at most one call's reservation unspent per
call in flight. A worker that dies with reservations leaves them counted: the run errs on the
side of spending less.

When the budget cannot take the next call the run is stopped: its active matches are cancelled,
its status becomes "cancelled" with `stopped_reason` "budget". A judge without a price cannot be
held to a budget: such a run is stopped with `stopped_reason` "unpriced" before any call (the API
refuses it up front; this catches a price table that changed since).

The spend also counts what failed attempts paid: an attempt that pays for calls and stores no
judgement (it failed, was retried, or a twin stored the pair first) charges its `Meter`'s cost to
the match (`Store.charge_match`), which the run's spend includes.
"""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from redis.asyncio import Redis

from leaderboard.pricing import Price, cost_usd, price_of
from service.store import MatchContext, Store

from .lua import LuaScript
from .unrecorded import UnrecordedCharges

log = logging.getLogger(__name__)

BUDGET = "budget"
UNPRICED = "unpriced"
SPEND_KEY = "joust:spend:{tournament}"
SPEND_TTL_S = 7 * 24 * 3600

# KEYS[1]: the run's spend. ARGV: budget, cost. 1 reserved, 0 over budget, -1 not started.
_RESERVE = """
local spent = redis.call('GET', KEYS[1])
if not spent then return -1 end
if tonumber(spent) + tonumber(ARGV[2]) > tonumber(ARGV[1]) then return 0 end
redis.call('INCRBYFLOAT', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""

Offload = Callable[..., Awaitable]
"""Runs a blocking function off the event loop: `await io(fn, *args)`."""


class BudgetExceeded(Exception):
    """The run's budget cannot take this call: it was not sent."""


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

    def cost(self, judge: str, table: Mapping[str, Price], discount: float = 1.0) -> float | None:
        """What these tokens cost at `judge`'s price (times `discount`); None when it has none."""
        cost = cost_usd(judge, self.input_tokens, self.output_tokens, table)
        return None if cost is None else cost * discount


class SpendBook:
    """Each run's spend (what was paid plus what calls in flight reserved), shared in Redis."""

    def __init__(self, redis: Redis, store: Store, io: Offload) -> None:
        self.redis = redis
        self.store = store
        self.io = io
        self._reserve = LuaScript(redis, _RESERVE)

    async def _start(self, tournament_id: int) -> None:
        """The run's counter, from the database's spend, unless another worker started it."""
        spent = await self.io(self.store.tournament_spend, tournament_id)
        await self.redis.set(SPEND_KEY.format(tournament=tournament_id), repr(float(spent)), nx=True, ex=SPEND_TTL_S)

    async def spent(self, tournament_id: int) -> float:
        """What the run has paid and reserved."""
        key = SPEND_KEY.format(tournament=tournament_id)
        value = await self.redis.get(key)
        if value is None:
            await self._start(tournament_id)
            value = await self.redis.get(key)
        return float(value or 0.0)

    async def reserve(self, tournament_id: int, budget: float, cost: float) -> bool:
        """Reserve `cost` under `budget`; False (nothing reserved) when it does not fit."""
        key = SPEND_KEY.format(tournament=tournament_id)
        for _ in range(2):
            got = await self._reserve(keys=[key], args=[repr(float(budget)), repr(float(cost)), SPEND_TTL_S])
            if got != -1:
                return bool(got)
            await self._start(tournament_id)
        return False

    async def settle(self, tournament_id: int, reserved: float, actual: float) -> None:
        """Replace a reservation by what the call really cost (0.0 for a call that failed)."""
        if actual != reserved:
            await self.redis.incrbyfloat(SPEND_KEY.format(tournament=tournament_id), actual - reserved)


def over_budget_reason(ctx: MatchContext, table: Mapping[str, Price], spent: float | None) -> str | None:
    """Why the match's run may not pay for another call ("unpriced", "budget"), or None."""
    budget = ctx.spec.budget
    if budget is None:
        return None
    if price_of(ctx.spec.judge, table) is None:
        return UNPRICED
    if spent is not None and spent >= budget:
        return BUDGET
    return None


async def stop_if_over_budget(store: Store, io: Offload, spend: SpendBook | None, table: Mapping[str, Price],
                              ctx: MatchContext) -> str | None:
    """Stop the match's run when its budget forbids judging; the reason, or None to go on."""
    if ctx.spec.budget is None:
        return None
    if spend is not None:
        spent = await spend.spent(ctx.tournament_id)
    else:
        spent = await io(store.tournament_spend, ctx.tournament_id)
    reason = over_budget_reason(ctx, table, spent)
    if reason is not None:
        await stop_for(store, io, ctx, reason)
    return reason


async def stop_for(store: Store, io: Offload, ctx: MatchContext, reason: str) -> None:
    """Stop the match's run for `reason` (its active matches cancelled)."""
    if await io(store.stop_tournament, ctx.tournament_id, reason):
        log.info("tournament %d stopped (%s) at match %d", ctx.tournament_id, reason, ctx.match_id)


async def charge_unrecorded(store: Store, io: Offload, table: Mapping[str, Price], ctx: MatchContext, meter: Meter,
                            discount: float = 1.0, *, charges: UnrecordedCharges | None = None) -> float | None:
    """Charge the match what this attempt paid when no judgement of it records the calls (it
    failed, or a twin stored the pair's judgement first), and count those calls (an adaptive
    run's `max_calls` counts them, priced or not); the cost charged, None when nothing was paid
    or the judge has no price (a cost is never guessed). Through `charges` when given: kept in
    Redis while the database is down, rather than waiting for it (a stopping worker cannot)."""
    if not meter.calls:
        return None
    cost = meter.cost(ctx.spec.judge, table, discount)
    if charges is not None:
        await charges.charge(ctx.match_id, cost, meter.calls)
    else:
        await io(store.charge_match, ctx.match_id, cost, calls=meter.calls)
    if cost:
        log.info("match %d: charged $%.6f for %d calls no judgement records", ctx.match_id, cost, meter.calls)
    return cost
