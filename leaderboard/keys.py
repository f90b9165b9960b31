"""Content keys: what makes two submissions or two judgements "the same".

A judgement's key is order-free and covers everything that could change the verdict (the judge,
the prompt template's version, the criteria, the question and both outputs), so the same pair is
never paid for twice, across tournaments and nights, and changing any of those re-judges.
"""
from __future__ import annotations

import hashlib

from .types import Winner


def content_hash(text: str) -> str:
    """A stable hash of one text (sha256, hex)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_question_id(question: str) -> str:
    """The question id used when a submission names none: a stable hash of its text."""
    return "q-" + content_hash(question.strip())[:16]


def judgement_key(
    judge: str, template_version: str, criteria: str, question: str, output_a: str, output_b: str
) -> str:
    """The order-free key of one pair's judgement under one judge."""
    sides = sorted((content_hash(output_a), content_hash(output_b)))
    parts = [judge, template_version, criteria, content_hash(question), *sides]
    return content_hash("\x1f".join(parts))


def orient(winner: Winner, judged_a_hash: str, match_a_output: str) -> Winner:
    """Re-express a judgement's winner for a match whose sides may be the judgement's swapped.

    A judgement is stored relative to the side it first judged as `a`; a later match reusing it
    may hold the same two outputs the other way round.
    """
    return winner if content_hash(match_a_output) == judged_a_hash else winner.flipped()
