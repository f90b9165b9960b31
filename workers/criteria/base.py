"""What every criteria set shares: the result of judging one match, and the score book.

A criteria set is an async function `(judge, ctx, policy, rng, *, scores) -> Judged`:
it asks the judge whatever its criteria need, and returns the calls to store with the
judgement, the pair's outcome (relative to the match's a) and `extra`, what the set worked out
beside the outcome (per-dimension outcomes, each side's score) for the caller to log or use.
"""
from __future__ import annotations

import random
from collections.abc import Awaitable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from leaderboard.types import Call, OrderPolicy, Outcome
from service.store import KeptScore, MatchContext

from ..judge import Judge
from ..pairwise import Recorded


class Judged(NamedTuple):
    """One match judged under a criteria set: the calls to store, the outcome, and extras."""

    calls: Sequence[Call | Recorded]
    outcome: Outcome
    extra: Mapping[str, Any]


class ScoreBook(Protocol):
    """Where absolute scores live, one per (submission, judge, criteria): the store, reached
    off the event loop (`workers.match.OffLoopScores`), so a database write never stalls the
    other matches in flight.

    `find_score` → the stored `KeptScore` or None. `keep_score` stores a score unless one of the
    same `detail["template_version"]` is there already, and returns the one kept (first writer
    wins, so workers racing on one submission all use the same score) with `created`.
    """

    async def find_score(self, submission_id: int, judge: str, criteria: str) -> KeptScore | None: ...

    def exclusive(self, key: str) -> AbstractAsyncContextManager[None]:
        """Held around work that matches in flight share and must pay for once (a submission's
        score, a source's facts): the others wait, then find it in the book."""
        ...

    async def keep_score(self, submission_id: int, judge: str, criteria: str, total: float, detail: dict) -> KeptScore: ...


class CriteriaSet(Protocol):
    """The signature of every entry of `workers.criteria.CRITERIA`."""

    def __call__(
        self, judge: Judge, ctx: MatchContext, policy: OrderPolicy, rng: random.Random, *, scores: ScoreBook
    ) -> Awaitable[Judged]: ...


@dataclass(frozen=True)
class RubricReply:
    """A rubric score of one answer: criterion number → points, for the criteria scored.

    `unscored` lists the criteria the judge could not score (an offline judge's rules cover
    only the structural ones); `max_total` is what the scored criteria could give. Tokens and
    latency add up every call the score took; `reminded` when the reminder was needed.
    """

    points: Mapping[int, int]
    max_total: int
    raw: str
    unscored: tuple[int, ...] = ()
    notes: Mapping[int, str] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    reminded: bool = False

    @property
    def total(self) -> int:
        return sum(self.points.values())
