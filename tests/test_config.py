"""Settings read from a plain mapping, never from the process environment in tests."""
from __future__ import annotations

import pytest

from service.config import DEFAULT_JUDGE, OFFLINE_JUDGE, Settings, SettingsError


def test_the_default_judge_follows_the_configured_provider() -> None:
    assert Settings.from_env({}).judge == OFFLINE_JUDGE
    assert Settings.from_env({"ANTHROPIC_API_KEY": "sk"}).judge == DEFAULT_JUDGE
    assert Settings.from_env({"OPENAI_BASE_URL": "http://x/v1", "JOUST_OPENAI_MODEL": "llama3"}).judge == "openai/llama3"
    assert Settings.from_env({"ANTHROPIC_API_KEY": "sk", "JOUST_JUDGE": "openai/m"}).judge == "openai/m"


def test_bad_numbers_are_refused_with_the_variable_named() -> None:
    with pytest.raises(SettingsError, match="JOUST_ELO_K"):
        Settings.from_env({"JOUST_ELO_K": "fast"})
    with pytest.raises(SettingsError, match="JOUST_MATCH_TIMEOUT"):
        Settings.from_env({"JOUST_MATCH_TIMEOUT": "-1"})
