"""The consistency rule: which orders a pair is shown in, and how the calls become one outcome.

An LLM judge prefers one slot over the other (position bias). Showing a pair in both orders and
keeping a verdict only when the two orders agree turns that bias into ties instead of into
wins for whichever side happened to be shown first. A tie from disagreement is flagged
`consistent=False`, so "the judge said tie" and "the orders disagreed" stay distinguishable.
"""
from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from .types import Call, OrderPolicy, Outcome, Winner


def match_seed(match_key: str) -> int:
    """A stable 64-bit seed for one match, so its random order is the same on every retry.

    Built from sha256, not `hash()`, which is salted per process.
    """
    digest = hashlib.sha256(match_key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def plan_orders(a: int, b: int, policy: OrderPolicy | str, rng: random.Random) -> list[tuple[int, int]]:
    """The (first, second) orders in which to show the pair (a, b).

    `both`: a random order, then the same pair swapped (two entries). `single`: one random
    order. The first order is random so that no side is systematically shown first.
    """
    if a == b:
        raise ValueError(f"a pair needs two different submissions, got {a} twice")
    policy = OrderPolicy(policy)
    first = (a, b) if rng.random() < 0.5 else (b, a)
    if policy is OrderPolicy.SINGLE:
        return [first]
    return [first, (first[1], first[0])]


def relative_winner(a: int, b: int, call: Call) -> Winner:
    """A call's positional verdict re-expressed relative to `a` ("A" means a won)."""
    winner = Winner(call.winner)
    if call.first == a:
        return winner
    if call.first == b:
        return winner.flipped()
    raise ValueError(f"call shows submission {call.first} first, which is neither {a} nor {b}")


def combine(a: int, b: int, calls: Sequence[Call]) -> Outcome:
    """One outcome for the pair (a, b) from its one or two judge calls.

    One call stands as it is. Two calls that agree (both ties included) give that verdict; two
    that disagree give a tie flagged inconsistent, the mark of position bias.
    """
    if a == b:
        raise ValueError(f"a pair needs two different submissions, got {a} twice")
    if not 1 <= len(calls) <= 2:
        raise ValueError(f"expected one or two calls, got {len(calls)}")
    verdicts = [relative_winner(a, b, call) for call in calls]
    if len(set(verdicts)) == 1:
        return Outcome(winner=verdicts[0], consistent=True)
    return Outcome(winner=Winner.TIE, consistent=False)
