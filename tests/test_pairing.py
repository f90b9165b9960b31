"""Pairing plans: round robin and sampled, question by question."""
from __future__ import annotations

import random
from collections import Counter
from math import comb

import pytest

from leaderboard.pairing import round_robin, sampled
from leaderboard.types import Pair, Submission


def sub(id_: int, question: str) -> Submission:
    return Submission(id=id_, question_id=question, question=f"text of {question}", model=f"m{id_}", scenario="default", output=f"out {id_}")


# q1: 4 submissions, q2: 3, q3: 1 (nothing to pair), ids interleaved across questions.
SUBS = [sub(1, "q1"), sub(2, "q2"), sub(3, "q1"), sub(4, "q2"), sub(5, "q1"), sub(6, "q2"), sub(7, "q1"), sub(8, "q3")]
QUESTION = {s.id: s.question_id for s in SUBS}


def test_round_robin_golden() -> None:
    assert round_robin(SUBS) == [
        Pair(1, 3), Pair(1, 5), Pair(1, 7), Pair(3, 5), Pair(3, 7), Pair(5, 7),
        Pair(2, 4), Pair(2, 6), Pair(4, 6),
    ]


def test_round_robin_is_n_choose_2_per_question() -> None:
    subs = [sub(i, f"q{i % 5}") for i in range(1, 48)]
    per_question = Counter(s.question_id for s in subs)
    pairs = round_robin(subs)
    assert len(pairs) == sum(comb(n, 2) for n in per_question.values())
    assert len(set(pairs)) == len(pairs)
    questions = {s.id: s.question_id for s in subs}
    assert all(p.a < p.b and questions[p.a] == questions[p.b] for p in pairs)
    got = Counter(questions[p.a] for p in pairs)
    assert got == {q: comb(n, 2) for q, n in per_question.items()}


def test_round_robin_does_not_depend_on_input_order() -> None:
    shuffled = SUBS[:]
    random.Random(3).shuffle(shuffled)
    assert round_robin(shuffled) == round_robin(SUBS)
    assert round_robin(SUBS + SUBS) == round_robin(SUBS)  # repeats dropped


def test_round_robin_of_nothing() -> None:
    assert round_robin([]) == []
    assert round_robin([sub(1, "q")]) == []


def _degrees(pairs: list[Pair]) -> Counter[int]:
    return Counter([p.a for p in pairs] + [p.b for p in pairs])


def test_sampled_gives_each_submission_at_least_its_opponents() -> None:
    subs = [sub(i, "q") for i in range(20)] + [sub(100 + i, "r") for i in range(9)]
    pairs = sampled(subs, 3, random.Random(1))
    questions = {s.id: s.question_id for s in subs}
    assert len(set(pairs)) == len(pairs)
    assert all(p.a < p.b and questions[p.a] == questions[p.b] for p in pairs)
    degrees = _degrees(pairs)
    assert all(degrees[s.id] >= 3 for s in subs)
    assert len(pairs) <= 3 * len(subs)
    assert len(pairs) < len(round_robin(subs))  # actually a sample


def test_sampled_with_fewer_submissions_than_opponents_is_the_round_robin() -> None:
    assert sampled(SUBS, 10, random.Random(0)) == round_robin(SUBS)
    assert sampled(SUBS, 3, random.Random(0)) == round_robin(SUBS)  # 3 >= n-1 on every question


def test_sampled_is_reproducible_whatever_the_input_order() -> None:
    subs = [sub(i, f"q{i % 3}") for i in range(60)]
    shuffled = subs[::-1]
    random.Random(5).shuffle(shuffled)
    assert sampled(subs, 2, random.Random(42)) == sampled(shuffled, 2, random.Random(42))


def test_sampled_depends_on_the_seed() -> None:
    subs = [sub(i, "q") for i in range(30)]
    plans = {tuple(sampled(subs, 2, random.Random(seed))) for seed in range(5)}
    assert len(plans) > 1


def test_sampled_zero_and_negative_opponents() -> None:
    assert sampled(SUBS, 0, random.Random(0)) == []
    with pytest.raises(ValueError):
        sampled(SUBS, -1, random.Random(0))
