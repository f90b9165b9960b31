"""The consistency rule: orders shown, and two calls combined into one outcome."""
from __future__ import annotations

import hashlib
import random

import pytest

from leaderboard.consistency import combine, match_seed, plan_orders
from leaderboard.types import Call, OrderPolicy, Outcome, Winner

A, B, T = Winner.A, Winner.B, Winner.TIE
SUB_A, SUB_B = 11, 22


# Call 1 shows SUB_A first, call 2 shows SUB_B first; winners are positional ("A" = shown first).
# So call 2's "A" means SUB_B won, i.e. B relative to SUB_A. Expected outcomes worked by hand.
NINE = [
    (A, B, Outcome(A, True)),  # a won both times
    (B, A, Outcome(B, True)),  # b won both times
    (T, T, Outcome(T, True)),  # the judge said tie twice
    (A, A, Outcome(T, False)),  # first slot won twice: position bias
    (B, B, Outcome(T, False)),  # second slot won twice: position bias
    (A, T, Outcome(T, False)),  # a, then tie
    (B, T, Outcome(T, False)),  # b, then tie
    (T, B, Outcome(T, False)),  # tie, then a
    (T, A, Outcome(T, False)),  # tie, then b
]


@pytest.mark.parametrize(("first_call", "second_call", "expected"), NINE)
def test_combine_all_nine_pairs_of_calls(first_call: Winner, second_call: Winner, expected: Outcome) -> None:
    calls = [Call(first=SUB_A, winner=first_call), Call(first=SUB_B, winner=second_call)]
    assert combine(SUB_A, SUB_B, calls) == expected


@pytest.mark.parametrize(("first_call", "second_call", "expected"), NINE)
def test_combine_does_not_depend_on_call_order(first_call: Winner, second_call: Winner, expected: Outcome) -> None:
    calls = [Call(first=SUB_B, winner=second_call), Call(first=SUB_A, winner=first_call)]
    assert combine(SUB_A, SUB_B, calls) == expected


@pytest.mark.parametrize(
    ("first", "winner", "expected"),
    [(SUB_A, A, A), (SUB_A, B, B), (SUB_A, T, T), (SUB_B, A, B), (SUB_B, B, A), (SUB_B, T, T)],
)
def test_combine_single_call_is_flipped_when_b_was_shown_first(first: int, winner: Winner, expected: Winner) -> None:
    assert combine(SUB_A, SUB_B, [Call(first=first, winner=winner)]) == Outcome(expected, True)


def test_combine_accepts_plain_strings() -> None:
    calls = [Call(first=SUB_A, winner="A"), Call(first=SUB_B, winner="B")]  # type: ignore[arg-type]
    assert combine(SUB_A, SUB_B, calls) == Outcome(A, True)


@pytest.mark.parametrize(
    "calls",
    [
        [],
        [Call(first=SUB_A, winner=A)] * 3,
        [Call(first=99, winner=A)],
        [Call(first=SUB_A, winner=A), Call(first=99, winner=A)],
    ],
)
def test_combine_rejects_bad_calls(calls: list[Call]) -> None:
    with pytest.raises(ValueError):
        combine(SUB_A, SUB_B, calls)


def test_combine_rejects_a_pair_of_one() -> None:
    with pytest.raises(ValueError):
        combine(SUB_A, SUB_A, [Call(first=SUB_A, winner=A)])


def test_plan_orders_both_is_an_order_then_its_swap() -> None:
    for seed in range(20):
        orders = plan_orders(SUB_A, SUB_B, OrderPolicy.BOTH, random.Random(seed))
        assert len(orders) == 2
        assert orders[1] == (orders[0][1], orders[0][0])
        assert set(orders) == {(SUB_A, SUB_B), (SUB_B, SUB_A)}


def test_plan_orders_first_order_is_random() -> None:
    firsts = {plan_orders(SUB_A, SUB_B, "both", random.Random(seed))[0] for seed in range(50)}
    assert firsts == {(SUB_A, SUB_B), (SUB_B, SUB_A)}


def test_plan_orders_single_is_one_random_order() -> None:
    plans = [plan_orders(SUB_A, SUB_B, OrderPolicy.SINGLE, random.Random(seed)) for seed in range(50)]
    assert all(len(plan) == 1 for plan in plans)
    assert {plan[0] for plan in plans} == {(SUB_A, SUB_B), (SUB_B, SUB_A)}


def test_plan_orders_is_reproducible_per_match() -> None:
    for key in ("match-1", "match-2", "tournament-7/match-42"):
        first = plan_orders(SUB_A, SUB_B, "both", random.Random(match_seed(key)))
        again = plan_orders(SUB_A, SUB_B, "both", random.Random(match_seed(key)))
        assert first == again


def test_plan_orders_rejects_unknown_policy_and_pair_of_one() -> None:
    with pytest.raises(ValueError):
        plan_orders(SUB_A, SUB_B, "twice", random.Random(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        plan_orders(SUB_A, SUB_A, "both", random.Random(0))


def test_match_seed_is_stable_across_processes() -> None:
    # Golden: the first 8 bytes of sha256(b"match-1"), big-endian; hash() would change per process.
    assert match_seed("match-1") == 6799102427555470026
    assert match_seed("match-1") == int.from_bytes(hashlib.sha256(b"match-1").digest()[:8], "big")


def test_match_seed_differs_between_matches_and_fits_in_64_bits() -> None:
    seeds = {match_seed(f"match-{i}") for i in range(1000)}
    assert len(seeds) == 1000
    assert all(0 <= seed < 2**64 for seed in seeds)
