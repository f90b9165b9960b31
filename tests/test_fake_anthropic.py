"""The fake Anthropic server itself, driven by the real `anthropic` SDK: rate limits, seeded
faults, count_tokens, timings, many connections at once and the command line (its Message
Batches API: tests.test_fake_batches).

Timing: assertions are on counts and statuses; rates are chosen so that a slow machine only
makes a refill more complete, never a refusal less likely, except where said.
"""
from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from tests.fake_anthropic import Failure, FakeAnthropic, always, verdict_json

REPO = Path(__file__).resolve().parents[1]
ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(always("A")) as fake:
        yield fake


def client(fake: FakeAnthropic, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=0, **options)


def async_client(fake: FakeAnthropic, **options: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=fake.url, api_key="test", max_retries=0, **options)


def ask(sdk: anthropic.Anthropic, max_tokens: int = 16) -> Any:
    return sdk.messages.create(model="judge", max_tokens=max_tokens, messages=ASK)


def outcome(sdk: anthropic.Anthropic, max_tokens: int = 16) -> str:
    """What one request got, as the client sees it: "200", "429", ..., or "timeout"."""
    try:
        reply = ask(sdk, max_tokens)
    except anthropic.APITimeoutError:
        return "timeout"
    except anthropic.APIStatusError as exc:
        return str(exc.status_code)
    return "malformed" if "winner" not in reply.content[0].text else "200"


def wait_until(condition: Any, timeout_s: float = 20.0) -> None:
    """Poll until `condition()` holds; fail (not hang) if it never does."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.02)


def batch_request(custom_id: str, text: str = "compare these") -> dict[str, Any]:
    params = {"model": "judge", "max_tokens": 64, "messages": [{"role": "user", "content": text}]}
    return {"custom_id": custom_id, "params": params}


# --- the rate limit -----------------------------------------------------------------------


def test_over_rpm_is_answered_429_with_retry_after_and_admitted_after_waiting() -> None:
    with FakeAnthropic(rpm=30, burst_s=2) as fake:  # a bucket of one request, refilled in 2 s
        sdk = client(fake)
        ask(sdk)
        with pytest.raises(anthropic.RateLimitError) as info:
            ask(sdk)
        headers = info.value.response.headers
        assert info.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
        assert headers["retry-after"] in ("1", "2")  # whole seconds until it would fit, at least 1
        assert headers["anthropic-ratelimit-requests-limit"] == "30"
        assert headers["anthropic-ratelimit-requests-remaining"] == "0"
        assert datetime.fromisoformat(headers["anthropic-ratelimit-requests-reset"]).tzinfo is not None
        time.sleep(int(headers["retry-after"]))
        assert ask(sdk).content[0].text == verdict_json("A", "Always A.")
        assert [r.status for r in fake.received] == [200, 429, 200]
        assert [r.limited for r in fake.received] == [None, "requests", None]
        assert (fake.requests, fake.replies) == (3, 2)
        assert fake.received_times().rate_limited_share == pytest.approx(1 / 3)


def test_a_burst_gets_the_bucket_capacity_and_the_rest_waits() -> None:
    # 3 requests of capacity, one more every 10 s: a burst of 5 gets exactly 3 through.
    with FakeAnthropic(rpm=6, burst_s=30) as fake:
        sdk = client(fake)
        results = [outcome(sdk) for _ in range(5)]
        assert results == ["200", "200", "200", "429", "429"]
        refused = httpx.post(f"{fake.url}/v1/messages", json={"model": "m", "max_tokens": 1, "messages": ASK})
        assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 10
        assert fake.stats()["rate_limited"] == 3


def test_the_limit_is_checked_on_arrival_before_the_latency() -> None:
    async def run(fake: FakeAnthropic) -> None:
        sdk = async_client(fake)
        slow = asyncio.create_task(sdk.messages.create(model="m", max_tokens=8, messages=ASK))
        while fake.requests == 0:
            await asyncio.sleep(0.01)
        with pytest.raises(anthropic.RateLimitError):
            await sdk.messages.create(model="m", max_tokens=8, messages=ASK)
        assert not slow.done()  # refused while the admitted request still sleeps its latency
        slow.cancel()
        await sdk.close()

    with FakeAnthropic(rpm=6, burst_s=10, latency_s=30) as fake:  # one request, then one per 10 s
        asyncio.run(run(fake))
        assert [r.status for r in fake.received] == [429]


def test_tpm_reserves_max_tokens_and_gives_back_what_was_not_written() -> None:
    # A bucket of 100 tokens refilled at 0.1 a second. Each request reserves 1 input + 60
    # max_tokens on arrival and writes 9, so 51 come back when it is answered: a net 10 each.
    with FakeAnthropic(tpm=6, burst_s=1000) as fake:
        sdk = client(fake)
        first = sdk.messages.with_raw_response.create(model="m", max_tokens=60, messages=ASK)
        second = sdk.messages.with_raw_response.create(model="m", max_tokens=60, messages=ASK)
        assert first.headers["anthropic-ratelimit-tokens-limit"] == "6"
        assert first.headers["anthropic-ratelimit-tokens-remaining"] == "39"  # 100 - 61 reserved
        assert second.headers["anthropic-ratelimit-tokens-remaining"] == "29"  # 39 + 51 back - 61
        results = [outcome(sdk, max_tokens=60) for _ in range(4)]
        assert results == ["200", "200", "429", "429"]  # 60 left: not enough for 61
        assert [r.limited for r in fake.received] == [None] * 4 + ["tokens"] * 2
        assert all(r.status == 429 for r in fake.received[4:])


def test_limits_are_configured_and_lifted_through_configure(server: FakeAnthropic) -> None:
    sdk = client(server)
    server.configure({"rpm": 6, "burst_s": 10})
    assert [outcome(sdk) for _ in range(2)] == ["200", "429"]
    server.configure({"rpm": None})
    assert [outcome(sdk) for _ in range(5)] == ["200"] * 5
    with pytest.raises(ValueError):
        server.configure({"rpm": -1})


# --- random faults ------------------------------------------------------------------------


def fault_run(fake: FakeAnthropic, n: int, timeout_s: float = 60) -> list[str]:
    sdk = client(fake, timeout=timeout_s)
    return [outcome(sdk) for _ in range(n)]


def test_faults_replay_with_their_seed_and_hit_about_the_asked_share() -> None:
    with FakeAnthropic(always("A")) as fake:
        fake.configure({"fault_rate": 0.2, "fault_seed": 7, "fault_kinds": ["429", "529", "500", "malformed"]})
        first = fault_run(fake, 200)
        records = fake.received
        fake.reset()  # restarts the stream from the seed
        again = fault_run(fake, 200)
        fake.configure({"fault_seed": 8})
        other = fault_run(fake, 200)
    assert first == again and first != other
    faulted = [r for r in first if r != "200"]
    assert 20 <= len(faulted) <= 60  # 40 expected
    assert set(faulted) == {"429", "529", "500", "malformed"}
    assert [r.fault or "200" for r in records] == first
    assert all(r.status == 200 for r in records if r.fault == "malformed")


def test_all_five_faults_are_drawn_by_default(server: FakeAnthropic) -> None:
    server.configure({"fault_rate": 1.0, "fault_seed": 5, "fault_timeout_s": 0.5})
    fault_run(server, 30, timeout_s=0.2)  # what the client sees of a timeout depends on the machine
    wait_until(lambda: server.stats()["in_flight"] == 0)  # the late "timeout" replies are in
    assert {r.fault for r in server.received} == {"429", "529", "500", "timeout", "malformed"}
    assert all(r.status == int(r.fault) for r in server.received if r.fault in ("429", "529", "500"))


def test_fault_replies_carry_retry_after_and_timeouts_are_not_replies(server: FakeAnthropic) -> None:
    server.configure({"fault_rate": 1.0, "fault_kinds": ["529"], "fault_retry_after": 3, "fault_seed": 1})
    with pytest.raises(anthropic.OverloadedError) as info:
        ask(client(server))
    assert info.value.response.headers["retry-after"] == "3"
    server.configure({"fault_kinds": ["timeout"], "fault_timeout_s": 1.0})
    assert fault_run(server, 1, timeout_s=0.3) == ["timeout"]
    wait_until(lambda: len(server.received) == 2)
    stats = server.stats()
    assert (stats["replies"], stats["timeouts"], stats["faults"]) == (0, 1, {"529": 1, "timeout": 1})


def test_the_fail_queue_comes_before_faults(server: FakeAnthropic) -> None:
    server.configure({"fault_rate": 1.0, "fault_kinds": ["500"]})
    server.fail(Failure(403))
    assert fault_run(server, 2) == ["403", "500"]
    assert [r.fault for r in server.received] == [None, "500"]


def test_bad_fault_config_is_refused_and_changes_nothing(server: FakeAnthropic) -> None:
    with pytest.raises(ValueError):
        server.configure({"fault_rate": 0.5, "fault_kinds": ["gremlins"]})
    assert fault_run(server, 20) == ["200"] * 20


# --- count_tokens -------------------------------------------------------------------------


def test_count_tokens_matches_the_messages_estimate_and_is_counted_apart(server: FakeAnthropic) -> None:
    sdk = client(server)
    messages = [{"role": "user", "content": "x" * 400}]
    counted = sdk.messages.count_tokens(model="judge", system="s" * 40, messages=messages)
    reply = sdk.messages.create(model="judge", max_tokens=8, system="s" * 40, messages=messages)
    assert counted.input_tokens == reply.usage.input_tokens == 110
    stats = server.stats()
    assert (stats["count_tokens"], stats["requests"]) == (1, 1)


# --- timings and many connections ---------------------------------------------------------


def test_received_times_give_throughput_and_the_rate_limited_share() -> None:
    with FakeAnthropic(rpm=6, burst_s=30, latency_s=0.05) as fake:  # 3 at once, then one per 10 s
        sdk = client(fake)
        results = [outcome(sdk) for _ in range(4)]
        times = fake.received_times()
    assert results == ["200", "200", "200", "429"]
    assert times.statuses == [200, 200, 200, 429] and times.at == sorted(times.at)
    assert all(done >= at for at, done in zip(times.at, times.answered_at))
    assert times.replies_per_s == pytest.approx(3 / (times.at[-1] - times.at[0]))
    assert times.rate_limited_share == 0.25


def test_many_slow_requests_are_served_at_once() -> None:
    # No reply leaves before all 150 requests are being handled together (a barrier in the policy).
    everyone = threading.Barrier(150)

    def decide(system: str, users: list[str]) -> str:
        everyone.wait(timeout=120)
        return verdict_json("B")

    async def run(fake: FakeAnthropic) -> list[str]:
        sdk = async_client(fake, timeout=300)
        calls = [sdk.messages.create(model="m", max_tokens=8, messages=ASK) for _ in range(150)]
        replies = await asyncio.gather(*calls)
        await sdk.close()
        return [reply.content[0].text for reply in replies]

    with FakeAnthropic(decide, latency_s=1.0) as fake:
        assert asyncio.run(run(fake)) == [verdict_json("B")] * 150
        assert fake.replies == 150 and fake.max_in_flight == 150


# --- the fake as a process of its own -----------------------------------------------------


def test_cli_flags_and_configure_reach_the_new_settings() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_anthropic", "--rpm", "6", "--burst", "20", "--tpm", "100000",
         "--fault-rate", "0", "--batch-delay", "0.1"],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip().split("=", 1)[1]
        stats = httpx.get(f"{url}/_fake/stats").json()
        assert stats["limits"] == {"rpm": 6, "tpm": 100000, "burst_s": 20}
        sdk = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        assert [outcome(sdk) for _ in range(3)] == ["200", "200", "429"]
        configured = httpx.post(f"{url}/_fake/configure", json={"rpm": None, "fault_rate": 1, "fault_kinds": ["500"]})
        assert configured.status_code == 200 and configured.json()["limits"]["rpm"] is None
        assert outcome(sdk) == "500"
        assert httpx.post(f"{url}/_fake/configure", json={"fault_kinds": ["nope"]}).status_code == 400
        httpx.post(f"{url}/_fake/configure", json={"fault_rate": 0})
        batch = sdk.messages.batches.create(requests=[batch_request("cli")])
        wait_until(lambda: sdk.messages.batches.retrieve(batch.id).processing_status == "ended")
        stats = httpx.get(f"{url}/_fake/stats").json()
        assert (stats["requests"], stats["rate_limited"]) == (4, 1)
        assert (stats["batches_created"], stats["batch_replies"]) == (1, 1)
        assert stats["rate_limited_share"] == pytest.approx(0.25)
    finally:
        proc.terminate()
        assert proc.wait(timeout=5) == 0
