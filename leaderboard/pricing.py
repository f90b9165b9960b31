"""What judging costs: a price table per judge, the cost of recorded calls, and estimates.

Prices are USD per million tokens (input, output), keyed by judge spec
(`"anthropic/claude-sonnet-4-5"`). A spec is looked up, in order: as written; without a
snapshot date (`-20250929`, `-2024-08-06`) or `-latest`, since a snapshot costs what its alias
costs; then as its provider's wildcard (`"offline/*"`, free). Anything else has no price: its
cost is None (null in the store and the API), never a guess. OpenAI-compatible servers
(`openai/<model>` on vLLM, Ollama) are unknown unless the model is an OpenAI one; give them a
price (0 for a local server) in the override file (`JOUST_PRICES`, see `parse_price_table`).

Token estimates use chars/4, a rough average of BPE tokenizers on English prose (code and
non-Latin scripts run higher): good enough to size a run before paying, never used to bill.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

CHARS_PER_TOKEN = 4
PRICES_AS_OF = "2026-03"  # the published list prices below; verify before relying on them
# Anthropic's Message Batches cost half the live price: the one rate a batch run is charged, reserved
# and estimated at (the workers' costs and budgets, a dry run's estimate).
BATCH_DISCOUNT = 0.5


def delivery_discount(batch: bool) -> float:
    """What a run's calls cost as a share of the list price: BATCH_DISCOUNT through a batch API."""
    return BATCH_DISCOUNT if batch else 1.0


@dataclass(frozen=True)
class Price:
    """USD per million input tokens and per million output tokens."""

    input_per_mtok: float
    output_per_mtok: float


def _table(prices: Mapping[str, tuple[float, float]]) -> Mapping[str, Price]:
    return MappingProxyType({spec: Price(*pair) for spec, pair in prices.items()})


DEFAULT_PRICES: Mapping[str, Price] = _table({
    # Anthropic, list prices of the Messages API (no batch or cache discounts).
    "anthropic/claude-opus-4-6": (5.0, 25.0),
    "anthropic/claude-opus-4-5": (5.0, 25.0),
    "anthropic/claude-opus-4-1": (15.0, 75.0),
    "anthropic/claude-opus-4-0": (15.0, 75.0),
    "anthropic/claude-opus-4": (15.0, 75.0),
    "anthropic/claude-sonnet-4-6": (3.0, 15.0),
    "anthropic/claude-sonnet-4-5": (3.0, 15.0),
    "anthropic/claude-sonnet-4-0": (3.0, 15.0),
    "anthropic/claude-sonnet-4": (3.0, 15.0),
    "anthropic/claude-3-7-sonnet": (3.0, 15.0),
    "anthropic/claude-3-5-sonnet": (3.0, 15.0),
    "anthropic/claude-haiku-4-5": (1.0, 5.0),
    "anthropic/claude-3-5-haiku": (0.8, 4.0),
    "anthropic/claude-3-opus": (15.0, 75.0),
    "anthropic/claude-3-haiku": (0.25, 1.25),
    # OpenAI, standard tier (reasoning tokens are billed, and reported, as output tokens).
    "openai/gpt-5": (1.25, 10.0),
    "openai/gpt-5-mini": (0.25, 2.0),
    "openai/gpt-5-nano": (0.05, 0.4),
    "openai/gpt-4.1": (2.0, 8.0),
    "openai/gpt-4.1-mini": (0.4, 1.6),
    "openai/gpt-4.1-nano": (0.1, 0.4),
    "openai/gpt-4o": (2.5, 10.0),
    "openai/gpt-4o-mini": (0.15, 0.6),
    "openai/o3": (2.0, 8.0),
    "openai/o3-mini": (1.1, 4.4),
    "openai/o4-mini": (1.1, 4.4),
    "openai/gpt-4-turbo": (10.0, 30.0),
    "openai/gpt-3.5-turbo": (0.5, 1.5),
    # Judges that run here cost nothing.
    "offline/*": (0.0, 0.0),
})

_SNAPSHOT = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def price_of(judge: str, table: Mapping[str, Price]) -> Price | None:
    """The price of `judge` in `table` (see the module docstring for the lookup), or None."""
    for candidate in (judge, _SNAPSHOT.sub("", judge)):
        if candidate in table:
            return table[candidate]
    provider, slash, _ = judge.partition("/")
    return table.get(f"{provider}/*") if slash else None


def cost_usd(judge: str, input_tokens: int, output_tokens: int, table: Mapping[str, Price]) -> float | None:
    """What `judge` charges for these tokens, in USD; None when `table` has no price for it."""
    price = price_of(judge, table)
    if price is None:
        return None
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1_000_000


def total_cost(costs: Sequence[float | None]) -> float | None:
    """The sum of several costs; None when any of them is unknown."""
    if any(c is None for c in costs):
        return None
    return float(sum(c for c in costs if c is not None))


def priced_calls(
    calls: Sequence[Mapping[str, Any]], judge: str, table: Mapping[str, Price], discount: float = 1.0
) -> tuple[list[dict[str, Any]], float | None]:
    """Call records (with `input_tokens`, `output_tokens`) each given its `cost_usd` (the list
    price times `discount`: 0.5 for calls made through a batch API), and their total (None when
    the judge has no price)."""
    priced = []
    for call in calls:
        cost = cost_usd(judge, int(call.get("input_tokens") or 0), int(call.get("output_tokens") or 0), table)
        priced.append({**call, "cost_usd": None if cost is None else cost * discount})
    return priced, total_cost([call["cost_usd"] for call in priced])


def estimate_tokens(text: str) -> int:
    """A token count for `text` before any tokenizer sees it: ceil(chars / 4)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate_call(
    question: str, a: str, b: str, prompt_overhead_tokens: int, max_output_tokens: int
) -> tuple[int, int]:
    """(input, output) tokens of one pairwise call: the question, both outputs and the prompt's
    own text in; at most `max_output_tokens` out (a verdict is a short JSON object)."""
    return estimate_tokens(question) + estimate_tokens(a) + estimate_tokens(b) + prompt_overhead_tokens, max_output_tokens


def parse_price_table(data: object) -> dict[str, Price]:
    """Read a price override: `{"<provider>/<model>" or "<provider>/*": {"input": USD per
    million input tokens, "output": USD per million output tokens}}`.

    Raises ValueError naming the entry at fault.
    """
    if not isinstance(data, dict):
        raise ValueError('must be a JSON object like {"openai/llama3": {"input": 0, "output": 0}}')
    table: dict[str, Price] = {}
    for spec, entry in data.items():
        provider, slash, model = str(spec).partition("/")
        if not (provider and slash and model) or any(c.isspace() for c in spec):
            raise ValueError(f"{spec!r}: keys are judge specs like 'anthropic/<model>' or 'openai/*'")
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            raise ValueError(f"{spec!r}: give exactly {{\"input\": ..., \"output\": ...}} (USD per million tokens)")
        values = [entry["input"], entry["output"]]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                   for v in values):
            raise ValueError(f"{spec!r}: input and output must be non-negative numbers, got {values}")
        table[spec] = Price(float(values[0]), float(values[1]))
    return table
