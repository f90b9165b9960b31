"""A judgement as the page shows it: the two answers side by side and each call told in words,
which answer was shown first and which one the judge picked, so a reader can check a verdict
against the outputs without decoding positional letters."""
from __future__ import annotations

from dataclasses import dataclass

from leaderboard.players import player_of
from leaderboard.types import Level
from service.web.api_views import Call, JudgementOut, Side

PICKS = {"A": "the answer shown first", "B": "the answer shown second", "TIE": "neither: a tie"}
OUTCOMES = {"A": "a won", "B": "b won", "TIE": "a tie"}


@dataclass(frozen=True)
class CallView:
    """One call: its number, the side shown first ("a" or "b"; None when unknown), what the
    judge picked in words and as a side, and the judge's reason."""

    number: int
    first: str | None
    picked: str
    side: str | None
    reason: str | None
    extra: dict
    raw: str | None = None


@dataclass(frozen=True)
class JudgementView:
    """The judgement with its sides named as systems and its calls in words."""

    judgement: JudgementOut
    a_name: str
    b_name: str
    outcome: str
    calls: tuple[CallView, ...]

    @property
    def a(self) -> Side:
        return self.judgement.a

    @property
    def b(self) -> Side:
        return self.judgement.b


def side_of(judgement: JudgementOut, submission: int | None) -> str | None:
    """"a" or "b" for a submission of the judgement; None when it is neither or unknown."""
    if submission == judgement.a.id:
        return "a"
    if submission == judgement.b.id:
        return "b"
    return None


def call_view(judgement: JudgementOut, number: int, call: Call) -> CallView:
    """A call in words: a positional winner ("A" = shown first) turned into the side it names."""
    first = side_of(judgement, call.first)
    second = {"a": "b", "b": "a"}.get(first or "")
    side = {"A": first, "B": second}.get(call.winner or "")
    picked = PICKS.get(call.winner or "", call.winner or "no verdict (a score)")
    extra = {k: v for k, v in (call.model_extra or {}).items() if v is not None}
    raw = extra.pop("raw", None)  # the judge's whole reply: long, shown folded
    return CallView(number, first, picked, side, call.reason, extra, None if raw is None else str(raw))


def judgement_view(judgement: JudgementOut) -> JudgementView:
    """The page's view of one judgement."""
    def name(side: Side) -> str:
        return player_of(side.model, side.scenario, Level.SYSTEM)

    calls = tuple(call_view(judgement, n, call) for n, call in enumerate(judgement.calls, start=1))
    return JudgementView(judgement, name(judgement.a), name(judgement.b),
                         OUTCOMES.get(judgement.outcome.value, judgement.outcome.value), calls)
