"""Plain value types shared by every layer.

They carry no behaviour that needs I/O, so the service, the workers and the rating maths can
all speak in the same terms without importing each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Winner(str, Enum):
    """A verdict: "A" means the first-named side won, "B" the second, "TIE" neither."""

    A = "A"
    B = "B"
    TIE = "TIE"

    def flipped(self) -> "Winner":
        """The same verdict seen with the two sides swapped."""
        if self is Winner.A:
            return Winner.B
        if self is Winner.B:
            return Winner.A
        return Winner.TIE


class Level(str, Enum):
    """How submissions are grouped into players on a leaderboard."""

    MODEL = "model"
    SCENARIO = "scenario"
    SYSTEM = "model+scenario"


class OrderPolicy(str, Enum):
    """`both`: judge twice, random order first, then swapped. `single`: one call, random order."""

    BOTH = "both"
    SINGLE = "single"


class Mode(str, Enum):
    """How a tournament picks its pairs."""

    ROUND_ROBIN = "round_robin"
    SAMPLED = "sampled"


@dataclass(frozen=True)
class Submission:
    """One generator model's output, under one prompt scenario, for one question."""

    id: int
    question_id: str
    question: str
    model: str
    scenario: str
    output: str


@dataclass(frozen=True)
class Pair:
    """Two submission ids that answer the same question, to be judged against each other."""

    a: int
    b: int


@dataclass(frozen=True)
class Call:
    """One judge call: which submission was shown first and the positional verdict.

    `winner` is positional: "A" means the response shown first (`first`) won.
    """

    first: int
    winner: Winner
    reason: str = ""
    raw: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0


@dataclass(frozen=True)
class Outcome:
    """The combined verdict for a pair (a, b): `winner` is relative to a; `consistent` is False
    when the two orders disagreed and the tie stands for position bias, not for the judge's tie."""

    winner: Winner
    consistent: bool


@dataclass(frozen=True)
class Battle:
    """One counted result between two players, for the rating maths."""

    a: str
    b: str
    winner: Winner
    question_id: str | None = None
    weight: float = 1.0


@dataclass(frozen=True)
class Rating:
    """One row of a leaderboard."""

    player: str
    rating: float
    ci_low: float
    ci_high: float
    elo: float
    wins: int
    losses: int
    ties: int
    matches: int
    extra: dict = field(default_factory=dict)
