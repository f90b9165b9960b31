"""Which two answers a voter sees next: the pair where people have said least.

A vote is worth most where human votes are fewest. The candidates are pairs of answers to the
same question by different systems (a question holds one answer per model and scenario, so
any two of its answers qualify), never an imported battle's placeholder (no answer to show), and
never a pair the voter already voted on (one vote per voter and pair, `leaderboard.votes`).
Among them the rule is:

1. the fewest human votes (every `human/` judge's);
2. among those, a pair an LLM judge has already judged: the vote then measures that judge's
   agreement with people (`leaderboard.judge_health`), which is what the votes are for;
3. then at random, with the `random.Random` passed in (the app holds one seeded from `secrets`;
   a test passes a seeded one); the sides are shuffled too, so the position carries nothing.

Why in two steps: a question with n answers has n(n-1)/2 pairs, and listing every pair of every
question costs the square of the store. A question's fewest votes follow from counts instead
(`least_votes`: its number of answers and the votes on its voted pairs, which are no more than
the votes cast), so the store tallies every question that way, lists the pairs of a few
questions sampled at the lowest level only (`sample_questions`), and `choose_pair` picks among
those. The price: step 2 looks only inside the sampled questions, so when more questions than
the sample tie at the lowest level, a judged pair outside it can be passed over for an
unjudged one.
"""
from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

Pair = tuple[int, int]
"""Two submission ids, the smaller first: a pair without an order."""


def pair_of(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


@dataclass(frozen=True)
class QuestionTally:
    """One question as counts: how many answers it has (placeholders left out), the human votes
    on each of its pairs that has any, and the pairs this voter may not be shown (voted on, or
    skipped just now)."""

    question_id: str
    answers: int
    votes: Mapping[Pair, int] = field(default_factory=dict)
    excluded: frozenset[Pair] = frozenset()


def least_votes(tally: QuestionTally) -> int | None:
    """The fewest human votes on a pair of the question the voter may be shown; None when there
    is no such pair. A pair with no vote exists when the pairs outnumber the voted ones and the
    excluded ones without a vote; otherwise every candidate is a voted pair, and those are listed."""
    pairs = tally.answers * (tally.answers - 1) // 2
    excluded_unvoted = sum(1 for p in tally.excluded if p not in tally.votes)
    if pairs - len(tally.votes) - excluded_unvoted > 0:
        return 0
    left = [n for p, n in tally.votes.items() if p not in tally.excluded]
    return min(left) if left else None


def sample_questions(tallies: Sequence[QuestionTally], rng: random.Random, size: int) -> list[str]:
    """At most `size` questions, drawn at random among those whose least-voted candidate pair
    has the fewest votes of all; empty when no question has a candidate left."""
    levels = {t.question_id: least_votes(t) for t in tallies}
    open_ = {q: level for q, level in levels.items() if level is not None}
    if not open_:
        return []
    lowest = min(open_.values())
    at = sorted(q for q, level in open_.items() if level == lowest)  # sorted: a seed gives one answer
    return rng.sample(at, min(size, len(at)))


@dataclass(frozen=True)
class CandidatePair:
    """A pair a voter may be shown: its human votes, and whether an LLM judge judged it."""

    pair: Pair
    votes: int
    judged: bool


def candidate_pairs(answers: Collection[int], tally: QuestionTally, judged: Collection[Pair]) -> list[CandidatePair]:
    """Every pair of one question's answers (ids) that the voter may be shown."""
    return [CandidatePair(p, tally.votes.get(p, 0), p in judged)
            for p in combinations(sorted(answers), 2) if p not in tally.excluded]


def choose_pair(candidates: Sequence[CandidatePair], rng: random.Random) -> CandidatePair | None:
    """The fewest votes, then judged by an LLM, then at random (see the module docstring)."""
    if not candidates:
        return None
    fewest = min(c.votes for c in candidates)
    least = [c for c in candidates if c.votes == fewest]
    pool = [c for c in least if c.judged] or least
    return rng.choice(sorted(pool, key=lambda c: c.pair))


def sides(pair: Pair, rng: random.Random) -> Pair:
    """The pair as (left, right), in a random order."""
    low, high = pair
    return (low, high) if rng.random() < 0.5 else (high, low)
