"""Prompt template versions and sizes, where the service and the workers both reach them.

A judgement's key holds the version of the prompt it was judged with (`leaderboard.keys`), so
the service can tell which pairs are already judged (a dry run) without importing the workers.
`workers.prompts` re-exports the pairwise version from here: change the text of that prompt →
bump `PAIRWISE_TEMPLATE_VERSION` (and re-measure `PROMPT_OVERHEAD_TOKENS`; a test checks it).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from .keys import content_hash

PAIRWISE_TEMPLATE_VERSION = "pairwise-v1"
# The prompts of workers.criteria.dimensions and workers.criteria.compqa: bump on any change.
DIMENSIONS_TEMPLATE_VERSION = "dimensions-v1"
COMPQA_TEMPLATE_VERSION = "compqa-v1"
# workers.criteria.factsim: the fact-extraction prompt, and what turns facts into a score
# (encoder all-MiniLM-L6-v2, facts embedded as "subject | relation | object", threshold 0.75):
# bump on a change to any of them (a test pins the four together).
FACTSIM_TEMPLATE_VERSION = "factsim-v1"

# criteria set -> the version of the prompt that judges it
TEMPLATE_VERSIONS: Mapping[str, str] = MappingProxyType({
    "overall": PAIRWISE_TEMPLATE_VERSION,
    "dimensions": DIMENSIONS_TEMPLATE_VERSION,
    "compqa": COMPQA_TEMPLATE_VERSION,
    "factsim": FACTSIM_TEMPLATE_VERSION,
})

# criteria set -> estimated tokens of the prompt around the texts it shows (system prompt and user
# template, chars/4): what a dry run adds to each call's input. overall and dimensions show the
# question and both responses; compqa the question and one answer; factsim one text (a source or
# a summary). How many calls each set makes: `leaderboard.callplan`.
PROMPT_OVERHEAD_TOKENS: Mapping[str, int] = MappingProxyType(
    {"overall": 280, "dimensions": 455, "compqa": 1405, "factsim": 270}
)

# What a dry run assumes one call answers: a verdict is a one-sentence JSON object (a compqa
# score, a dictionary of 15 points, is about as long).
ESTIMATED_OUTPUT_TOKENS = 60
# A factsim reply lists the facts of its text in JSON: about a quarter longer than the text, plus
# the object around them; it stops at the judge's max_tokens (`JOUST_JUDGE_MAX_TOKENS`, default
# 512).
FACTS_FRAME_TOKENS = 10
FACTS_MAX_OUTPUT_TOKENS = 512


def template_version(criteria: str) -> str:
    """The prompt version that judges `criteria`; ValueError for an unknown criteria set."""
    try:
        return TEMPLATE_VERSIONS[criteria]
    except KeyError:
        raise ValueError(f"no prompt template for criteria {criteria!r} (known: {sorted(TEMPLATE_VERSIONS)})") from None


# What the pairwise (`overall`) prompt adds when it shows a reference answer or conversations
# (`workers.prompts.build_shown_prompt`): bump on a change to that text. The other criteria sets
# show neither (they read the question and the assistant turns), so their versions stay.
REFERENCE_SUFFIX = "+ref-v1"
TURNS_SUFFIX = "+turns-v1"
SHOWS_EXTRAS = frozenset({"overall"})


def shown_version(criteria: str, *, reference: bool = False, conversation: bool = False) -> str:
    """The prompt version that judges a pair under `criteria`, with a reference answer and/or a
    conversation on either side; a plain pair's is `template_version(criteria)`, as always."""
    version = template_version(criteria)
    if criteria not in SHOWS_EXTRAS:
        return version
    return version + (REFERENCE_SUFFIX if reference else "") + (TURNS_SUFFIX if conversation else "")


def version_variants(criteria: str) -> tuple[str, ...]:
    """Every version `shown_version` gives for `criteria`: what a judgement of a pair may hold."""
    return tuple(dict.fromkeys(shown_version(criteria, reference=r, conversation=c)
                               for r in (False, True) for c in (False, True)))


def compqa_score_version(rules: str | None = None) -> str:
    """The version a stored compqa score is valid for: the prompt's, or, for a judge that scores
    with rubric rules of its own (the offline judge, `leaderboard.rubric.RULES_VERSION`), the
    prompt's and the rules'."""
    return f"{COMPQA_TEMPLATE_VERSION}+{rules}" if rules else COMPQA_TEMPLATE_VERSION


def factsim_score_version(sources: Sequence[str]) -> str:
    """The version a stored FactSim is valid for: the template's, and which sources it covers."""
    return f"{FACTSIM_TEMPLATE_VERSION}+src:{content_hash(chr(31).join(sources))[:16]}"
