"""The records a judge leaves (`JudgementRecord`, its `CallRecord`s), who counts as human
(`HUMAN_PREFIX`, `is_human`), the pair a record is on (`pair_verdict`) and `share`: what every
judge health figure is read from (`leaderboard.judge_health`'s docstring defines the figures).

Apart from the figures because everything above them reads these (the counts, the agreement with
humans, the report, the running tally, and the modules that only need to know who is human), and
they depend on nothing but `leaderboard.types`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .types import OrderPolicy, Winner

HUMAN_PREFIX = "human/"


@dataclass(frozen=True)
class CallRecord:
    """One stored call: `first` the submission shown first (None when unknown), `winner`
    positional, `reminded` None when the call does not record it (imports)."""

    first: int | None
    winner: Winner
    reminded: bool | None = None


@dataclass(frozen=True)
class JudgementRecord:
    """One stored judgement: `outcome` relative to a; output lengths in characters when known;
    `consistent` and `order` as stored; `imported` when a file gave it (its calls, if any, are
    what the file said, not necessarily each order's)."""

    judge: str
    a_id: int
    b_id: int
    outcome: Winner
    calls: Sequence[CallRecord]
    a_length: int | None = None
    b_length: int | None = None
    consistent: bool = True
    order: OrderPolicy | None = None
    imported: bool = False



def is_human(judge: str) -> bool:
    """Human verdicts are filed under `human/<name>` (`joust import battles --human`)."""
    return judge.startswith(HUMAN_PREFIX)


def share(hits: int, total: int) -> float | None:
    """hits / total, or None when there is nothing to count."""
    return hits / total if total else None



def pair_verdict(record: JudgementRecord) -> tuple[tuple[int, int], Winner]:
    """The unordered pair (smaller id first) and the outcome relative to its smaller id."""
    if record.a_id < record.b_id:
        return (record.a_id, record.b_id), record.outcome
    return (record.b_id, record.a_id), record.outcome.flipped()
