"""Judging one pair: show it in the planned orders, collect the calls, combine them.

Kept apart from the job so it can be exercised with any Judge, and apart from the store so the
job decides what is written and when.
"""
from __future__ import annotations

import asyncio
import random
from typing import Sequence

from leaderboard.consistency import combine, plan_orders
from leaderboard.types import Call, OrderPolicy, Outcome, Submission

from .judge import Judge


async def judge_pair(
    judge: Judge, a: Submission, b: Submission, policy: OrderPolicy, rng: random.Random
) -> tuple[list[Call], Outcome]:
    """Ask the judge in each planned order (concurrently) and combine the verdicts for (a, b)."""
    by_id = {a.id: a, b.id: b}
    orders = plan_orders(a.id, b.id, policy, rng)
    replies = await asyncio.gather(
        *(judge.compare(a.question, by_id[first].output, by_id[second].output) for first, second in orders)
    )
    calls = [reply.as_call(first) for (first, _second), reply in zip(orders, replies)]
    return calls, combine(a.id, b.id, calls)


def calls_as_json(calls: Sequence[Call]) -> list[dict]:
    """The calls as stored with a judgement."""
    return [
        {
            "first": c.first,
            "winner": c.winner.value,
            "reason": c.reason,
            "raw": c.raw,
            "input_tokens": c.input_tokens,
            "output_tokens": c.output_tokens,
            "latency_ms": round(c.latency_ms, 1),
        }
        for c in calls
    ]
