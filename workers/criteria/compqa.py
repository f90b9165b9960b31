"""`compqa`: the Comparative-QA rubric as an absolute score per submission, turned into a verdict.

The judge sees the question and ONE answer (`workers.criteria.compqa_prompt`) and gives each of
the 15 criteria its points. A score belongs to the submission, not to the match: it is kept in
the score book (the store's `scores` table) under (submission, judge, "compqa") and reused by
every later match of that submission, so a submission is scored once however many opponents it
meets. The match's outcome is the higher total (equal totals tie), always `consistent`; the
order policy and the random order do not apply (nothing is shown side by side).

Each stored call records one side's score: `first` is the submission scored (the only answer
shown), `winner` is null (a score is not a verdict, so judge-health statistics skip it),
`score`, `points`, `reused` when the score came from the book (no tokens then), and the raw
reply. An offline judge with a rubric scorer of its own (`score_compqa`) scores without a
prompt and says which criteria it cannot score (`unscored`; its `max_total` is below 19).
"""
from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from leaderboard.rubric import MAX_POINTS
from leaderboard.templates import COMPQA_TEMPLATE_VERSION as TEMPLATE_VERSION  # noqa: F401  (re-exported)
from leaderboard.templates import compqa_score_version
from leaderboard.types import OrderPolicy, Outcome, Submission, Winner
from service.store import KeptScore, MatchContext

from ..judge import Judge, Send, ask_with_reminder, completer, gather_settled
from .base import Judged, RubricReply, ScoreBook
from .compqa_prompt import REMINDER, build_compqa_prompt, parse_points

CRITERIA = "compqa"
FULL_MARKS = sum(MAX_POINTS.values())  # 19
Scorer = Callable[[str, str], Awaitable[RubricReply]]
"""(question, answer) → its rubric score."""


@dataclass(frozen=True)
class ScoreCall:
    """One side's score as stored with the judgement (see the module docstring)."""

    first: int
    score: float
    points: Mapping[str, int]
    max_total: int
    raw: str = ""
    unscored: tuple[str, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    reminded: bool = False
    reused: bool = False

    def as_json(self) -> dict:
        return {
            "first": self.first, "winner": None, "score": self.score, "points": dict(self.points),
            "max_total": self.max_total, "unscored": list(self.unscored),
            "reason": f"compqa {self.score:g}/{self.max_total}", "raw": self.raw,
            "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
            "latency_ms": round(self.latency_ms, 1), "reminded": self.reminded, "reused": self.reused,
        }  # fmt: skip


async def score_with_prompt(send: Send, question: str, answer: str) -> RubricReply:
    """The rubric score of one answer from a chat judge, with the reminder re-ask once."""
    system, user = build_compqa_prompt(question, answer)
    got = await ask_with_reminder(send, system, user, parse_points, REMINDER, what="rubric score")
    return RubricReply(
        points=got.value, max_total=FULL_MARKS, raw=got.raw, input_tokens=got.input_tokens,
        output_tokens=got.output_tokens, latency_ms=got.latency_ms, reminded=got.reminded,
    )  # fmt: skip


def scorer_of(judge: Judge, spec: str) -> tuple[Scorer, str]:
    """How this judge scores one answer, and the version its scores are valid for: its own
    rubric rules when it has them (an offline judge), else the paper's prompt."""
    own = getattr(judge, "score_compqa", None)
    if own is not None:
        return own, compqa_score_version(getattr(judge, "version", None))
    send = completer(judge, spec, CRITERIA)
    return (lambda question, answer: score_with_prompt(send, question, answer)), compqa_score_version()


def score_detail(reply: RubricReply, version: str) -> dict:
    """What the score book keeps beside the total (criteria named "C1".."C15", as imports do)."""
    return {
        "criteria": {f"C{n}": p for n, p in sorted(reply.points.items())},
        "max_total": reply.max_total,
        "unscored": [f"C{n}" for n in reply.unscored],
        "notes": {f"C{n}": note for n, note in sorted(reply.notes.items())},
        "template_version": version,
        "raw": reply.raw,
        "reminded": reply.reminded,
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
    }


def winner_of(a: float, b: float) -> Winner:
    """The higher total wins; equal totals tie."""
    return Winner.A if a > b else Winner.B if b > a else Winner.TIE


async def judge(
    judge: Judge, ctx: MatchContext, policy: OrderPolicy, rng: random.Random, *, scores: ScoreBook
) -> Judged:
    """Score each side (or reuse its score), concurrently, and compare the totals."""
    spec = ctx.spec.judge
    scorer, version = scorer_of(judge, spec)

    async def side(sub: Submission) -> ScoreCall:
        # Matches in flight that share this submission wait for one score, then reuse it.
        async with scores.exclusive(f"score:{CRITERIA}:{spec}:{version}:{sub.id}"):
            stored = await scores.find_score(sub.id, spec, CRITERIA)
            if stored is not None and stored.detail.get("template_version") == version:
                return _call(sub.id, stored, reused=True)
            reply = await scorer(sub.question, sub.output)
            kept = await scores.keep_score(sub.id, spec, CRITERIA, reply.total, score_detail(reply, version))
        # Another worker may have kept its score first: use that one, but count what we paid.
        return _call(sub.id, kept, reused=not kept.created, paid=reply)

    a, b = await gather_settled(side(ctx.a), side(ctx.b))
    outcome = Outcome(winner=winner_of(a.score, b.score), consistent=True)
    return Judged([a, b], outcome, {"scores": {ctx.a.id: a.score, ctx.b.id: b.score}})


def _call(submission_id: int, stored: KeptScore, *, reused: bool, paid: RubricReply | None = None) -> ScoreCall:
    detail = stored.detail
    return ScoreCall(
        first=submission_id,
        score=float(stored.total),
        points=dict(detail.get("criteria", {})),
        max_total=int(detail.get("max_total", FULL_MARKS)),
        raw=str(detail.get("raw", "")),
        unscored=tuple(detail.get("unscored", ())),
        input_tokens=paid.input_tokens if paid else 0,
        output_tokens=paid.output_tokens if paid else 0,
        latency_ms=paid.latency_ms if paid else 0.0,
        reminded=paid.reminded if paid else False,
        reused=reused,
    )
