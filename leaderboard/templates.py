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

# criteria set -> the version of the prompt that judges it
TEMPLATE_VERSIONS: Mapping[str, str] = MappingProxyType({
    "overall": PAIRWISE_TEMPLATE_VERSION,
    "dimensions": DIMENSIONS_TEMPLATE_VERSION,
    "compqa": COMPQA_TEMPLATE_VERSION,
})

# criteria set -> estimated tokens of the prompt around the question and the two responses
# (system prompt and user template, chars/4): what a dry run adds to each call's input.
# (compqa shows one response per call, each submission once: the pairwise estimate overcounts it.)
PROMPT_OVERHEAD_TOKENS: Mapping[str, int] = MappingProxyType({"overall": 280, "dimensions": 455, "compqa": 1405})

# What a dry run assumes one call answers: a verdict is a one-sentence JSON object.
ESTIMATED_OUTPUT_TOKENS = 60


def template_version(criteria: str) -> str:
    """The prompt version that judges `criteria`; ValueError for an unknown criteria set."""
    try:
        return TEMPLATE_VERSIONS[criteria]
    except KeyError:
        raise ValueError(f"no prompt template for criteria {criteria!r} (known: {sorted(TEMPLATE_VERSIONS)})") from None
