"""A battle as validated numbers (`unpack`) and battles as arrays (`BattleTable`): the types the
conversions (`leaderboard.columns`) produce and the counts (`leaderboard.battles`) consume, in a
module of their own so that neither imports the other's user.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .types import Battle, Winner

BattleLike = (
    Battle
    | tuple[str, str, Winner | str]
    | tuple[str, str, Winner | str, str | None]
    | tuple[str, str, Winner | str, str | None, float]
)
Columns = Mapping[str, Any]
"""Battle columns by name (a pandas DataFrame qualifies): see `leaderboard.columns`."""
Row = tuple[str, str, float, float, "str | None"]
"""(a, b, a's score, weight, question id): one validated battle."""

_SCORE: dict[str, float] = {"A": 1.0, "B": 0.0, "TIE": 0.5}  # a str-valued Winner hashes as its value

def unpack(item: BattleLike) -> Row:
    """(a, b, a's score, weight, question id) of one battle, validated; ValueError if malformed."""
    winner: Winner | str  # a Battle's is a Winner, a tuple's may be its string
    if isinstance(item, Battle):
        a, b, winner, question, weight = item.a, item.b, item.winner, item.question_id, item.weight
    else:
        a, b, winner = item[0], item[1], item[2]
        question = item[3] if len(item) > 3 else None
        weight = item[4] if len(item) > 4 else 1.0
    try:
        score = _SCORE[winner]
    except (KeyError, TypeError):
        raise ValueError(f"unknown winner {winner!r}: expected 'A', 'B' or 'TIE'") from None
    if a == b:
        raise ValueError(f"a battle needs two different players, got {a!r} twice")
    if not weight >= 0:
        raise ValueError(f"battle weights must be >= 0, got {weight!r}")
    return a, b, score, weight, question


@dataclass(frozen=True)
class BattleTable:
    """Battles as arrays: players in name order, a/b player indices, a's score (1, ½ or 0),
    weight, and a resampling group per battle (one per question id; a battle without one is
    its own group), numbered 0..groups-1 in order of first appearance."""

    players: list[str]
    a: np.ndarray
    b: np.ndarray
    score: np.ndarray
    weight: np.ndarray
    group: np.ndarray

    @property
    def groups(self) -> int:
        return int(self.group.max()) + 1 if self.group.size else 0
