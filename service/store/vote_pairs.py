"""The pair a voter sees next (the rule is `leaderboard.vote_pairs`'), and how many votes a voter cast.

What one choice reads, in one snapshot, and why it stays cheap with many submissions: the number
of answers per question (one grouped pass over the submissions), every human vote with its
question (human votes are people's clicks: few next to LLM verdicts), then, for the few questions
sampled at the lowest level only, their answers and which of their pairs an LLM judge judged
(found by `ix_judgements_a`, on (a_id, b_id)). No pair of an unsampled question is ever listed.
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from leaderboard.judges import HUMANS
from leaderboard.types import Submission
from leaderboard.vote_pairs import (
    CandidatePair,
    Pair,
    QuestionTally,
    candidate_pairs,
    choose_pair,
    pair_of,
    sample_questions,
    sides,
)

from . import schema as s
from .base import Database, submission_of
from .submissions import PLACEHOLDER_HASH
from .views import judge_is

SAMPLE = 8  # questions whose pairs are listed per choice: enough to find a judged pair among ties
CHUNK = 500  # ids per IN (...) clause: well under every backend's bound-parameter limit


@dataclass(frozen=True)
class VotePair:
    """Two answers to one question as the voter sees them, `left` and `right`, with the human
    votes the pair had and whether an LLM judge judged it."""

    question_id: str
    question: str
    left: Submission
    right: Submission
    votes: int
    judged: bool


class VotePairs(Database):
    """The next pair to show a voter, and a voter's count of votes."""

    def next_vote_pair(self, judge: str, rng: random.Random, *, skip: Pair | None = None,
                       sample: int = SAMPLE) -> VotePair | None:
        """The pair `judge` (a `human/<voter>`) should vote on next, sides in a random order, by
        the rule of `leaderboard.vote_pairs`; `skip`, a pair just skipped, is not shown again
        now. None when nothing is left to vote on."""
        with self._read() as conn:
            tallies = self._tallies(conn, judge, skip)
            chosen = sample_questions(list(tallies.values()), rng, sample)
            if not chosen:
                return None
            answers = self._answers(conn, chosen)
            judged = self._judged(conn, [sub.id for subs in answers.values() for sub in subs])
        candidates: list[CandidatePair] = []
        for question_id in chosen:
            candidates += candidate_pairs([sub.id for sub in answers[question_id]], tallies[question_id], judged)
        picked = choose_pair(candidates, rng)
        if picked is None:
            return None
        by_id = {sub.id: sub for subs in answers.values() for sub in subs}
        left, right = (by_id[i] for i in sides(picked.pair, rng))
        return VotePair(left.question_id, left.question, left, right, picked.votes, picked.judged)

    def votes_cast(self, judge: str) -> int:
        """How many votes `judge` filed (its index only)."""
        j = s.judgements
        with self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(j).where(j.c.judge == judge)).scalar_one())

    def _tallies(self, conn: Connection, judge: str, skip: Pair | None) -> dict[str, QuestionTally]:
        """Every question with two answers or more, as counts (`QuestionTally`)."""
        sub, j = s.submissions, s.judgements
        sa, sb = s.submissions.alias("sa"), s.submissions.alias("sb")
        counts = conn.execute(
            select(sub.c.question_id, func.count().label("n"))
            .where(sub.c.output_hash != PLACEHOLDER_HASH)
            .group_by(sub.c.question_id)
            .having(func.count() >= 2)
        ).all()
        votes: dict[str, Counter[Pair]] = defaultdict(Counter)
        excluded: dict[str, set[Pair]] = defaultdict(set)
        rows = conn.execute(
            select(j.c.judge, j.c.a_id, j.c.b_id, sa.c.question_id)
            .join(sa, sa.c.id == j.c.a_id)
            .join(sb, sb.c.id == j.c.b_id)
            .where(judge_is(j.c.judge, HUMANS), sa.c.output_hash != PLACEHOLDER_HASH,
                   sb.c.output_hash != PLACEHOLDER_HASH, sa.c.question_id == sb.c.question_id)
        )
        for r in rows:
            pair = pair_of(r.a_id, r.b_id)
            votes[r.question_id][pair] += 1
            if r.judge == judge:
                excluded[r.question_id].add(pair)
        if skip is not None:
            found = conn.execute(select(sub.c.question_id).where(sub.c.id.in_(skip))).scalars().all()
            if len(found) == 2 and found[0] == found[1]:
                excluded[found[0]].add(pair_of(*skip))
        return {r.question_id: QuestionTally(r.question_id, int(r.n), dict(votes[r.question_id]),
                                             frozenset(excluded[r.question_id])) for r in counts}

    def _answers(self, conn: Connection, questions: list[str]) -> dict[str, list[Submission]]:
        """The answers (placeholders left out) of each question named."""
        sub = s.submissions
        found: dict[str, list[Submission]] = {q: [] for q in questions}
        query = select(sub).where(sub.c.question_id.in_(questions), sub.c.output_hash != PLACEHOLDER_HASH)
        for r in conn.execute(query):
            found[r.question_id].append(submission_of(r))
        return found

    def _judged(self, conn: Connection, ids: list[int]) -> set[Pair]:
        """The pairs among `ids` that a judge other than a human judged."""
        j = s.judgements
        wanted = set(ids)
        judged: set[Pair] = set()
        ordered = sorted(wanted)
        for start in range(0, len(ordered), CHUNK):
            query = (select(j.c.a_id, j.c.b_id).distinct()
                     .where(j.c.a_id.in_(ordered[start:start + CHUNK]), ~judge_is(j.c.judge, HUMANS)))
            judged.update(pair_of(r.a_id, r.b_id) for r in conn.execute(query) if r.b_id in wanted)
        return judged
