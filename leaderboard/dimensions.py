"""The `dimensions` criteria set: five verdicts per call, and the consistency rule per dimension.

A `dimensions` judge answers, for each order a pair is shown in, "A", "B" or "TIE" on accuracy,
completeness, clarity, conciseness and overall. Each stored call keeps those positional
verdicts (`call["dimensions"]`); each dimension is then combined on its own with
`leaderboard.consistency.combine`, so a judge biased towards the first slot on clarity alone
gives clarity an inconsistent tie while accuracy stays a consistent win. The judgement's own
outcome is the `overall` dimension's, so the overall board reads a `dimensions` judgement like
any other.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .consistency import combine
from .types import Call, Outcome, Winner

DIMENSIONS: tuple[str, ...] = ("accuracy", "completeness", "clarity", "conciseness", "overall")
CRITERIA = "dimensions"

_WINNERS = {w.value: w for w in Winner}


def dimension_outcomes(a: int, b: int, first: Sequence[int], verdicts: Sequence[Mapping[str, Winner]]) -> dict[str, Outcome]:
    """Per dimension, the outcome for the pair (a, b) of one or two calls: call i showed
    `first[i]` first and answered `verdicts[i]` (positional winners by dimension)."""
    if len(first) != len(verdicts):
        raise ValueError(f"{len(first)} calls but {len(verdicts)} sets of verdicts")
    return {
        name: combine(a, b, [Call(first=f, winner=v[name]) for f, v in zip(first, verdicts)])
        for name in DIMENSIONS
    }


def stored_outcome(calls: Sequence[Mapping[str, Any]], a: int, b: int, dimension: str) -> Outcome | None:
    """One dimension's outcome relative to `a`, read from the calls JSON of a stored
    `dimensions` judgement on (a, b); None when a call does not record that dimension."""
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r} (known: {', '.join(DIMENSIONS)})")
    positional: list[Call] = []
    for call in calls:
        winner = _WINNERS.get(str((call.get("dimensions") or {}).get(dimension, "")))
        if winner is None or call.get("first") not in (a, b):
            return None
        positional.append(Call(first=call["first"], winner=winner))
    return combine(a, b, positional) if 1 <= len(positional) <= 2 else None
