"""Settings read from a plain mapping, never from the process environment in tests."""
from __future__ import annotations

import pytest

from service.config import DEFAULT_JUDGE, OFFLINE_JUDGE, JudgeLimits, Settings, SettingsError


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


def test_a_judges_limits_come_from_the_run_then_its_endpoint_then_the_defaults() -> None:
    settings = Settings.from_env({
        "JOUST_JUDGE_RPM": "1000", "JOUST_JUDGE_TPM": "400000", "JOUST_JUDGE_CONCURRENCY": "32",
        "JOUST_JUDGE_ENDPOINTS": '{"anthropic/big": {"rpm": 4000, "tpm": 2e6, "concurrency": 128}}',
    })
    assert settings.limits("anthropic/small") == JudgeLimits(rpm=1000.0, tpm=400000.0, concurrency=32)
    assert settings.limits("anthropic/big") == JudgeLimits(rpm=4000.0, tpm=2e6, concurrency=128)
    assert settings.limits("anthropic/big", rpm=50, tpm=None) == JudgeLimits(rpm=50.0, tpm=2e6, concurrency=128)
    assert Settings().limits("x/y") == JudgeLimits(rpm=None, tpm=None, concurrency=64)  # no limit by default
    assert Settings().matches_in_flight == 64 and Settings(worker_matches=1).matches_in_flight == 1


@pytest.mark.parametrize(("entry", "words"), [
    ('{"anthropic/x": {"rpm": 0}}', "rpm must be a positive number"),
    ('{"anthropic/x": {"tpm": "9"}}', "tpm must be a positive number"),
    ('{"anthropic/x": {"concurrency": 2.5}}', "concurrency must be a whole number"),
    ('{"anthropic/x": {"rpm": true}}', "rpm must be a positive number"),
    ('{"anthropic/x": {"qps": 3}}', "unknown field"),
])
def test_bad_judge_limits_are_refused_with_the_entry_named(entry: str, words: str) -> None:
    with pytest.raises(SettingsError, match=words) as info:
        Settings.from_env({"JOUST_JUDGE_ENDPOINTS": entry})
    assert "anthropic/x" in str(info.value)
