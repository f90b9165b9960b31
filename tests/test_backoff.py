"""The retry wait after a provider error: it grows, it is jittered, and never sooner than the
provider's retry-after."""
from __future__ import annotations

import random

import pytest

from workers.backoff import MAX_BACKOFF_S, RETRY_AFTER_SPREAD, retry_delay


def test_the_wait_doubles_within_its_jitter_band() -> None:
    rng = random.Random(7)
    for attempt in range(1, 7):  # 10 s doubled up to 320 s, under the cap
        step = 10.0 * 2 ** (attempt - 1)
        waits = [retry_delay(attempt, 10.0, None, rng) for _ in range(200)]
        assert all(step / 2 <= w <= step for w in waits)
        # jittered: a burst of failures does not come back at one instant
        assert max(waits) - min(waits) > step / 4


def test_retry_after_is_a_floor_with_a_little_spread() -> None:
    rng = random.Random(1)
    waits = [retry_delay(1, 0.1, 30.0, rng) for _ in range(200)]
    assert all(30.0 <= w <= 30.0 * (1 + RETRY_AFTER_SPREAD) for w in waits)
    assert len({round(w, 6) for w in waits}) > 100
    # a backoff step longer than retry-after wins
    assert all(retry_delay(6, 10.0, 1.0, rng) >= 160.0 for _ in range(50))


def test_the_wait_is_capped_and_replayable() -> None:
    assert retry_delay(30, 10.0, None, random.Random(0)) <= MAX_BACKOFF_S
    assert retry_delay(1, 10.0, 10_000.0, random.Random(0)) == MAX_BACKOFF_S
    assert [retry_delay(3, 2.0, None, random.Random(5)) for _ in range(3)] == [
        retry_delay(3, 2.0, None, random.Random(5))] * 3
    with pytest.raises(ValueError):
        retry_delay(0, 1.0, None, random.Random(0))
