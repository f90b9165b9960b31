"""Rubric scores as stored scores, and the pairwise verdicts they imply.

A rubric judge scores each answer alone; the leaderboard needs pairs. For every question, every
two scored answers of different systems become one judgement of that judge: the higher total
wins, equal totals tie. The verdict is derived, not observed, so `first` is None and the call
records both totals.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from itertools import combinations
from typing import Protocol

from leaderboard.types import Winner
from service.store.imports import ImportedJudgement, NewScore
from service.usecases.importers.common import row_key

CRITERIA = "compqa"


class Scored(Protocol):
    """What a score needs to know of the answer it scores (read-only)."""

    @property
    def file(self) -> str: ...
    @property
    def item(self) -> int: ...
    @property
    def question_id(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def scenario(self) -> str: ...


@dataclass(frozen=True)
class RubricScore:
    """One judge's rubric evaluation of one answer, from `source` at `line`."""

    judge: str
    summary: Scored
    criteria: dict[str, float]
    source: str
    line: int

    @property
    def total(self) -> float:
        return sum(self.criteria.values())

    @property
    def answer(self) -> tuple[str, int]:
        return self.summary.file, self.summary.item


def _by_answer(scores: list[RubricScore]) -> dict[tuple[str, tuple[str, int]], list[RubricScore]]:
    """Scores grouped by (judge, answer): an answer scored twice by one judge keeps both."""
    groups: dict[tuple[str, tuple[str, int]], list[RubricScore]] = {}
    for score in scores:
        groups.setdefault((score.judge, score.answer), []).append(score)
    return groups


def score_rows(
    scores: list[RubricScore], id_of: dict[tuple[str, int], int]
) -> tuple[list[NewScore], list[RubricScore]]:
    """One stored score per (answer, judge), with the first evaluation behind each (to name
    its line on a conflict); repeated evaluations (six summaries the human experts scored
    twice) are kept together and counted each by the statistics."""
    rows, origins = [], []
    for (judge, answer), group in _by_answer(scores).items():
        if len(group) == 1:
            one = group[0]
            detail = {"criteria": one.criteria, "source": one.source, "line": one.line}
        else:
            detail = {"evaluations": [{"total": g.total, "criteria": g.criteria, "source": g.source, "line": g.line}
                                      for g in group]}
        rows.append(NewScore(id_of[answer], judge, CRITERIA, statistics.fmean(g.total for g in group), detail))
        origins.append(group[0])
    return rows, origins


def rubric_judgements(
    scores: list[RubricScore], id_of: dict[tuple[str, int], int]
) -> dict[str, list[ImportedJudgement]]:
    """Per judge, the pairwise judgements its scores imply, questions in id order."""
    totals: dict[str, dict[str, dict[tuple[str, str], tuple[int, float]]]] = {}
    for (judge, answer), group in _by_answer(scores).items():
        s = group[0].summary
        per_question = totals.setdefault(judge, {}).setdefault(s.question_id, {})
        per_question[(s.model, s.scenario)] = (id_of[answer], statistics.fmean(g.total for g in group))
    out: dict[str, list[ImportedJudgement]] = {}
    for judge, questions in totals.items():
        rows = []
        for question_id in sorted(questions):
            systems = questions[question_id]
            for sys_a, sys_b in combinations(sorted(systems), 2):
                rows.append(_judgement(judge, question_id, sys_a, systems[sys_a], sys_b, systems[sys_b]))
        out[judge] = rows
    return out


def _judgement(
    judge: str, question_id: str, sys_a: tuple[str, str], a: tuple[int, float], sys_b: tuple[str, str],
    b: tuple[int, float],
) -> ImportedJudgement:
    (a_id, total_a), (b_id, total_b) = a, b
    outcome = Winner.A if total_a > total_b else Winner.B if total_b > total_a else Winner.TIE
    call = {"first": None, "winner": outcome.value, "reason": f"rubric total {total_a:g} vs {total_b:g}",
            "score_a": total_a, "score_b": total_b}
    key = row_key("rubric", judge, CRITERIA, question_id, *sys_a, *sys_b)
    return ImportedJudgement(key=key, a_id=a_id, b_id=b_id, outcome=outcome, calls=[call])
