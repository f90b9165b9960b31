"""The price table, call costs and token estimates (pure), the JOUST_PRICES override, and the
prompt version and size the service computes keys and estimates with."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import workers.prompts
from leaderboard import templates
from leaderboard.pricing import (
    DEFAULT_PRICES,
    Price,
    cost_usd,
    estimate_call,
    estimate_tokens,
    parse_price_table,
    price_of,
    priced_calls,
    total_cost,
)
from service.config import Settings, SettingsError


@pytest.mark.parametrize(
    ("judge", "price"),
    [
        ("anthropic/claude-sonnet-4-5", Price(3.0, 15.0)),
        ("anthropic/claude-sonnet-4-5-20250929", Price(3.0, 15.0)),  # a snapshot costs what its alias costs
        ("anthropic/claude-opus-4-6", Price(5.0, 25.0)),
        ("anthropic/claude-haiku-4-5", Price(1.0, 5.0)),
        ("anthropic/claude-3-5-haiku-latest", Price(0.8, 4.0)),
        ("openai/gpt-4o-mini-2024-07-18", Price(0.15, 0.6)),
        ("openai/gpt-4.1", Price(2.0, 8.0)),
        ("offline/rubric", Price(0.0, 0.0)),
        ("offline/anything-else", Price(0.0, 0.0)),
        ("openai/llama3", None),  # a local server: never guessed
        ("anthropic/claude-sonnet-4-5-extended", None),
        ("anthropic/fake-judge", None),
        ("nonsense", None),
    ],
)
def test_price_lookup(judge: str, price: Price | None) -> None:
    assert price_of(judge, DEFAULT_PRICES) == price


def test_cost_is_tokens_times_the_price_per_million() -> None:
    assert cost_usd("anthropic/claude-sonnet-4-5", 1_000_000, 0, DEFAULT_PRICES) == pytest.approx(3.0)
    assert cost_usd("anthropic/claude-sonnet-4-5", 2000, 100, DEFAULT_PRICES) == pytest.approx(0.0075)
    assert cost_usd("offline/rubric", 10**9, 10**9, DEFAULT_PRICES) == 0.0
    assert cost_usd("openai/llama3", 10, 10, DEFAULT_PRICES) is None
    assert cost_usd("openai/llama3", 10, 10, {"openai/*": Price(1.0, 2.0)}) == pytest.approx(30 / 1_000_000)


def test_an_unknown_cost_makes_the_total_unknown() -> None:
    assert total_cost([0.5, 0.25]) == 0.75
    assert total_cost([0.5, None]) is None
    assert total_cost([]) == 0.0
    calls = [{"first": 1, "input_tokens": 1000, "output_tokens": 20}, {"first": 2, "input_tokens": 500, "output_tokens": 0}]
    priced, total = priced_calls(calls, "anthropic/claude-haiku-4-5", DEFAULT_PRICES)
    assert [c["cost_usd"] for c in priced] == pytest.approx([0.0011, 0.0005])
    assert total == pytest.approx(0.0016) and priced[0]["first"] == 1 and "cost_usd" not in calls[0]
    priced, total = priced_calls(calls, "openai/llama3", DEFAULT_PRICES)
    assert total is None and [c["cost_usd"] for c in priced] == [None, None]


def test_token_estimates_are_chars_over_four() -> None:
    assert [estimate_tokens(t) for t in ("", "abc", "abcd", "abcde", "x" * 400)] == [0, 1, 1, 2, 100]
    assert estimate_call("q" * 40, "a" * 400, "b" * 4, 280, 60) == (10 + 100 + 1 + 280, 60)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ([1, 2], "must be a JSON object"),
        ({"claude": {"input": 1, "output": 2}}, "keys are judge specs"),
        ({"openai/x": {"input": 1}}, "give exactly"),
        ({"openai/x": {"input": 1, "output": 2, "cached": 0}}, "give exactly"),
        ({"openai/x": {"input": -1, "output": 2}}, "non-negative numbers"),
        ({"openai/x": {"input": "1", "output": 2}}, "non-negative numbers"),
        ({"openai/x": {"input": True, "output": 2}}, "non-negative numbers"),
    ],
)
def test_bad_price_tables_are_refused(data: object, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_price_table(data)


def test_joust_prices_overrides_and_adds(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"openai/llama3": {"input": 0, "output": 0},
                                "anthropic/claude-sonnet-4-5": {"input": 1.5, "output": 7.5}}))
    settings = Settings.from_env({"JOUST_PRICES": str(path)})
    table = settings.price_table()
    assert settings.prices_file == path
    assert price_of("openai/llama3", table) == Price(0.0, 0.0)
    assert price_of("anthropic/claude-sonnet-4-5-20250929", table) == Price(1.5, 7.5)
    assert price_of("anthropic/claude-haiku-4-5", table) == Price(1.0, 5.0)  # defaults stay
    assert Settings.from_env({}).price_table() == dict(DEFAULT_PRICES)


@pytest.mark.parametrize(
    ("content", "words"),
    [(None, "cannot read the file"), ("{not json", "is not valid JSON"),
     ('{"openai/x": {"input": 1}}', "give exactly")],
)
def test_a_bad_prices_file_is_a_settings_error(tmp_path: Path, content: str | None, words: str) -> None:
    path = tmp_path / "prices.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SettingsError, match=f"JOUST_PRICES=.*{words}"):
        Settings.from_env({"JOUST_PRICES": str(path)})


def test_the_service_and_the_workers_share_one_template_version() -> None:
    assert workers.prompts.TEMPLATE_VERSION is templates.TEMPLATE_VERSIONS["overall"]
    assert templates.template_version("overall") is workers.prompts.TEMPLATE_VERSION
    with pytest.raises(ValueError, match="no prompt template for criteria 'style'"):
        templates.template_version("style")


def test_the_prompt_overhead_matches_the_prompt() -> None:
    """The dry run's per-call overhead is the real prompt's size around the inserted texts."""
    system, user = workers.prompts.build_pairwise_prompt("", "", "")
    measured = estimate_tokens(system) + estimate_tokens(user)
    assert templates.PROMPT_OVERHEAD_TOKENS["overall"] == pytest.approx(measured, rel=0.1)
