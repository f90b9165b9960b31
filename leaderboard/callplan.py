"""What judging a planned run asks of the judge, criteria set by criteria set: calls and tokens,
counted before anything is paid.

Pure: the service (`service.usecases.tournaments.dry_run`) plans the pairs, drops those a stored
judgement answers, looks up the stored single scores and the submissions' sources, and hands
them here; it prices the result with `leaderboard.pricing`. Pairs are taken in plan order, the
order a worker judges them in, and each is counted as the worker would spend on it:

- `overall`, `dimensions`: 2 calls per pair for order "both", 1 for "single", each showing
  the question and both outputs.
- `compqa`: no pairwise call at all. Each submission is scored alone, once per judge, and the
  score reused by all its matches: one call (the question and that one answer) per submission
  of the pairs that has no stored score of the current version; a submission in ten pairs is
  scored once, and a scored one costs nothing.
- `factsim`: per pair, in plan order: a pair whose sides summarise different sources (or whose
  `metadata.sources` is malformed) fails without a call; otherwise each side without a stored
  FactSim for these sources costs one extraction of its summary, and each source text whose
  facts neither side's stored score holds costs one extraction. A source's facts travel with
  the scores of the submissions that used them, so a source is extracted again by a later pair
  none of whose sides has been scored yet (e.g. (1, 2) then (3, 4)), and never again once one
  side of every later pair holds it (round robin: once per question).

Not counted: the reminder re-ask of an unreadable reply, retries after provider errors, a match
that fails (factsim sources stating no fact: the next pair pays their extraction again), and
two workers scoring one submission at the same moment (both pay; one worker never does). Token
counts are chars/4 (`pricing.estimate_tokens`) plus each prompt's own size
(`templates.PROMPT_OVERHEAD_TOKENS`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .keys import content_hash
from .pricing import estimate_call, estimate_tokens
from .templates import (
    COMPQA_TEMPLATE_VERSION,
    ESTIMATED_OUTPUT_TOKENS,
    FACTS_FRAME_TOKENS,
    FACTS_MAX_OUTPUT_TOKENS,
    FACTSIM_TEMPLATE_VERSION,
    PROMPT_OVERHEAD_TOKENS,
    factsim_score_version,
)
from .types import OrderPolicy, Submission

__all__ = ["CallPlan", "Stored", "StoredScore", "count_calls", "facts_output_tokens", "stored_score"]

Todo = Sequence[tuple[Submission, Submission]]
"""The pairs no stored judgement answers, in plan order, as (a, b)."""


@dataclass(frozen=True)
class CallPlan:
    """Calls a run will make and their estimated tokens."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def plus(self, input_tokens: int, output_tokens: int, calls: int = 1) -> CallPlan:
        return CallPlan(self.calls + calls, self.input_tokens + input_tokens, self.output_tokens + output_tokens)


@dataclass(frozen=True)
class StoredScore:
    """What counting needs of a submission's stored single score: the version it is valid for
    (`detail["template_version"]`) and, for factsim, the hashes of the source texts whose facts
    it holds (extracted with the current fact prompt)."""

    version: str
    source_hashes: frozenset[str] = frozenset()


def stored_score(detail: Mapping[str, object]) -> StoredScore:
    """A score book entry's `detail` as counting sees it (see `workers.criteria.factsim` for the
    detail a FactSim keeps: `sources` [{"hash", "facts"}], `facts_version`)."""
    sources = detail.get("sources") if detail.get("facts_version") == FACTSIM_TEMPLATE_VERSION else None
    hashes = [s["hash"] for s in sources if isinstance(s, dict) and "hash" in s] if isinstance(sources, list) else []
    return StoredScore(str(detail.get("template_version", "")), frozenset(str(h) for h in hashes))


def facts_output_tokens(text: str) -> int:
    """Estimated tokens of the fact list extracted from `text`: the facts restate the text, a
    quarter longer for the JSON around each, plus `FACTS_FRAME_TOKENS`; at most
    `FACTS_MAX_OUTPUT_TOKENS`."""
    return min(FACTS_MAX_OUTPUT_TOKENS, estimate_tokens(text) * 5 // 4 + FACTS_FRAME_TOKENS)


@dataclass(frozen=True)
class Stored:
    """What is stored already, as counting needs it. `scores`: submission id → its stored
    score under this judge and criteria (compqa, factsim); `compqa_version`: the version a
    compqa score must have to be reused (`templates.compqa_score_version`); `sources`:
    submission id → the texts it summarises (`factsim.summary_sources`; None when its
    metadata cannot say)."""

    scores: Mapping[int, StoredScore] = field(default_factory=dict)
    compqa_version: str = COMPQA_TEMPLATE_VERSION
    sources: Mapping[int, tuple[str, ...] | None] = field(default_factory=dict)


def count_calls(criteria: str, todo: Todo, order: OrderPolicy = OrderPolicy.BOTH, stored: Stored = Stored()) -> CallPlan:
    """The calls judging `todo` takes under `criteria` (see the module docstring); ValueError
    for a criteria set without a call plan or a prompt size."""
    count = _COUNTERS.get(criteria)
    if count is None or criteria not in PROMPT_OVERHEAD_TOKENS:
        raise ValueError(f"no call plan for criteria {criteria!r} (known: {sorted(_COUNTERS)})")
    return count(todo, PROMPT_OVERHEAD_TOKENS[criteria], order, stored)


def _pairwise(todo: Todo, overhead: int, order: OrderPolicy, _stored: Stored) -> CallPlan:
    per_pair = 2 if order is OrderPolicy.BOTH else 1
    plan = CallPlan()
    for a, b in todo:
        tokens_in, tokens_out = estimate_call(a.question, a.output, b.output, overhead, ESTIMATED_OUTPUT_TOKENS)
        plan = plan.plus(per_pair * tokens_in, per_pair * tokens_out, per_pair)
    return plan


def _compqa(todo: Todo, overhead: int, _order: OrderPolicy, stored: Stored) -> CallPlan:
    scored = {sid for sid, score in stored.scores.items() if score.version == stored.compqa_version}
    plan = CallPlan()
    for sub in (side for pair in todo for side in pair):
        if sub.id not in scored:
            scored.add(sub.id)
            plan = plan.plus(estimate_tokens(sub.question) + estimate_tokens(sub.output) + overhead,
                             ESTIMATED_OUTPUT_TOKENS)
    return plan


def _factsim(todo: Todo, overhead: int, _order: OrderPolicy, stored: Stored) -> CallPlan:
    versions = {sid: score.version for sid, score in stored.scores.items()}
    known = {sid: score.source_hashes for sid, score in stored.scores.items()}
    plan = CallPlan()

    def extract(plan: CallPlan, text: str) -> CallPlan:
        return plan.plus(estimate_tokens(text) + overhead, facts_output_tokens(text))

    for a, b in todo:
        texts = stored.sources.get(a.id)
        if texts is None or texts != stored.sources.get(b.id):
            continue  # the match fails before any call
        version = factsim_score_version(texts)
        sides = [sub for sub in (a, b) if versions.get(sub.id) != version]
        if not sides:
            continue
        have = set(known.get(a.id, frozenset()) | known.get(b.id, frozenset()))
        for text in texts:
            if content_hash(text) not in have:
                have.add(content_hash(text))
                plan = extract(plan, text)
        for sub in sides:
            plan = extract(plan, sub.output)
            versions[sub.id] = version
            known[sub.id] = frozenset(content_hash(text) for text in texts)
    return plan


_COUNTERS: Mapping[str, Callable[[Todo, int, OrderPolicy, Stored], CallPlan]] = {
    "overall": _pairwise,
    "dimensions": _pairwise,
    "compqa": _compqa,
    "factsim": _factsim,
}
