"""A paid reply outlives a Redis that forgot its scripts or refused the bookkeeping after it.

A restarted Redis has an empty script cache; redis-py's own fallback (load, then EVALSHA again)
was seen to fail right after a restart, and the breaker could not record an answered call: the
match failed and its calls were paid for again (tests/test_redis_supervision.py's outage test,
2 calls of 90 in one CI run). `workers.lua.LuaScript` falls back to EVAL with the text, and the
gate (`workers.gate`) keeps a reply whose bookkeeping failed. Real redis-server, the real
anthropic SDK against the fake Messages API.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator

import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis

from leaderboard.circuit import BreakerConfig
from leaderboard.types import Winner
from service.config import Settings
from tests.fake_anthropic import FakeAnthropic
from tests.fake_policies import verdict_json
from workers.breaker import CircuitBreaker
from workers.budget import Meter
from workers.gate import Gate, GatedJudge
from workers.judge import JudgeReply
from workers.lua import LuaScript
from workers.providers.anthropic_judge import AnthropicJudge
from workers.ratelimit import Limits, SharedRateLimit

SPEC = "anthropic/fake-judge"
INCR = "return redis.call('incrby', KEYS[1], ARGV[1])"


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(lambda system, users: verdict_json("A")) as server:
        yield server


def test_a_script_runs_by_its_text_when_redis_forgot_it_and_is_cached_again(redis_url: str) -> None:
    async def run() -> tuple[list[int], bool, bool]:
        redis = Redis.from_url(redis_url)
        script = LuaScript(redis, INCR)
        first = await script(keys=["n"], args=[2])
        await redis.script_flush()  # what a restart does to the cache
        known_after_flush = (await redis.script_exists(script.sha))[0]
        second = await script(keys=["n"], args=[3])
        known_again = (await redis.script_exists(script.sha))[0]
        await redis.aclose()
        return [first, second], known_after_flush, known_again

    counts, known_after_flush, known_again = asyncio.run(run())
    assert counts == [2, 5]
    assert not known_after_flush and known_again


def test_an_answered_call_keeps_its_reply_when_redis_refuses_what_follows(
    redis_url: str, fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    """While the call is in flight, the breaker's and the rate limit's keys are broken (a string
    where a hash was, so their scripts fail with WRONGTYPE): the reply is still returned and
    counted, and the failed bookkeeping is logged."""
    fake.latency_s = 0.5
    sync = SyncRedis.from_url(redis_url)
    meter = Meter()

    async def run() -> JudgeReply:
        redis = Redis.from_url(redis_url)
        breaker = CircuitBreaker(redis, BreakerConfig(), prefix="t:circuit:")
        limiter = SharedRateLimit(redis, prefix="t:rate:")
        gate = Gate(spec=SPEC, meter=meter, max_tokens=256, breaker=breaker, limiter=limiter,
                    limits=Limits(rpm=600, tpm=1_000_000))
        judge = GatedJudge(AnthropicJudge("fake-judge", Settings(anthropic_base_url=fake.url, anthropic_api_key="k")),
                           gate)
        try:
            verdict = await judge.compare("Q?", "one", "two")
        finally:
            await redis.aclose()
        return verdict

    def break_keys_once_sent() -> None:
        deadline = time.monotonic() + 30  # a bound: the call is sent within moments
        while fake.requests == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        for key in sync.scan_iter("t:*"):
            sync.delete(key)
            sync.set(key, "not a hash")
        sync.set("t:circuit:" + SPEC, "not a hash")

    breaker_thread = threading.Thread(target=break_keys_once_sent)
    breaker_thread.start()
    with caplog.at_level(logging.ERROR, logger="workers.gate"):
        verdict = asyncio.run(run())
    breaker_thread.join()
    sync.close()
    assert fake.requests == fake.replies == 1
    assert verdict.winner == Winner.A
    assert (meter.calls, meter.input_tokens) == (1, fake.received[0].input_tokens)
    kept = [r.getMessage() for r in caplog.records if "the reply stands" in r.getMessage()]
    assert any("breaker" in line for line in kept), kept
