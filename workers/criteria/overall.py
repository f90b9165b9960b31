"""`overall`: the pairwise prompt of DESIGN.md (which response is better), in the planned orders."""
from __future__ import annotations

import random

from leaderboard.types import OrderPolicy
from service.store import MatchContext

from ..judge import Judge
from ..pairwise import judge_pair
from .base import Judged, ScoreBook


async def judge(
    judge: Judge, ctx: MatchContext, policy: OrderPolicy, rng: random.Random, *, scores: ScoreBook | None = None
) -> Judged:
    """Judge the match's pair with `Judge.compare` in each planned order (with the question's
    reference answer and the conversations when it has them) and combine the verdicts."""
    calls, outcome = await judge_pair(judge, ctx.a, ctx.b, policy, rng, ctx.reference)
    return Judged(calls, outcome, {})
