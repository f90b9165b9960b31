"""Human votes: a person's verdict on two answers to one question, filed as a judgement.

A vote is a judgement of judge `human/<voter>` (criteria `overall`), so it feeds that judge's own
board and is the reference judge health compares every other judge with (`leaderboard.judge_health`).
The rules say when a vote means something:

- the two sides are different submissions answering the same question, by different players
  (a model and scenario against itself counts at no level of any board);
- neither side is a placeholder (an imported battle's submission): no answer was shown;
- `first`, the answer shown first when given, is one of the two: the call is then positional,
  as a judge's call is, so judge health can measure the voters' own position bias.

A verdict is "A", "B", "TIE" or "BOTH_BAD", relative to the vote's a and b (not to the display
order). `Winner` has no "both bad": for the ratings it is a tie (neither answer is preferred, as
Chatbot Arena counts its "tie (bothbad)"), and the call record keeps `both_bad: true`, so the
two stay apart in the data.

One vote per voter and pair: the key is (voter, the two submission ids in either order), so the
same vote sent again (same verdict, same `first`, in either orientation) is the stored one, and
a different verdict on a pair the voter already voted on is refused (`Ballot` compares them):
a vote is final, because boards replay judgements in order and never take one back.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .judge_health import HUMAN_PREFIX
from .keys import content_hash
from .types import Submission, Winner

VOTER_MAX = 100
"""Characters in a voter's name: `human/<voter>` stays well inside a judge name's 255."""
CRITERIA = "overall"
TEMPLATE_VERSION = "vote"  # what the voter was shown is the two outputs: no prompt template
FORBIDDEN = "/,"  # "/" would make "human/a/b" ambiguous; "," separates names in ?humans=


class Verdict(str, Enum):
    """A voter's answer, relative to the vote's a and b."""

    A = "A"
    B = "B"
    TIE = "TIE"
    BOTH_BAD = "BOTH_BAD"

    @property
    def winner(self) -> Winner:
        """The verdict for the ratings: both bad is a tie."""
        return Winner.TIE if self is Verdict.BOTH_BAD else Winner(self.value)


class VoteRefused(ValueError):
    """A vote that cannot be counted; `field` names the part of it that is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def voter_problem(name: str) -> str | None:
    """Why `name` cannot name a voter, or None: empty, too long, whitespace at either end, or a
    character that is "/", ",", a control or format character, or a line or paragraph break."""
    if not name:
        return "must not be empty"
    if len(name) > VOTER_MAX:
        return f"at most {VOTER_MAX} characters (got {len(name)})"
    if name != name.strip():
        return "must not start or end with whitespace"
    for index, char in enumerate(name):
        if char in FORBIDDEN:
            return f"must not contain {char!r} (at character {index}): give the name alone, e.g. \"alice\""
        if unicodedata.category(char)[0] == "C" or unicodedata.category(char) in ("Zl", "Zp"):
            return f"must not contain a control character (U+{ord(char):04X} at character {index})"
    return None


def vote_judge(voter: str) -> str:
    """The judge a voter's votes are filed under."""
    return HUMAN_PREFIX + voter


def vote_key(judge: str, a_id: int, b_id: int) -> str:
    """The key of a judge's vote on a pair, the same in either order: one vote per voter and pair."""
    low, high = sorted((a_id, b_id))
    return content_hash("\x1f".join(("vote", judge, str(low), str(high))))


@dataclass(frozen=True)
class Ballot:
    """What makes two votes on a pair the same: the verdict relative to the smaller id, both bad
    or not, and who was shown first."""

    pair: tuple[int, int]
    winner: Winner
    both_bad: bool
    first: int | None

    @classmethod
    def of(cls, a_id: int, b_id: int, outcome: Winner, call: Mapping[str, Any]) -> Ballot:
        """The ballot of a stored vote: its judgement's sides and outcome, and its one call."""
        low_first = a_id < b_id
        return cls((min(a_id, b_id), max(a_id, b_id)), outcome if low_first else outcome.flipped(),
                   bool(call.get("both_bad", False)), call.get("first"))

    def describe(self) -> str:
        """In words, for an error message."""
        low, high = self.pair
        if self.both_bad:
            verdict = "both bad"
        elif self.winner is Winner.TIE:
            verdict = "a tie"
        else:
            verdict = f"submission {low if self.winner is Winner.A else high} won"
        shown = f", {self.first} shown first" if self.first is not None else ""
        return verdict + shown


@dataclass(frozen=True)
class Vote:
    """One voter's verdict on submissions a and b, with the one shown first when known."""

    voter: str
    a: Submission
    b: Submission
    verdict: Verdict
    first: int | None = None

    @property
    def judge(self) -> str:
        return vote_judge(self.voter)

    @property
    def key(self) -> str:
        return vote_key(self.judge, self.a.id, self.b.id)

    @property
    def outcome(self) -> Winner:
        """The verdict relative to a, as a judgement's outcome."""
        return self.verdict.winner

    def call(self) -> dict[str, Any]:
        """The vote as the one call its judgement records: `winner` positional (relative to the
        answer shown first) when `first` is known, relative to a otherwise (`first` None)."""
        winner = self.outcome.flipped() if self.first == self.b.id else self.outcome
        return {"first": self.first, "winner": winner.value, "reason": "", "both_bad": self.verdict is Verdict.BOTH_BAD,
                "voter": self.voter, "source": "vote"}

    def ballot(self) -> Ballot:
        return Ballot.of(self.a.id, self.b.id, self.outcome, self.call())


def check_vote(vote: Vote, *, blind: bool = False) -> None:
    """Raise VoteRefused when the vote breaks a rule of the module docstring. `blind`: the
    voter may not learn who wrote which answer (a voter's key in a private joust), so no message
    names a side's model, scenario or question: only the ids the voter sent."""
    a, b = vote.a, vote.b
    problem = voter_problem(vote.voter)
    if problem is not None:
        raise VoteRefused("voter", problem)
    if a.id == b.id:
        raise VoteRefused("b", f"a and b are the same submission ({a.id}): a vote compares two answers")
    if a.question_id != b.question_id:
        which = "" if blind else f" ({a.question_id!r} and {b.question_id!r})"
        raise VoteRefused("b", f"a and b answer different questions{which}: "
                               "a vote compares two answers to the same question")
    if (a.model, a.scenario) == (b.model, b.scenario):
        who = "answers of one player" if blind else f"both model {a.model!r} under scenario {a.scenario!r}"
        raise VoteRefused("b", f"a and b are {who}: a player cannot play itself")
    for field, side in (("a", a), ("b", b)):
        if side.placeholder:
            raise VoteRefused(field, f"submission {side.id} is an imported battle's placeholder: "
                                     "it has no output to show a voter")
    if vote.first is not None and vote.first not in (a.id, b.id):
        raise VoteRefused("first", f"{vote.first} is neither a ({a.id}) nor b ({b.id}): "
                                   "first names the one of the two shown first")
