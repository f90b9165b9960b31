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


def test_the_fingerprint_follows_only_the_variables_settings_read() -> None:
    from service.config import env_fingerprint

    base = {"JOUST_JUDGE": "offline/rubric", "REDIS_URL": "redis://x", "HOME": "/root"}
    assert env_fingerprint(base) == env_fingerprint({**base, "HOME": "/elsewhere", "TERM": "xterm"})
    assert env_fingerprint(base) != env_fingerprint({**base, "JOUST_PRICES": "/p.json"})
    assert env_fingerprint(base) != env_fingerprint({**base, "REDIS_URL": "redis://y"})
