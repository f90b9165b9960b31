"""Criteria sets: what a judge is asked about a pair, one module per set, chosen through a dict.

`CRITERIA` maps a tournament spec's `criteria` to an async function

    judge(judge, ctx, policy, rng, *, scores) -> Judged(calls, outcome, extra)

that asks the judge what its criteria need and returns the calls to store, the pair's outcome
relative to the match's a, and extras (`workers.criteria.base`). The job (`workers.jobs`)
keys, stores and resolves the judgement the same way whatever the set.

- `overall`: the pairwise prompt of DESIGN.md, through `Judge.compare` (every judge).
- `dimensions`: five A/B/TIE verdicts per call, consistency per dimension (chat judges).
- `compqa`: the Comparative-QA rubric, an absolute score per submission kept in the score
  book and reused across matches; higher total wins (chat judges, and offline judges with a
  rubric scorer of their own).
- `factsim`: FactSim of a summary against its sources (fact tuples extracted by the judge,
  embedded offline with all-MiniLM-L6-v2), an absolute score per submission kept in the score
  book; higher FactSim wins (chat judges; needs the `joust[factsim]` extra on the worker).

A set other than `overall` needs the judge's free-form call (`complete(system, messages)`);
a judge without one fails the match with a `PermanentJudgeError` saying so.
"""
from __future__ import annotations

from ..errors import PermanentJudgeError
from . import compqa, dimensions, factsim, overall
from .base import CriteriaSet, Judged, RubricReply, ScoreBook

__all__ = ["CRITERIA", "CriteriaSet", "Judged", "RubricReply", "ScoreBook", "criteria_set"]

CRITERIA: dict[str, CriteriaSet] = {
    "overall": overall.judge,
    "dimensions": dimensions.judge,
    "compqa": compqa.judge,
    "factsim": factsim.judge,
}


def criteria_set(name: str) -> CriteriaSet:
    """The judging function of criteria set `name`; `PermanentJudgeError` for an unknown one."""
    found = CRITERIA.get(name)
    if found is None:
        raise PermanentJudgeError(f"unknown criteria set {name!r} (known: {', '.join(sorted(CRITERIA))})")
    return found
