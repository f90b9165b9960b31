"""OpenAIJudge through the real `openai` SDK against the fake Chat Completions server, its
per-judge endpoints (JOUST_JUDGE_ENDPOINTS) and its place in the registry."""
from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from leaderboard.types import Winner
from service.config import JudgeEndpoint, Settings, SettingsError
from tests.fake_openai import Failure, FakeOpenAI
from tests.fake_policies import always, malformed, prefer, verdict_json
from tests.required import require_module
from workers.errors import PermanentJudgeError, TransientJudgeError, VerdictParseError
from workers.judge import Judge
from workers.prompts import REMINDER, SYSTEM_PROMPT
from workers.providers.anthropic_judge import RETRY_AFTER_CAP_S
from workers.providers.openai_judge import DEFAULT_BASE_URL, NO_KEY, OpenAIJudge
from workers.registry import JudgePool, build_judge, is_known_judge


@pytest.fixture(autouse=True)
def _openai_sdk() -> None:
    """The openai SDK (the dev extra) is a required part: without it these tests skip, and fail
    under CI=true (tests/required.py)."""
    require_module("openai", "openai")


RANKING = ["model-x", "model-y", "model-z"]


@pytest.fixture
def fake():
    with FakeOpenAI(prefer(RANKING)) as server:
        yield server


def settings_for(fake: FakeOpenAI, **changes: object) -> Settings:
    base = Settings(
        openai_api_key="test-key",
        openai_base_url=fake.url,
        judge_timeout_s=10.0,
        judge_max_tokens=321,
        judge_concurrency=4,
    )
    return base.with_(**changes)


def judge_for(fake: FakeOpenAI, *, max_retries: int = 0, model: str = "judge-model", **changes: object) -> OpenAIJudge:
    return OpenAIJudge(model, settings_for(fake, **changes), max_retries=max_retries)


def compare(judge: Judge, first: str, second: str, question: str = "Which is the capital of France?"):
    return asyncio.run(judge.compare(question, first, second))


# --- verdicts, tokens, the request sent ---------------------------------------------------


@pytest.mark.parametrize(
    "first, second, winner",
    [
        ("Paris [model-x]", "Lyon [model-y]", Winner.A),
        ("Lyon [model-z]", "Paris [model-y]", Winner.B),
        ("Paris [model-y]", "Paris [model-y]", Winner.TIE),
    ],
)
def test_verdict_is_positional(fake: FakeOpenAI, first: str, second: str, winner: Winner) -> None:
    reply = compare(judge_for(fake), first, second)
    assert reply.winner is winner
    assert reply.reason and reply.raw.startswith("{")
    assert not reply.reminded


def test_request_and_usage(fake: FakeOpenAI) -> None:
    reply = compare(judge_for(fake), "Paris [model-x]", "Lyon [model-y]")
    (seen,) = fake.received
    assert seen.model == "judge-model"
    assert [m["role"] for m in seen.messages] == ["system", "user"]
    assert seen.system == SYSTEM_PROMPT
    assert seen.body["max_tokens"] == 321
    assert "temperature" not in seen.body
    assert (reply.input_tokens, reply.output_tokens) == (seen.input_tokens, seen.output_tokens)
    assert reply.input_tokens > 100 and reply.output_tokens > 0
    assert reply.raw == seen.reply and reply.latency_ms > 0


def test_temperature_is_sent_only_when_asked_for(fake: FakeOpenAI) -> None:
    judge = OpenAIJudge("m", settings_for(fake), max_retries=0, temperature=0.0)
    compare(judge, "a [model-x]", "b")
    assert fake.received[0].body["temperature"] == 0


def test_a_server_without_usage_costs_zero_tokens(fake: FakeOpenAI) -> None:
    fake.send_usage = False
    reply = compare(judge_for(fake), "a [model-x]", "b")
    assert reply.winner is Winner.A and (reply.input_tokens, reply.output_tokens) == (0, 0)


def test_the_key_travels_as_a_bearer_token(fake: FakeOpenAI) -> None:
    fake.api_key = "test-key"
    assert compare(judge_for(fake), "a [model-x]", "b").winner is Winner.A


def test_no_key_configured_sends_a_placeholder(fake: FakeOpenAI) -> None:
    # Local servers want no key, but the SDK refuses to start without one.
    fake.api_key = NO_KEY
    judge = OpenAIJudge("m", Settings(openai_base_url=fake.url), max_retries=0)
    assert compare(judge, "a [model-x]", "b").winner is Winner.A


# --- errors -------------------------------------------------------------------------------


def test_429_with_retry_after_is_transient(fake: FakeOpenAI) -> None:
    fake.fail(Failure(429, retry_after=0.1))
    with pytest.raises(TransientJudgeError) as info:
        compare(judge_for(fake), "a", "b")
    assert info.value.retry_after == pytest.approx(0.1)
    assert "429" in str(info.value) and "rate_limit_exceeded" in str(info.value)
    assert fake.requests == 1


def test_long_retry_after_is_not_slept_through_by_the_sdk(fake: FakeOpenAI) -> None:
    # The SDK would sleep up to two minutes on its own; the guard hands the wait to joust.
    fake.fail(Failure(429, retry_after=60), Failure(429, retry_after=60))
    with pytest.raises(TransientJudgeError) as info:
        asyncio.run(asyncio.wait_for(judge_for(fake, max_retries=1).compare("q", "a", "b"), timeout=5))
    assert info.value.retry_after == 60 and fake.requests == 1
    fake.reset()
    fake.fail(Failure(503, retry_after=99999))
    with pytest.raises(TransientJudgeError) as info:
        compare(judge_for(fake, max_retries=1), "a", "b")
    assert info.value.retry_after == RETRY_AFTER_CAP_S


def test_sdk_retries_once_on_a_short_retry_after(fake: FakeOpenAI) -> None:
    fake.fail(Failure(429, retry_after=0.1))
    reply = compare(judge_for(fake, max_retries=1), "Paris [model-x]", "Lyon [model-y]")
    assert reply.winner is Winner.A and fake.requests == 2


@pytest.mark.parametrize("style", ["openai", "vllm", "llamacpp", "text"])
@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_transient_whatever_the_body(fake: FakeOpenAI, style: str, status: int) -> None:
    fake.error_style = style
    fake.fail(status)
    with pytest.raises(TransientJudgeError) as info:
        compare(judge_for(fake), "a", "b")
    assert str(status) in str(info.value) and info.value.retry_after is None


@pytest.mark.parametrize("style", ["openai", "vllm", "llamacpp", "text"])
def test_bad_api_key_is_permanent(fake: FakeOpenAI, style: str) -> None:
    fake.error_style = style
    fake.api_key = "the-right-key"
    with pytest.raises(PermanentJudgeError) as info:
        compare(judge_for(fake, max_retries=1), "a", "b")
    assert "401" in str(info.value)
    assert fake.requests == 1  # not retried


def test_error_detail_keeps_the_servers_message(fake: FakeOpenAI) -> None:
    fake.error_style = "vllm"
    fake.fail(Failure(404, message="The model `judge-model` does not exist."))
    with pytest.raises(PermanentJudgeError) as info:
        compare(judge_for(fake), "a", "b")
    assert str(info.value) == "openai: HTTP 404: The model `judge-model` does not exist."


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_request_errors_are_permanent(fake: FakeOpenAI, status: int) -> None:
    fake.fail(status)
    with pytest.raises(PermanentJudgeError):
        compare(judge_for(fake, max_retries=1), "a", "b")
    assert fake.requests == 1


def test_timeout_is_transient(fake: FakeOpenAI) -> None:
    fake.latency_s = 1.0
    with pytest.raises(TransientJudgeError) as info:
        compare(judge_for(fake, judge_timeout_s=0.2), "a", "b")
    assert "timed out" in str(info.value)


def test_connection_refused_is_transient() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = Settings(openai_base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(TransientJudgeError, match="connection"):
        compare(OpenAIJudge("m", settings, max_retries=0), "a", "b")


# --- the reminder -------------------------------------------------------------------------


def test_malformed_then_valid_is_re_asked_with_the_reminder(fake: FakeOpenAI) -> None:
    fake.queue_replies("Hmm, both are decent answers.")
    reply = compare(judge_for(fake), "Lyon [model-y]", "Paris [model-x]")
    assert reply.winner is Winner.B and reply.reminded
    first, second = fake.received
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    assert second.messages[2]["content"] == "Hmm, both are decent answers."
    assert second.messages[3]["content"] == REMINDER
    assert reply.input_tokens == first.input_tokens + second.input_tokens
    assert reply.output_tokens == first.output_tokens + second.output_tokens


def test_malformed_twice_raises_with_both_replies(fake: FakeOpenAI) -> None:
    fake.decide = malformed("I refuse to pick.")
    with pytest.raises(VerdictParseError) as info:
        compare(judge_for(fake), "a", "b")
    assert info.value.replies == ("I refuse to pick.", "I refuse to pick.")
    assert fake.requests == 2


# --- concurrency and event loops ------------------------------------------------------------


async def _many(judge: Judge, n: int) -> list[Winner]:
    calls = [judge.compare("q", f"answer {i} [model-x]", "other [model-y]") for i in range(n)]
    return [reply.winner for reply in await asyncio.gather(*calls)]


@pytest.mark.parametrize("limit", [1, 3])
def test_concurrency_limit_is_respected(fake: FakeOpenAI, limit: int) -> None:
    fake.latency_s = 0.15
    assert asyncio.run(_many(judge_for(fake, judge_concurrency=limit), 6)) == [Winner.A] * 6
    assert fake.max_in_flight == limit


def test_one_client_per_loop_and_aclose(fake: FakeOpenAI) -> None:
    judge = judge_for(fake)

    async def jobs() -> None:
        assert await _many(judge, 3) == [Winner.A] * 3
        client = judge._client
        assert await _many(judge, 2) == [Winner.A] * 2
        assert judge._client is client  # long-lived on one loop
        await judge.aclose()
        assert judge._client is None

    asyncio.run(jobs())
    assert compare(judge, "x [model-x]", "y").winner is Winner.A  # a second event loop
    assert fake.replies == 6


# --- endpoints: global defaults and per-judge overrides -------------------------------------


def test_per_judge_endpoint_override_picks_the_right_server() -> None:
    with FakeOpenAI(always("A"), api_key="global-key") as default, \
            FakeOpenAI(always("B"), api_key="llama-key") as llama:  # fmt: skip
        env = {
            "OPENAI_BASE_URL": default.url,
            "OPENAI_API_KEY": "global-key",
            "LLAMA_KEY": "llama-key",
            "JOUST_JUDGE_ENDPOINTS": f'{{"openai/llama3": {{"base_url": "{llama.url}", "api_key_env": "LLAMA_KEY"}}}}',
        }
        settings = Settings.from_env(env)
        pool = JudgePool(settings)

        async def run() -> tuple[Winner, Winner]:
            a = await pool.get("openai/llama3").compare("q", "a", "b")
            b = await pool.get("openai/gpt-4o").compare("q", "a", "b")
            await pool.aclose()
            return a.winner, b.winner

        assert asyncio.run(run()) == (Winner.B, Winner.A)
        assert [r.model for r in llama.received] == ["llama3"]
        assert [r.model for r in default.received] == ["gpt-4o"]


def test_endpoint_resolution() -> None:
    settings = Settings(
        openai_base_url="http://global/v1",
        openai_api_key="g",
        judge_endpoints={"openai/a": JudgeEndpoint(base_url="http://a/v1"), "openai/b": JudgeEndpoint(api_key="kb")},
    )
    assert settings.endpoint("openai/a") == JudgeEndpoint("http://a/v1", "g")
    assert settings.endpoint("openai/b") == JudgeEndpoint("http://global/v1", "kb")
    assert settings.endpoint("openai/c") == JudgeEndpoint("http://global/v1", "g")
    assert OpenAIJudge("c", Settings()).base_url == DEFAULT_BASE_URL
    assert "kb" not in repr(settings) and "'g'" not in repr(settings)  # keys stay out of logs


@pytest.mark.parametrize(
    "raw, message",
    [
        ("{not json", "not valid JSON"),
        ('["openai/x"]', "must be a JSON object"),
        ('{"llama3": {"base_url": "http://h"}}', "judge specs like"),
        ('{"openai/x": "http://h"}', "must be an object"),
        ('{"openai/x": {"baseurl": "http://h"}}', "unknown field"),
        ('{"openai/x": {"base_url": ""}}', "non-empty string"),
        ('{"openai/x": {"api_key": "k", "api_key_env": "K"}}', "not both"),
        ('{"openai/x": {"api_key_env": "MISSING_KEY"}}', "MISSING_KEY, which is not set"),
    ],
)
def test_bad_endpoints_are_clear_settings_errors(raw: str, message: str) -> None:
    with pytest.raises(SettingsError, match="JOUST_JUDGE_ENDPOINTS") as info:
        Settings.from_env({"JOUST_JUDGE_ENDPOINTS": raw})
    assert message in str(info.value)


def test_endpoints_from_env() -> None:
    settings = Settings.from_env({
        "JOUST_JUDGE_ENDPOINTS": '{"openai/q": {"base_url": "http://q/v1", "api_key": "kq"}}',
        "OPENAI_API_KEY": "g",
    })  # fmt: skip
    assert settings.judge_endpoints == {"openai/q": JudgeEndpoint("http://q/v1", "kq")}
    assert settings.openai_api_key == "g" and settings.openai_base_url is None
    assert Settings.from_env({}).judge_endpoints == {}


# --- the registry -------------------------------------------------------------------------


def test_registry_builds_openai_judges(fake: FakeOpenAI) -> None:
    judge = build_judge("openai/meta-llama/Llama-3-8B", settings_for(fake))
    assert isinstance(judge, OpenAIJudge) and isinstance(judge, Judge)
    assert judge.model == "meta-llama/Llama-3-8B" and judge.spec == "openai/meta-llama/Llama-3-8B"
    assert is_known_judge("openai/x")
    with pytest.raises(PermanentJudgeError):
        build_judge("openai/", settings_for(fake))


def test_fake_replies_are_valid_chat_completions(fake: FakeOpenAI) -> None:
    fake.decide = always("B")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    response = httpx.post(f"{fake.url}/chat/completions", json=body).json()
    assert response["object"] == "chat.completion"
    assert response["choices"][0]["message"] == {"role": "assistant", "content": verdict_json("B", "Always B.")}
    assert set(response["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    fake.fail(Failure(429, retry_after=0.5))
    error = httpx.post(f"{fake.url}/chat/completions", json=body)
    assert error.status_code == 429 and error.headers["retry-after"] == "0.5"
    assert error.json()["error"]["code"] == "rate_limit_exceeded"
    assert httpx.get(f"{fake.root}/_fake/stats").json()["requests"] == 2
