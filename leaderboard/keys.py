"""Content keys: what makes two submissions or two judgements "the same".

A judgement's key is order-free and covers everything that could change the verdict (the judge,
the prompt template's version, the criteria, the order policy, the question and both outputs), so
the same pair is never paid for twice, across tournaments and nights, and changing any of those
re-judges.

The order policy: a `both` key is the key as it was before the policy joined it (so judgements
stored then keep theirs); a `single` key adds "single". A `both` judgement answers a `single`
request too (its two orders hold more than one), never the reverse: `answering_keys` lists the
keys a request may take, best first. Criteria sets that score each output alone (`compqa`,
`factsim`) show the judge no order, so their key leaves the policy out.
"""
from __future__ import annotations

import hashlib

from .types import OrderPolicy, Winner

SCORED_ALONE = frozenset({"compqa", "factsim"})
"""Criteria sets that score each output on its own: the order policy changes nothing they ask."""


def content_hash(text: str) -> str:
    """A stable hash of one text (sha256, hex)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_question_id(question: str) -> str:
    """The question id used when a submission names none: a stable hash of its text."""
    return "q-" + content_hash(question.strip())[:16]


def keyed_order(criteria: str, order: OrderPolicy | str) -> OrderPolicy | None:
    """The order policy a judgement under `criteria` is keyed (and stored) by; None for the sets
    that score outputs alone, whose judgements answer either policy."""
    return None if criteria in SCORED_ALONE else OrderPolicy(order)


def answering_orders(order: OrderPolicy | str) -> tuple[OrderPolicy, ...]:
    """The order policies whose judgement answers a request made with `order`, best first:
    `both` answers both policies, `single` only itself."""
    if OrderPolicy(order) is OrderPolicy.BOTH:
        return (OrderPolicy.BOTH,)
    return (OrderPolicy.BOTH, OrderPolicy.SINGLE)


def judgement_key(
    judge: str, template_version: str, criteria: str, question: str, output_a: str, output_b: str,
    order: OrderPolicy | str = OrderPolicy.BOTH, reference: str | None = None,
) -> str:
    """The order-free key of one pair's judgement under one judge and order policy (and the
    question's reference answer, when it has one: a plain question keeps the key it always had)."""
    sides = sorted((content_hash(output_a), content_hash(output_b)))
    parts = [judge, template_version, criteria, content_hash(question), *sides]
    if keyed_order(criteria, order) is OrderPolicy.SINGLE:
        parts.append(OrderPolicy.SINGLE.value)
    if reference is not None:
        parts.append("ref:" + content_hash(reference))
    return content_hash("\x1f".join(parts))


def answering_keys(
    judge: str, template_version: str, criteria: str, question: str, output_a: str, output_b: str,
    order: OrderPolicy | str, reference: str | None = None,
) -> tuple[str, ...]:
    """The keys whose stored judgement answers a request made with `order`, best first (its own
    key last): a `single` request takes a `both` judgement, a `both` request never a `single` one."""
    keys = (judgement_key(judge, template_version, criteria, question, output_a, output_b, policy, reference)
            for policy in answering_orders(order))
    return tuple(dict.fromkeys(keys))


def orient(winner: Winner, judged_a_hash: str, match_a_output: str) -> Winner:
    """Re-express a judgement's winner for a match whose sides may be the judgement's swapped.

    A judgement is stored relative to the side it first judged as `a`; a later match reusing it
    may hold the same two outputs the other way round.
    """
    return winner if content_hash(match_a_output) == judged_a_hash else winner.flipped()
