"""Judging one pair: show it in the planned orders, collect the calls, combine them.

Kept apart from the job so it can be exercised with any Judge, and apart from the store so the
job decides what is written and when.
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

from leaderboard.consistency import combine, plan_orders
from leaderboard.conversation import Turn
from leaderboard.types import Call, OrderPolicy, Outcome, Submission

from .judge import Judge, JudgeReply, gather_settled, verdict_of
from .prompts import build_shown_prompt


@dataclass(frozen=True)
class JudgedCall(Call):
    """A call as a worker made it: `reminded` when the first reply held no verdict and the
    reminder re-ask was needed, which the judge-health parse-failure rate counts; `extra`
    holds what a criteria set records beside the verdict (e.g. per-dimension winners)."""

    reminded: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Recorded(Protocol):
    """A call that is not a pairwise verdict (a rubric score) and says how it is stored."""

    @property
    def input_tokens(self) -> int: ...

    @property
    def output_tokens(self) -> int: ...

    def as_json(self) -> dict: ...


def judged_call(reply: JudgeReply, first: int, **extra: Any) -> JudgedCall:
    """The reply as the call record of a match, given the submission shown first."""
    call = reply.as_call(first)
    return JudgedCall(**{f.name: getattr(call, f.name) for f in fields(call)}, reminded=reply.reminded, extra=extra)


async def judge_pair(
    judge: Judge, a: Submission, b: Submission, policy: OrderPolicy, rng: random.Random,
    reference: str | None = None,
) -> tuple[list[Call], Outcome]:
    """Ask the judge in each planned order (concurrently) and combine the verdicts for (a, b).

    A pair with a reference answer or a conversation is shown with `build_shown_prompt`, through
    the judge's free-form call; a judge without one (offline) judges the outputs alone."""
    by_id = {a.id: a, b.id: b}
    orders = plan_orders(a.id, b.id, policy, rng)
    complete = getattr(judge, "complete", None)
    if complete is not None and (reference is not None or a.turns is not None or b.turns is not None):
        asks = (verdict_of(complete, *build_shown_prompt(a.question, _side(by_id[first]), _side(by_id[second]),
                                                         reference)) for first, second in orders)
    else:
        asks = (judge.compare(a.question, by_id[first].output, by_id[second].output) for first, second in orders)
    replies = await gather_settled(*asks)
    calls: list[Call] = [judged_call(reply, first) for (first, _second), reply in zip(orders, replies)]
    return calls, combine(a.id, b.id, calls)


def _side(sub: Submission) -> str | tuple[Turn, ...]:
    return sub.output if sub.turns is None else sub.turns


def calls_as_json(calls: Sequence[Call | Recorded]) -> list[dict]:
    """The calls as stored with a judgement (`reminded` False for a plain `Call`; a
    `Recorded` call writes itself)."""
    return [c.as_json() if isinstance(c, Recorded) else _call_json(c) for c in calls]


def _call_json(c: Call) -> dict:
    return {
        "first": c.first,
        "winner": c.winner.value,
        "reason": c.reason,
        "raw": c.raw,
        "input_tokens": c.input_tokens,
        "output_tokens": c.output_tokens,
        "latency_ms": round(c.latency_ms, 1),
        "reminded": bool(getattr(c, "reminded", False)),
        **getattr(c, "extra", {}),
    }
