"""Plain value types shared by every layer.

They carry no behaviour that needs I/O, so the service, the workers and the rating maths can
all speak in the same terms without importing each other.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .conversation import Turn, canonical


class Winner(str, Enum):
    """A verdict: "A" means the first-named side won, "B" the second, "TIE" neither."""

    A = "A"
    B = "B"
    TIE = "TIE"

    def flipped(self) -> Winner:
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
    """How a tournament picks its pairs (`import`: none, its verdicts came from a file)."""

    ROUND_ROBIN = "round_robin"
    SAMPLED = "sampled"
    ADAPTIVE = "adaptive"
    ANCHORED = "anchored"
    BASELINE = "baseline"
    IMPORT = "import"

    @property
    def live(self) -> bool:
        """A mode whose runs ask a judge (every one but `import`)."""
        return self is not Mode.IMPORT


class MatchStatus(str, Enum):
    """Where a match is in its life (stored as the plain string)."""

    PENDING = "pending"  # created, not yet on the queue
    QUEUED = "queued"  # a job (or a retry) waits on the queue, or a worker has taken it
    RUNNING = "running"  # a worker is asking the judge
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def active(self) -> bool:
        """Still to be judged."""
        return self in ACTIVE_MATCH


ACTIVE_MATCH = frozenset({MatchStatus.PENDING, MatchStatus.QUEUED, MatchStatus.RUNNING})


class TournamentStatus(str, Enum):
    """Where a tournament run is in its life (stored as the plain string)."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Delivery(str, Enum):
    """How a run's calls reach the provider: `live` (the Messages API, many calls in flight) or
    `batch` (the provider's batch API: half the price, results within hours)."""

    LIVE = "live"
    BATCH = "batch"


class MatchOutcome(str, Enum):
    """What one attempt at a match did (a worker's log line, a test's check)."""

    JUDGED = "judged"  # the judge was asked and the judgement stored
    CACHED = "cached"  # a stored judgement answered it, for free
    SKIPPED = "skipped"  # already finished or cancelled
    MISSING = "missing"  # no such match (deleted, or another database)
    STOPPED = "stopped"  # its run's budget (or price) forbade judging, or the run was stopped
    WAITING = "waiting"  # a twin is being judged elsewhere: looked at again shortly
    RETRYING = "retrying"  # a provider error: put back on the queue with backoff
    FAILED = "failed"  # recorded as failed, with its reason
    ABANDONED = "abandoned"  # the worker stopped before it ended: handed out again by the sweep


class RequestStatus(str, Enum):
    """Where a batch request is in its life (stored as the plain string)."""

    PENDING = "pending"  # asked for by a replay, in no batch yet
    SUBMITTED = "submitted"  # in a batch the provider has not ended
    SUCCEEDED = "succeeded"
    ERRORED = "errored"
    EXPIRED = "expired"
    CANCELED = "canceled"


class BatchStatus(str, Enum):
    """Where a batch is: ours before the provider's id is stored, then the provider's."""

    CREATING = "creating"
    IN_PROGRESS = "in_progress"
    CANCELING = "canceling"
    ENDED = "ended"
    ABANDONED = "abandoned"  # the create call was refused, or never reached the provider


PLACEHOLDER_OUTPUT = "(imported battle: output not available)"
"""The output of a submission made from an imported battle, which carries none. Its verdicts
came from the file; a live tournament never pairs it: there is no text to show a judge."""


@dataclass(frozen=True)
class Submission:
    """One generator model's output, under one prompt scenario, for one question."""

    id: int
    question_id: str
    question: str
    model: str
    scenario: str
    output: str  # a conversation's: its assistant turns (`leaderboard.conversation.assistant_text`)
    reference: str | None = None  # the question's reference answer, as this submission states it
    turns: tuple[Turn, ...] | None = None  # the whole conversation, when the output is one

    @property
    def judged_text(self) -> str:
        """What the judgement key holds of this side: the output, or every turn of a conversation."""
        return self.output if self.turns is None else canonical(self.turns)

    @property
    def placeholder(self) -> bool:
        """Made from an imported battle: no output to judge (`PLACEHOLDER_OUTPUT`)."""
        return self.output == PLACEHOLDER_OUTPUT


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


class Missing(str, Enum):
    """Why a board row has no interval."""

    UNBOUNDED = "unbounded"  # the verdicts, or too many resamples of them, do not bound the rating
    NO_SPREAD = "no_spread"  # every resample gives the same rating: resampling cannot measure its spread


@dataclass(frozen=True)
class Rating:
    """One row of a leaderboard. The fields after `matches` say where the row stands; a row
    made by hand may leave them out, and their defaults are what every reader assumes then."""

    player: str
    rating: float
    ci_low: float
    ci_high: float
    elo: float
    wins: int
    losses: int
    ties: int
    matches: int
    component: int = 1  # the connected component (1 = the largest), see `leaderboard.components`
    bounded: bool = True  # False: the component's verdicts do not bound its ratings (`leaderboard.bounds`)
    rank: int | None = None  # within the component; None: the row's position stands in
    rank_low: int | None = None  # the best rank the interval allows
    rank_high: int | None = None  # the worst
    points: float | None = None  # wins plus half the ties (`leaderboard.standings.Record`)
    win_rate: float | None = None
    ci_missing: Missing | None = None  # why a resampled interval is missing
    plain_rating: float | None = None  # a refitted board's (style control, Davidson) plain fit
    plain_ci_low: float | None = None
    plain_ci_high: float | None = None
