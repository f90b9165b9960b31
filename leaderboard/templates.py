"""Prompt template versions and sizes, where the service and the workers both reach them.

A judgement's key holds the version of the prompt it was judged with (`leaderboard.keys`), so
the service can tell which pairs are already judged (a dry run) without importing the workers.
`workers.prompts` re-exports the pairwise version from here: change the text of that prompt →
bump `PAIRWISE_TEMPLATE_VERSION` (and re-measure `PROMPT_OVERHEAD_TOKENS`; a test checks it).
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

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

# criteria set -> estimated tokens of the prompt around the question and the two responses
# (system prompt and user template, chars/4): what a dry run adds to each call's input.
# (compqa and factsim show one text per call, each submission once, and factsim each source once
# more: the pairwise estimate overcounts them.)
PROMPT_OVERHEAD_TOKENS: Mapping[str, int] = MappingProxyType(
    {"overall": 280, "dimensions": 455, "compqa": 1405, "factsim": 270}
)

# What a dry run assumes one call answers: a verdict is a one-sentence JSON object.
ESTIMATED_OUTPUT_TOKENS = 60


def template_version(criteria: str) -> str:
    """The prompt version that judges `criteria`; ValueError for an unknown criteria set."""
    try:
        return TEMPLATE_VERSIONS[criteria]
    except KeyError:
        raise ValueError(f"no prompt template for criteria {criteria!r} (known: {sorted(TEMPLATE_VERSIONS)})") from None
