"""How one pair is keyed from what its judge is shown: the question, both sides (an output or a
whole conversation) and the question's reference answer, when it has one.

The worker (which stores under the key) and the dry run (which looks keys up) both key pairs
here, so they never disagree. A plain pair (no reference, no conversation) keeps the version and
key it always had, so judgements stored before references and conversations stay valid.
"""
from __future__ import annotations

from dataclasses import dataclass

from .keys import answering_keys, judgement_key
from .templates import shown_version
from .types import OrderPolicy, Submission


@dataclass(frozen=True)
class PairKeys:
    """A pair's judgement key, the keys whose judgement answers it (best first), and the version
    of the prompt it is judged with."""

    key: str
    answering: tuple[str, ...]
    version: str


def pair_keys(judge: str, criteria: str, order: OrderPolicy | str, a: Submission, b: Submission,
              reference: str | None = None) -> PairKeys:
    """How the pair (a, b) is keyed under this judge, criteria set and order policy."""
    conversation = a.turns is not None or b.turns is not None
    version = shown_version(criteria, reference=reference is not None, conversation=conversation)
    texts = (judge, version, criteria, a.question, a.judged_text, b.judged_text)
    return PairKeys(judgement_key(*texts, order, reference), answering_keys(*texts, order, reference), version)
