"""What the vote page shows around a pair: its buttons with their keyboard shortcuts, and the
receipt of the vote just cast, which names the two systems (revealed only after the vote, as
Chatbot Arena does: before it, nothing but the position tells the answers apart).

A page vote is filed with `a` = the answer shown left and `first` = left too, so a verdict
relative to a is a verdict relative to the left answer.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.players import player_of
from leaderboard.types import Level, Submission, Winner
from leaderboard.votes import Verdict
from service.store import JudgementDetail


@dataclass(frozen=True)
class VerdictButton:
    """One answer to "which is better": the form's value, its label, its keys (as
    `aria-keyshortcuts` names them, and as the page shows them) and the verdict relative to left."""

    value: str
    label: str
    keys: tuple[str, ...]
    shown: tuple[str, ...]
    verdict: Verdict

    @property
    def aria(self) -> str:
        return " ".join(self.keys)


BUTTONS = (
    VerdictButton("left", "Answer 1 is better", ("1", "ArrowLeft"), ("1", "←"), Verdict.A),
    VerdictButton("right", "Answer 2 is better", ("2", "ArrowRight"), ("2", "→"), Verdict.B),
    VerdictButton("tie", "Tie", ("t",), ("t",), Verdict.TIE),
    VerdictButton("both_bad", "Both are bad", ("b",), ("b",), Verdict.BOTH_BAD),
)
SKIP_KEYS = ("n", "s")
VERDICTS = {button.value: button.verdict for button in BUTTONS}


@dataclass(frozen=True)
class Receipt:
    """A vote cast, as the voter saw it: the systems shown left and right, and what was said."""

    left: str
    right: str
    winner: Winner  # relative to the left answer
    both_bad: bool

    @property
    def words(self) -> str:
        if self.both_bad:
            return "you found both answers bad"
        return {Winner.A: "you preferred the left answer", Winner.B: "you preferred the right answer",
                Winner.TIE: "you called it a tie"}[self.winner]


def system(sub: Submission) -> str:
    return player_of(sub.model, sub.scenario, Level.SYSTEM)


def receipt_of(judgement: JudgementDetail, a: Submission, b: Submission) -> Receipt:
    """The receipt of a stored vote (`Store.judgement_pair`): left is the answer shown first,
    a when the vote does not say (one filed through the API without `first`)."""
    calls: Sequence[Mapping[str, Any]] = judgement.calls or [{}]
    call = calls[0]
    outcome = Winner(judgement.outcome)
    left_is_b = call.get("first") == b.id
    return Receipt(left=system(b if left_is_b else a), right=system(a if left_is_b else b),
                   winner=outcome.flipped() if left_is_b else outcome, both_bad=bool(call.get("both_bad")))
