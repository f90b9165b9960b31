"""Pairing plans: which submissions are judged against which.

Only submissions that answer the same question are comparable, so every plan works question by
question. Plans are deterministic (round robin, against a baseline) or reproducible from a seeded
`random.Random` (sampled), whatever order the submissions arrive in, so a tournament can be re-planned after a
crash and produce the same matches.
"""
from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Iterable

from .players import player_of
from .types import Level, Pair, Submission


def by_question(submissions: Iterable[Submission]) -> dict[str, list[int]]:
    """Submission ids per question, questions and ids sorted, duplicates dropped.

    Sorting first is what makes the plans independent of the input order.
    """
    groups: dict[str, set[int]] = defaultdict(set)
    for submission in submissions:
        groups[submission.question_id].add(submission.id)
    return {question: sorted(groups[question]) for question in sorted(groups)}


def round_robin(submissions: Iterable[Submission]) -> list[Pair]:
    """Every two submissions on the same question, once, as Pair(a=lower id, b=higher id).

    Ordered by question id, then by (a, b): n submissions on a question give n·(n-1)/2 pairs.
    """
    return [
        Pair(a=a, b=b)
        for ids in by_question(submissions).values()
        for a, b in itertools.combinations(ids, 2)
    ]


def sampled(submissions: Iterable[Submission], opponents: int, rng: random.Random) -> list[Pair]:
    """Each submission drawn against `opponents` random distinct others on its question.

    Submissions pick in id order; a question with n submissions gives each min(opponents, n-1)
    picks. Pairs are deduplicated (a pick of b and of a by b are one Pair(a<b)), so every
    submission ends with at least min(opponents, n-1) opponents, and some with more. Ordered by
    question id, then by (a, b). Same seed, same plan, whatever the input order.
    """
    if opponents < 0:
        raise ValueError(f"opponents must be >= 0, got {opponents}")
    plan: list[Pair] = []
    for ids in by_question(submissions).values():
        chosen: set[tuple[int, int]] = set()
        for own in ids:
            others = [other for other in ids if other != own]
            for other in rng.sample(others, min(opponents, len(others))):
                chosen.add((min(own, other), max(own, other)))
        plan.extend(Pair(a=a, b=b) for a, b in sorted(chosen))
    return plan


def against_baseline(submissions: Iterable[Submission], baseline: str, level: Level | str) -> list[Pair]:
    """Every submission of another player against each of the baseline's on the same question.

    A player is `player_of` at `level`; with one submission per player on a question, n players
    give n-1 pairs there instead of round robin's n·(n-1)/2 (AlpacaEval's and arena-hard's
    design). A question the baseline did not answer gives none; two non-baseline submissions
    never meet. Ordered by question id, then by (a, b), as Pair(a=lower id, b=higher id).
    """
    level = Level(level)
    groups: dict[str, dict[int, bool]] = defaultdict(dict)
    for sub in submissions:
        groups[sub.question_id][sub.id] = player_of(sub.model, sub.scenario, level) == baseline
    plan: list[Pair] = []
    for question in sorted(groups):
        sides = groups[question]
        ours = [i for i in sorted(sides) if sides[i]]
        chosen = {(min(own, other), max(own, other)) for own in ours for other in sides if not sides[other]}
        plan.extend(Pair(a=a, b=b) for a, b in sorted(chosen))
    return plan
