"""The store's rows of judgements, submissions and scores as typed values, not dicts.

Upper layers read fields by name, so a field the store stops giving fails mypy and the first
access instead of surfacing as a KeyError or a silent None far away. Each value is built from a
SQLAlchemy row here (`of`), the one place that decodes its JSON columns; `as_json` gives the
API's shape of the ones a route serves (the same keys, in the same order, as the store's dicts
gave). Only the standard library and `leaderboard` are imported: mypy checks this module with
--strict's flags (pyproject.toml).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from leaderboard.conversation import as_dicts, from_canonical
from leaderboard.types import Submission


@dataclass(frozen=True)
class JudgementSide:
    """One side of a judgement as shown: the submission, its output's length and, when asked
    for, the output itself (None: not asked, and then absent from the JSON)."""

    id: int
    model: str
    scenario: str
    output_chars: int
    output: str | None = None

    @classmethod
    def of(cls, sub: Submission) -> JudgementSide:
        return cls(id=sub.id, model=sub.model, scenario=sub.scenario, output_chars=len(sub.output))

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"id": self.id, "model": self.model, "scenario": self.scenario,
                                 "output_chars": self.output_chars}
        if self.output is not None:
            shown["output"] = self.output
        return shown


@dataclass(frozen=True)
class JudgementDetail:
    """A judgement with its question and both sides (`GET /api/judgements/{id}`); `outcome` is
    for a ("A", "B" or "TIE"), `created_by` a vote's API key, `analysis` the tie analysis."""

    id: int
    key: str
    judge: str
    criteria: str
    template_version: str
    question_id: str
    question: str
    a: JudgementSide
    b: JudgementSide
    outcome: str
    consistent: bool
    calls: list[dict[str, Any]]
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    created_at: float
    match_id: int | None
    created_by: str | None
    analysis: dict[str, Any] | None

    @classmethod
    def of(cls, row: Any, a: Submission, b: Submission) -> JudgementDetail:
        """From a row of `judgements` and the two submissions it judged, a then b."""
        return cls(
            id=row.id,
            key=row.key,
            judge=row.judge,
            criteria=row.criteria,
            template_version=row.template_version,
            question_id=a.question_id,
            question=a.question,
            a=JudgementSide.of(a),
            b=JudgementSide.of(b),
            outcome=row.outcome,
            consistent=bool(row.consistent),
            calls=json.loads(row.calls),
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            cost_usd=row.cost_usd,
            created_at=row.created_at,
            match_id=row.match_id,
            created_by=row.created_by,
            analysis=json.loads(row.analysis) if row.analysis else None,
        )

    def with_outputs(self, a: Submission, b: Submission) -> JudgementDetail:
        """The same judgement showing both output texts (`?outputs=true`)."""
        return replace(self, a=replace(self.a, output=a.output), b=replace(self.b, output=b.output))

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": self.key,
            "judge": self.judge,
            "criteria": self.criteria,
            "template_version": self.template_version,
            "question_id": self.question_id,
            "question": self.question,
            "a": self.a.as_json(),
            "b": self.b.as_json(),
            "outcome": self.outcome,
            "consistent": self.consistent,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "created_at": self.created_at,
            "match_id": self.match_id,
            "created_by": self.created_by,
            "analysis": self.analysis,
        }


@dataclass(frozen=True)
class StoredJudgement:
    """A judgement as a worker reuses it (`find_judgement`): its verdict, oriented by `a_hash`
    (the content of the side it calls a), and its calls; never served as it is."""

    id: int
    key: str
    judge: str
    criteria: str
    template_version: str
    a_id: int
    b_id: int
    a_hash: str
    outcome: str
    consistent: bool
    calls: list[dict[str, Any]]
    cost_usd: float | None
    match_id: int | None

    @classmethod
    def of(cls, row: Any) -> StoredJudgement:
        return cls(
            id=row.id,
            key=row.key,
            judge=row.judge,
            criteria=row.criteria,
            template_version=row.template_version,
            a_id=row.a_id,
            b_id=row.b_id,
            a_hash=row.a_hash,
            outcome=row.outcome,
            consistent=bool(row.consistent),
            calls=json.loads(row.calls),
            cost_usd=row.cost_usd,
            match_id=row.match_id,
        )


@dataclass(frozen=True)
class StoredSubmission:
    """A submission as the API shows it (`GET /api/submissions/{id}`): a conversation's
    `output` is its turns, as sent; `created_by` the API key that stored it."""

    id: int
    question_id: str
    question: str
    model: str
    scenario: str
    output: str | list[dict[str, str]]
    reference: str | None
    metadata: dict[str, Any]
    created_at: float
    created_by: str | None

    @classmethod
    def of(cls, row: Any) -> StoredSubmission:
        """From a row of `submissions`."""
        return cls(
            id=row.id,
            question_id=row.question_id,
            question=row.question,
            model=row.model,
            scenario=row.scenario,
            output=row.output if row.turns is None else as_dicts(from_canonical(row.turns)),
            reference=row.reference,
            metadata=json.loads(row.metadata),
            created_at=row.created_at,
            created_by=row.created_by,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question_id": self.question_id,
            "question": self.question,
            "model": self.model,
            "scenario": self.scenario,
            "output": self.output,
            "reference": self.reference,
            "metadata": self.metadata,
            "created_at": self.created_at,
            "created_by": self.created_by,
        }


@dataclass(frozen=True)
class KeptScore:
    """One submission's absolute score from the score book: the total, what the judge said
    (`detail`, with its `template_version`), and whether this call stored it (`created`)."""

    total: float
    detail: dict[str, Any]
    created: bool = False

    @classmethod
    def of(cls, row: Any) -> KeptScore:
        """From a row of `scores`, as stored before this call."""
        return cls(total=float(row.total), detail=json.loads(row.detail or "{}"))
