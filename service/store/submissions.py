"""Submissions: idempotent by (question_id, model, scenario), stored in atomic batches.

A tournament's field never holds a placeholder (`leaderboard.types.PLACEHOLDER_OUTPUT`, the
output of an imported battle's submission): there is nothing to show a judge.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.exc import IntegrityError

from leaderboard.conversation import canonical
from leaderboard.keys import content_hash
from leaderboard.turns import turn_of
from leaderboard.types import PLACEHOLDER_OUTPUT, Submission

from . import schema as s
from .api_keys import WRITER
from .base import Conflict, Database, NewSubmission, NotFound, ReferenceMismatch, submission_of
from .rows import StoredSubmission

CHUNK = 500  # ids per IN (...) clause: well under every backend's bound-parameter limit
PLACEHOLDER_HASH = content_hash(PLACEHOLDER_OUTPUT)


class Submissions(Database):
    """Submissions: idempotent by (question_id, model, scenario), stored in atomic batches."""

    def add_submissions(self, items: Sequence[NewSubmission]) -> list[tuple[int, bool]]:
        """Store new submissions; the same content again is a no-op returning the same id.

        Returns (id, created) per item, in order. Raises Conflict, storing nothing, when any
        item's (question_id, model, scenario) already holds a different question or output (a
        conversation's output is all its turns), and ReferenceMismatch when an item states a
        reference answer other than one its question's submissions (stored, or earlier in the
        batch) state: a question has one reference; a submission without one takes its question's.
        """
        now = self._clock()
        results: list[tuple[int, bool]] = []
        t = s.submissions
        try:
            with self._write() as conn:
                for item in items:
                    found = conn.execute(
                        select(t.c.id, t.c.question_hash, t.c.output_hash).where(
                            t.c.question_id == item.question_id,
                            t.c.model == item.model,
                            t.c.scenario == item.scenario,
                        )
                    ).first()
                    self._check_reference(conn, item)
                    turns = None if item.turns is None else canonical(item.turns)
                    q_hash, o_hash = content_hash(item.question), content_hash(turns or item.output)
                    if found is not None:
                        if (found.question_hash, found.output_hash) != (q_hash, o_hash):
                            what = "question" if found.question_hash != q_hash else "output"
                            raise Conflict(
                                f"submission {found.id} (question_id={item.question_id!r}, "
                                f"model={item.model!r}, scenario={item.scenario!r}) already "
                                f"holds a different {what}"
                            )
                        results.append((found.id, False))
                        continue
                    new_id = conn.execute(
                        t.insert().values(
                            question_id=item.question_id,
                            question=item.question,
                            model=item.model,
                            scenario=item.scenario,
                            output=item.output,
                            output_hash=o_hash,
                            question_hash=q_hash,
                            reference=item.reference,
                            turns=turns,
                            metadata=json.dumps(item.metadata, sort_keys=True),
                            turn=turn_of(item.question_id, item.metadata),
                            created_at=now,
                            created_by=WRITER.get(),
                        )
                    ).inserted_primary_key[0]
                    results.append((int(new_id), True))
        except IntegrityError as exc:  # a concurrent writer took the key first
            raise Conflict(f"a submission with the same key was written concurrently: {exc.orig}") from None
        return results

    def _check_reference(self, conn: Any, item: NewSubmission) -> None:
        """ReferenceMismatch when `item` states a reference its question's submissions contradict."""
        if item.reference is None:
            return
        t = s.submissions
        other = conn.execute(
            select(t.c.id, t.c.reference).where(t.c.question_id == item.question_id, t.c.reference.is_not(None),
                                                t.c.reference != item.reference).limit(1)
        ).first()
        if other is not None:
            raise ReferenceMismatch(
                f"question_id {item.question_id!r}: reference differs from the one submission {other.id} "
                "states (a question has one reference answer; send the same text, or none)"
            )

    def references(self, question_ids: Sequence[str], model: str | None = None,
                   scenario: str = "default") -> dict[str, str]:
        """Question id -> its reference answer, for the questions that have one: the output of
        `model` (under `scenario`) when given and it answered the question, else the reference
        its submissions state."""
        t = s.submissions
        wanted = sorted(set(question_ids))
        found: dict[str, str] = {}
        with self._read() as conn:
            for start in range(0, len(wanted), CHUNK):
                chunk = wanted[start:start + CHUNK]
                stated = select(t.c.question_id, t.c.reference).where(t.c.question_id.in_(chunk),
                                                                      t.c.reference.is_not(None))
                found.update((r.question_id, r.reference) for r in conn.execute(stated))
                if model is not None:
                    own = select(t.c.question_id, t.c.output).where(
                        t.c.question_id.in_(chunk), t.c.model == model, t.c.scenario == scenario,
                        t.c.output_hash != PLACEHOLDER_HASH)
                    found.update((r.question_id, r.output) for r in conn.execute(own))
        return found

    def list_submissions(
        self,
        *,
        model: str | None = None,
        scenario: str | None = None,
        question_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[StoredSubmission]:
        """Submissions in id order, optionally filtered."""
        t = s.submissions
        query = select(t).order_by(t.c.id).limit(limit).offset(offset)
        for column, value in ((t.c.model, model), (t.c.scenario, scenario), (t.c.question_id, question_id)):
            if value is not None:
                query = query.where(column == value)
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [StoredSubmission.of(r) for r in rows]

    def get_submission(self, submission_id: int) -> StoredSubmission:
        """One submission, as `list_submissions` shows it; raises NotFound."""
        t = s.submissions
        with self._read() as conn:
            row = conn.execute(select(t).where(t.c.id == submission_id)).first()
        if row is None:
            raise NotFound(f"no submission {submission_id}")
        return StoredSubmission.of(row)

    def select_submissions(
        self,
        *,
        models: Sequence[str] | None = None,
        scenarios: Sequence[str] | None = None,
        questions: Sequence[str] | None = None,
    ) -> list[Submission]:
        """The submissions a tournament's filters admit (None = no filter), in id order;
        placeholders never (see the module docstring)."""
        t = s.submissions
        query = select(t).where(t.c.output_hash != PLACEHOLDER_HASH).order_by(t.c.id)
        with self._read() as conn:
            return [submission_of(r) for r in conn.execute(_filtered(query, models, scenarios, questions))]

    def count_placeholders(
        self,
        *,
        models: Sequence[str] | None = None,
        scenarios: Sequence[str] | None = None,
        questions: Sequence[str] | None = None,
    ) -> int:
        """How many placeholders the filters would admit if they were judgeable: what a dry run
        reports as left out."""
        t = s.submissions
        query = select(func.count()).select_from(t).where(t.c.output_hash == PLACEHOLDER_HASH)
        with self._read() as conn:
            return int(conn.execute(_filtered(query, models, scenarios, questions)).scalar_one())

    def submission_metadata(self, ids: Sequence[int]) -> dict[int, dict]:
        """Submission id -> its metadata, for the ids that exist (500 ids a statement)."""
        t = s.submissions
        wanted = sorted(set(ids))
        found: dict[int, dict] = {}
        with self._read() as conn:
            for start in range(0, len(wanted), CHUNK):
                rows = conn.execute(select(t.c.id, t.c.metadata).where(t.c.id.in_(wanted[start:start + CHUNK])))
                found.update((r.id, json.loads(r.metadata or "{}")) for r in rows)
        return found


def _filtered(query: Select, models: Sequence[str] | None, scenarios: Sequence[str] | None,
              questions: Sequence[str] | None) -> Select:
    """`query` restricted to a tournament's filters (None = no filter)."""
    t = s.submissions
    for column, values in ((t.c.model, models), (t.c.scenario, scenarios), (t.c.question_id, questions)):
        if values is not None:
            query = query.where(column.in_(list(values)))
    return query
