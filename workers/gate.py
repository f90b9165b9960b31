"""Every call a match makes passes one gate: a slot, the breaker, the shared rate limit, the budget.

A worker process has dozens of matches in flight, each making a few calls. Before a call goes
out it waits, in this order, for:

1. a slot of the judge's concurrency in this process (`JOUST_JUDGE_CONCURRENCY`, or the judge's
   own `concurrency` in `JOUST_JUDGE_ENDPOINTS`): at most that many calls in flight per judge;
2. the judge's circuit breaker (`workers.breaker`, shared by every worker): closed, it lets the
   call go; open after failed calls in a row, it holds the call until one probe is answered; down
   (its probes failed too), it raises `JudgeDown` and nothing is sent;
3. the shared rate limit (`workers.ratelimit`): requests and tokens per minute across every
   worker, paused together after a 429/529 that says so;
4. a reservation of its largest cost under the run's budget (`workers.budget.SpendBook`).

A call the provider could not answer (429, 529, 5xx, a timeout) is sent again, through the gate
again, up to `CALL_ATTEMPTS` times. A 429 or 529 with retry-after pauses every worker that long
(the provider said so). One without pauses every worker only when it ends `Overload.after`
failed calls in a row (the breaker counts them across workers), longer the longer the streak
(`workers.pacing.Overload`): a lone overload, like a 5xx or a timeout, only makes this call wait
a jittered backoff (`retry_base_s`, doubled per send). The SDK's own retries are off in workers,
so that every 429 is seen here. Past that, the match goes back on the queue.

Right before sending, the match's claim on its judgement is confirmed (and extended) in Redis
(`workers.leases`): if it lapsed while this process was stalled, another worker may hold it
now, so nothing is sent: that worker pays, this one steps back.

The reply's tokens settle the rate limit and the budget, and are added to the match's `Meter`.
A pause also slows every worker down afterwards (`SharedRateLimit.penalize`).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from leaderboard.circuit import CallResult
from leaderboard.pricing import Price, cost_usd, estimate_tokens
from service.config import Settings

from .backoff import retry_delay
from .breaker import CircuitBreaker, Permit
from .budget import BudgetExceeded, Meter, SpendBook
from .callstats import CallStats
from .errors import PermanentJudgeError, TransientJudgeError, VerdictParseError
from .judge import Completion, Judge, JudgeReply, Message, compare_with_reminder
from .pacing import Overload, cooldown_for
from .ratelimit import Limits, SharedRateLimit

log = logging.getLogger(__name__)

RATE_LIMITED = frozenset({429, 529})
CALL_ATTEMPTS = 3  # sends of one call before its match goes back on the queue
CALL_RETRY_BASE_S = 1.0  # the first wait after an error that paused nobody, doubled each time, jittered
CALL_RETRY_MAX_WAIT_S = 20.0  # a longer retry-after sends the match back on the queue instead


async def _kept(bookkeeping: Awaitable[object], what: str) -> None:
    """Run the bookkeeping that follows a send, never losing the send's reply to it: a reply
    is paid for, and a count that failed (Redis gone for longer than its retries ride out, a
    script it refused) costs less than the match failing and its calls being paid for again.
    The rate limit and the budget mend themselves (a ticket's window passes, a reservation is
    settled high); the failure is logged."""
    try:
        await bookkeeping
    except Exception:
        log.exception("after a send, could not %s; the reply stands", what)


class ClaimLost(Exception):
    """The match's claim on its judgement lapsed, so another worker may be paying for it now."""


def learnt_from(exc: TransientJudgeError) -> CallResult:
    """What a provider error says about the provider: a 429 that names its retry-after is its
    rate limit speaking (the limiter's business, not a failure); anything else failed."""
    return CallResult.UNKNOWN if exc.status == 429 and exc.retry_after is not None else CallResult.FAILED


def overload_of(settings: Settings) -> Overload:
    """When a 429/529 without retry-after pauses every worker, as the settings say."""
    return Overload(after=settings.overload_pause_after, first_s=settings.overload_pause_s)


@dataclass(frozen=True)
class Refused:
    """A send the provider could not answer, and whether every worker now pauses before the next."""

    error: TransientJudgeError
    paused: bool


@dataclass(frozen=True)
class Budget:
    """The run a call is charged to and what it may spend; the price of its judge."""

    tournament_id: int
    usd: float
    price_table: Mapping[str, Price]
    discount: float = 1.0  # 0.5 through the batch API


@dataclass
class Gate:
    """What a match's calls wait for and report to (see the module docstring)."""

    spec: str
    meter: Meter
    max_tokens: int
    slot: asyncio.Semaphore | None = None
    limiter: SharedRateLimit | None = None
    limits: Limits = Limits()
    spend: SpendBook | None = None
    budget: Budget | None = None
    still_ours: Callable[[], Awaitable[bool]] | None = None
    rng: random.Random = field(default_factory=random.Random)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    stats: CallStats | None = None  # counts each send for /metrics (workers.callstats)
    breaker: CircuitBreaker | None = None  # the judge's, shared by every worker
    overload: Overload = Overload()  # when a 429/529 without retry-after pauses every worker
    retry_base_s: float = CALL_RETRY_BASE_S  # the first backoff of a call sent again alone

    def estimate(self, system: str, messages: list[Message]) -> int:
        """The call's largest size in tokens: its prompt's estimate in, `max_tokens` out."""
        return estimate_tokens(system) + sum(estimate_tokens(m["content"]) for m in messages) + self.max_tokens

    async def call(self, send: Callable[[str, list[Message]], Any], system: str, messages: list[Message]) -> Completion:
        """Send one call through the gate, again after a short wait when the provider could not
        answer (at most `CALL_ATTEMPTS` sends, each through the gate again: after a pause of
        every worker the next send waits it out, else it waits its own backoff); raises what the
        judge raises at the end, or `BudgetExceeded`, `ClaimLost`, `JudgeDown` (nothing sent)."""
        for attempt in range(1, CALL_ATTEMPTS + 1):
            if self.slot is None:
                sent = await self._through(send, system, messages)
            else:
                async with self.slot:
                    sent = await self._through(send, system, messages)
            if not isinstance(sent, Refused):
                return sent
            exc, wait = sent.error, sent.error.retry_after
            if attempt == CALL_ATTEMPTS or (wait is not None and wait > CALL_RETRY_MAX_WAIT_S):
                raise exc  # the match goes back on the queue, with a longer backoff
            if self.stats is not None:
                await self.stats.retried(self.spec)
            if not sent.paused:  # else the shared pause waits
                await self.sleep(retry_delay(attempt, self.retry_base_s, wait, self.rng))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _through(
        self, send: Callable[[str, list[Message]], Any], system: str, messages: list[Message]
    ) -> Completion | Refused:
        """One send, admitted by the judge's circuit breaker, which then learns how it went."""
        permit = await self.breaker.admit(self.spec) if self.breaker is not None else None
        try:
            completion = await self._paid(send, system, messages)
        except TransientJudgeError as exc:
            streak = await self._learnt(permit, learnt_from(exc), str(exc))
            return Refused(exc, paused=await self._pause(exc, streak))
        except PermanentJudgeError:  # the provider answered: it refused the request itself
            await self._learnt(permit, CallResult.ANSWERED)
            raise
        except BaseException:  # never sent (the claim, the budget), or cancelled: nothing learnt
            with contextlib.suppress(Exception):  # what ended the call matters more; a probe left
                await self._learnt(permit, CallResult.UNKNOWN)  # unreleased lapses on its own
            raise
        await _kept(self._learnt(permit, CallResult.ANSWERED), "tell the breaker of an answer")
        return completion

    async def _learnt(self, permit: Permit | None, result: CallResult, why: str = "") -> int:
        """Tell the breaker how the call went; the failed calls in a row since (1 for a failure
        when there is no breaker to count them)."""
        if permit is None or self.breaker is None:
            return 1 if result is CallResult.FAILED else 0
        recorded = await self.breaker.record(permit, result, why)
        if recorded.event in ("opened", "reopened") and self.stats is not None:
            await self.stats.circuit_opened(self.spec)
        return recorded.streak

    async def _pause(self, exc: TransientJudgeError, streak: int) -> bool:
        """Pause every worker after a 429/529, when it says how long (retry-after) or ends enough
        overloads in a row (`overload`); whether it did."""
        if self.limiter is None or exc.status not in RATE_LIMITED:
            return False
        pause = cooldown_for(exc.retry_after) if exc.retry_after is not None else self.overload.pause(streak)
        if exc.retry_after is None and pause <= 0:
            return False  # a lone overload: this call backs off alone
        await self.limiter.penalize(self.spec, pause, self.limits)
        if self.stats is not None:
            await self.stats.paused(self.spec)
        return True

    async def _paid(
        self, send: Callable[[str, list[Message]], Any], system: str, messages: list[Message]
    ) -> Completion:
        """The rate limit, the claim, the budget, then the send; its tokens settled after."""
        tokens = self.estimate(system, messages)
        ticket = await self.limiter.acquire(self.spec, self.limits, tokens) if self.limiter is not None else None
        if self.still_ours is not None and not await self.still_ours():  # asked last, right before sending
            if ticket is not None:
                await self.limiter.settle(ticket, 0)  # type: ignore[union-attr]
            raise ClaimLost(f"the claim on this judgement of {self.spec} lapsed: another worker may be judging it")
        reserved = await self._reserve(tokens - self.max_tokens)
        used, paid = 0, 0.0
        try:
            completion = await self._send(send, system, messages)
            used = completion.input_tokens + completion.output_tokens
            paid = self._cost(completion.input_tokens, completion.output_tokens) or 0.0
            self.meter.add(completion.input_tokens, completion.output_tokens)
            return completion
        finally:
            if ticket is not None:
                await _kept(self.limiter.settle(ticket, used), "settle the rate limit")  # type: ignore[union-attr]
            if reserved is not None and self.spend is not None and self.budget is not None:
                await _kept(self.spend.settle(self.budget.tournament_id, reserved, paid), "settle the budget")

    async def _send(self, send: Callable[[str, list[Message]], Any], system: str, messages: list[Message]) -> Completion:
        """Send the call, counting it (and, answered, its latency) in `stats`."""
        if self.stats is None:
            return await send(system, messages)
        started = time.monotonic()
        try:
            completion = await send(system, messages)
        except TransientJudgeError as exc:
            await self.stats.failed(self.spec, rate_limited=exc.status in RATE_LIMITED)
            raise
        except Exception:
            await self.stats.failed(self.spec, rate_limited=False)
            raise
        await _kept(self.stats.answered(self.spec, time.monotonic() - started), "count an answer")
        return completion

    def _cost(self, input_tokens: int, output_tokens: int) -> float | None:
        if self.budget is None:
            return None
        cost = cost_usd(self.spec, input_tokens, output_tokens, self.budget.price_table)
        return None if cost is None else cost * self.budget.discount

    async def _reserve(self, input_tokens: int) -> float | None:
        """Reserve the call's largest cost under the run's budget; None when no budget applies."""
        if self.budget is None or self.spend is None:
            return None
        cost = self._cost(input_tokens, self.max_tokens)
        if cost is None:
            return None
        if not await self.spend.reserve(self.budget.tournament_id, self.budget.usd, cost):
            raise BudgetExceeded(f"the run's budget of ${self.budget.usd:g} cannot take another call")
        return cost


class GatedJudge:
    """`judge` as one match uses it: each free-form call (`complete`, which the pairwise verdict
    and every criteria set are built on) goes through the match's `Gate`. A judge without a
    free-form call (the offline judge) makes no provider call: its verdicts pass through, metered.
    Everything else (`score_compqa`, `version`, `offline`, the absence of `complete`) is the
    judge's own."""

    def __init__(self, judge: Judge, gate: Gate) -> None:
        self._judge = judge
        self.gate = gate

    async def compare(self, question: str, first: str, second: str) -> JudgeReply:
        if getattr(self._judge, "complete", None) is not None:
            return await compare_with_reminder(self.complete, question, first, second)  # type: ignore[attr-defined]
        try:
            reply = await self._judge.compare(question, first, second)
        except VerdictParseError as exc:
            self.gate.meter.add(exc.input_tokens, exc.output_tokens)
            raise
        self.gate.meter.add(reply.input_tokens, reply.output_tokens)
        return reply

    def __getattr__(self, name: str) -> Any:
        if name == "_judge":
            raise AttributeError(name)
        found = getattr(self._judge, name)
        if name != "complete":
            return found

        async def complete(system: str, messages: list[Message]) -> Completion:
            return await self.gate.call(found, system, messages)

        return complete
