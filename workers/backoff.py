"""How long a match waits before it is tried again after a provider error.

Exponential backoff with jitter, never sooner than the provider's `retry-after`: many matches
fail together when a provider has a bad minute, and retrying them all at the same instant would
make the next minute bad too. The jitter is "equal jitter" (half the step fixed, half random), so
the wait still grows with every attempt while the retries of one burst spread over half a step.
The provider's hint is a floor, with a little jitter on top for the same reason. Randomness is
passed in, so a test can replay it.
"""
from __future__ import annotations

import random

MAX_BACKOFF_S = 600.0
RETRY_AFTER_SPREAD = 0.2  # up to 20% more than retry-after, spread at random


def retry_delay(
    attempt: int, base_s: float, retry_after: float | None, rng: random.Random, *, cap_s: float = MAX_BACKOFF_S
) -> float:
    """Seconds to wait before attempt `attempt + 1`, after attempt `attempt` (1-based) failed.

    The step is `base_s * 2**(attempt-1)`, capped at `cap_s`; the wait is half the step plus a
    random share of the other half, and at least `retry_after` (plus up to 20% of it)."""
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    step = min(cap_s, max(0.0, base_s) * 2 ** (attempt - 1))
    wait = step / 2 + rng.uniform(0.0, step / 2)
    if retry_after is not None and retry_after > 0:
        wait = max(wait, retry_after * (1.0 + rng.uniform(0.0, RETRY_AFTER_SPREAD)))
    return min(wait, cap_s)
