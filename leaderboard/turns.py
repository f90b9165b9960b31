"""Which turn of a multi-turn question a submission answers, so boards and judge health can be
scoped to one turn (MT-Bench reports its two turns apart; pooled, a model strong on first turns
and weak on follow-ups looks average on both).

joust files a conversation's later turn as a question of its own, `<question_id>#turn<N>` (the
importers' `turn` column; `joust submit` splitting a conversation), and `joust submit` also
writes the turn into each row's metadata (`turn`: the only trace when the API hashed the question
id from the text). So a submission's turn is N from that suffix, else its metadata's `turn` (a
whole number, 1 or more), else 1: a single-turn question, and a conversation judged whole, are
turn 1. The store keeps it with each submission (schema 11); both sides of a judgement answer
one question, so a judgement's turn is its question's.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

TURN_MAX = 1_000_000  # the largest turn kept (the store's integers hold far more; no chat is this long)
_SUFFIX = re.compile(r"#turn([1-9][0-9]{0,6})\Z")


def turn_of(question_id: str, metadata: Mapping[str, Any] | None = None) -> int:
    """The turn a submission with this question id and metadata answers (module docstring)."""
    found = _SUFFIX.search(question_id)
    if found is not None and int(found.group(1)) <= TURN_MAX:
        return int(found.group(1))
    stated = (metadata or {}).get("turn")
    if isinstance(stated, int) and not isinstance(stated, bool) and 1 <= stated <= TURN_MAX:
        return stated
    return 1
