"""`offline/<name>`: judges that need no network, no key and no SDK.

`offline/rubric` scores both responses with the structural criteria of the Comparative-QA
rubric (`leaderboard.rubric.score_structure`) and prefers the higher total; equal totals tie.
It is what `joust up` judges with when no provider key is configured, so a first run shows a
live board. It reads how an answer is built, not whether it is right: a cheap pre-filter, not
an LLM judge (its agreement with human experts: bench/offline_agreement.py).

It is deterministic and order-free (swapping the responses swaps the verdict), so the
both-orders policy never flags it inconsistent. Its `raw` reply is a JSON record of both
scores, so every verdict stays traceable to the points that produced it.

Criteria sets (`workers.criteria`): `overall` through `compare`; `compqa` through
`score_compqa`, one answer at a time, naming the rubric criteria its rules cannot score
(C8, C9, C11, C12, C14, and C10 without object names); `dimensions` is refused (a
`PermanentJudgeError`): it has no free-form `complete`, and rules about structure say nothing
about accuracy or clarity.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable

from leaderboard.rubric import (
    MAX_POINTS,
    NAMES,
    RULES_VERSION,
    RubricScore,
    objects_from_question,
    score_structure,
)
from leaderboard.types import Winner
from service.config import OFFLINE_JUDGES, Settings
from workers.criteria.base import RubricReply
from workers.errors import PermanentJudgeError
from workers.judge import JudgeReply

Scorer = Callable[[str, "str | None", "str | None"], RubricScore]
"""(answer, object1, object2) → its score."""

SCORERS: dict[str, tuple[Scorer, str]] = {"rubric": (score_structure, RULES_VERSION)}
"""offline judge name → (scorer, version of its rules); `service.config.OFFLINE_JUDGES` names
them for the service, which refuses any other (a test checks the two agree)."""


class OfflineJudge:
    """A `Judge` that scores each response with a local rule set and compares the totals."""

    offline = True  # makes no provider call: no rate limit applies

    def __init__(self, name: str, settings: Settings | None = None) -> None:
        if name not in SCORERS:
            raise PermanentJudgeError(f"unknown offline judge {name!r} (known: {', '.join(OFFLINE_JUDGES)})")
        self.name = name
        self._score, self.version = SCORERS[name]

    def __repr__(self) -> str:
        return f"OfflineJudge(name={self.name!r})"

    async def compare(self, question: str, first: str, second: str) -> JudgeReply:
        """Judge `first` (Response A) against `second` (Response B); zero tokens, never raises
        a provider error."""
        started = time.perf_counter()
        objects = objects_from_question(question) or (None, None)
        a, b = self._score(first, *objects), self._score(second, *objects)
        winner = Winner.A if a.total > b.total else Winner.B if b.total > a.total else Winner.TIE
        raw = json.dumps(
            {"judge": f"offline/{self.name}", "rules": self.version, "objects": [o for o in objects if o],
             "A": _record(a), "B": _record(b), "winner": winner.value},
            ensure_ascii=False,
        )  # fmt: skip
        return JudgeReply(
            winner=winner,
            reason=explain(a, b),
            raw=raw,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )


    async def score_compqa(self, question: str, answer: str) -> RubricReply:
        """The Comparative-QA rubric score of one answer, on the criteria the rules cover;
        `unscored` names the others. Zero tokens, never raises a provider error."""
        started = time.perf_counter()
        objects = objects_from_question(question) or (None, None)
        score = self._score(answer, *objects)
        unscored = tuple(n for n in MAX_POINTS if n not in score.points)
        raw = json.dumps(
            {"judge": f"offline/{self.name}", "rules": self.version, "objects": [o for o in objects if o],
             **_record(score), "unscored": [f"C{n}" for n in unscored]},
            ensure_ascii=False,
        )  # fmt: skip
        return RubricReply(
            points=dict(score.points), max_total=score.max_total, raw=raw, unscored=unscored,
            notes=dict(score.notes), latency_ms=(time.perf_counter() - started) * 1000.0,
        )  # fmt: skip


def explain(a: RubricScore, b: RubricScore) -> str:
    """One sentence naming the totals and the criteria on which each side scored higher."""
    head = f"Structural rubric: A {a.total}/{a.max_total}, B {b.total}/{b.max_total}"
    better_a = [n for n in a.differing(b) if a.points[n] > b.points.get(n, 0)]
    better_b = [n for n in a.differing(b) if b.points.get(n, 0) > a.points[n]]
    parts = [f"{side} higher on {_names(ns)}" for side, ns in (("A", better_a), ("B", better_b)) if ns]
    return f"{head}; {'; '.join(parts)}." if parts else f"{head}; identical on every criterion."


def _names(numbers: list[int]) -> str:
    return ", ".join(f"C{n} ({NAMES[n]})" for n in numbers)


def _record(score: RubricScore) -> dict[str, object]:
    return {
        "total": score.total,
        "max": score.max_total,
        "points": {f"C{n}": p for n, p in score.points.items()},
        "notes": {f"C{n}": note for n, note in score.notes.items()},
    }
