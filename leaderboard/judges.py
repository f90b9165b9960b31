"""Whose verdicts a board holds: one judge, named or chosen by a fixed rule, never a pool.

Two judges disagree in ways a fit cannot see (one prefers long answers, one the answer shown
first), so a board that pooled them would rank by a judge nobody chose. A board holds one judge's
verdicts; human votes are judges too (`human/<voter>`), and all human voters together are the
one pool allowed (`human`): humans with humans, never humans with an LLM.

The rule, where no judge is named (`choose_judge`):
1. among judges other than humans, the judge of the most recently created tournament with a
   verdict on the board (an import is a tournament too);
2. failing a tournament to go by, the judge with the most verdicts (then by name);
3. with only human votes, every human voter pooled (`human`);
4. with no verdicts at all, no judge (an empty board).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from .judge_health import HUMAN_PREFIX

HUMANS = "human"
"""The judge name of the pooled board of every human voter (`human/...`)."""


def is_human(judge: str) -> bool:
    """A human voter (`human/<voter>`), or all of them (`human`)."""
    return judge == HUMANS or judge.startswith(HUMAN_PREFIX)


@dataclass(frozen=True)
class JudgeSummary:
    """A judge's verdicts on a board's scope: how many, and the newest tournament they came in
    (its id: ids grow with creation; None when unknown)."""

    judge: str
    verdicts: int
    latest_tournament: int | None = None


class ChosenBy(str, Enum):
    """Why a board holds the judge it holds."""

    NAMED = "named"
    LATEST_TOURNAMENT = "latest tournament"
    MOST_VERDICTS = "most verdicts"
    HUMANS_ONLY = "only human votes"
    NO_VERDICTS = "no verdicts"


@dataclass(frozen=True)
class JudgeChoice:
    """The judge a board holds (None: there are no verdicts), why, and every judge with
    verdicts on its scope (the pooled `human` among them when any human voted), most first."""

    judge: str | None
    chosen_by: ChosenBy
    judges: tuple[JudgeSummary, ...]

    @property
    def others(self) -> list[JudgeSummary]:
        """The judges whose boards this one is not."""
        return [s for s in self.judges if s.judge != self.judge]


class UnknownJudge(LookupError):
    """A named judge has no verdicts on the board's scope; `known` lists those that do."""

    def __init__(self, judge: str, known: Iterable[str]) -> None:
        self.judge = judge
        self.known = list(known)
        listed = ", ".join(self.known) if self.known else "none"
        super().__init__(f"no verdicts from judge {judge!r} here; judges with verdicts: {listed}")


def merge(summaries: Mapping[str, JudgeSummary], more: Iterable[JudgeSummary]) -> dict[str, JudgeSummary]:
    """`summaries` plus newer ones of the same judges (verdicts added, the newest tournament kept)."""
    merged = dict(summaries)
    for new in more:
        old = merged.get(new.judge)
        if old is not None:
            tournaments = [t for t in (old.latest_tournament, new.latest_tournament) if t is not None]
            new = JudgeSummary(new.judge, old.verdicts + new.verdicts, max(tournaments, default=None))
        merged[new.judge] = new
    return merged


def with_humans_pooled(summaries: Iterable[JudgeSummary]) -> list[JudgeSummary]:
    """Judges with verdicts, most verdicts first (then by name), plus the pooled `human` when
    any human voted."""
    found = [s for s in summaries if s.verdicts > 0 and s.judge != HUMANS]
    humans = [s for s in found if is_human(s.judge)]
    if humans:
        tournaments = [s.latest_tournament for s in humans if s.latest_tournament is not None]
        found.append(JudgeSummary(HUMANS, sum(s.verdicts for s in humans), max(tournaments, default=None)))
    return sorted(found, key=lambda s: (-s.verdicts, s.judge))


def choose_judge(summaries: Iterable[JudgeSummary], named: str | None = None) -> JudgeChoice:
    """The judge of a board: `named` when given (UnknownJudge if it has no verdicts here), else
    by the rule in this module's docstring."""
    judges = tuple(with_humans_pooled(summaries))
    if named is not None:
        if not any(s.judge == named for s in judges):
            raise UnknownJudge(named, [s.judge for s in judges])
        return JudgeChoice(named, ChosenBy.NAMED, judges)
    machines = [s for s in judges if not is_human(s.judge)]
    dated = [s for s in machines if s.latest_tournament is not None]
    if dated:
        latest = max(dated, key=lambda s: (s.latest_tournament, s.verdicts, s.judge))
        return JudgeChoice(latest.judge, ChosenBy.LATEST_TOURNAMENT, judges)
    if machines:
        return JudgeChoice(machines[0].judge, ChosenBy.MOST_VERDICTS, judges)
    if judges:
        return JudgeChoice(HUMANS, ChosenBy.HUMANS_ONLY, judges)
    return JudgeChoice(None, ChosenBy.NO_VERDICTS, judges)


def second_judges(choice: JudgeChoice, limit: int) -> list[str]:
    """The judges whose verdicts can check the board's (a gaming flag needs a second opinion):
    the others on its scope, most verdicts first, at most `limit`. Human voters count once,
    pooled (`human`), and not at all on a human's board: its votes are among theirs."""
    if choice.judge is None:
        return []
    own_human = is_human(choice.judge)
    found = [s.judge for s in choice.others
             if not (s.judge.startswith(HUMAN_PREFIX) or (own_human and is_human(s.judge)))]
    return found[:limit]
