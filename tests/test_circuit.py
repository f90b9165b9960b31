"""A judge's circuit breaker: the pure state machine (leaderboard.circuit), its Lua twin in a real
Redis (workers.breaker), and the overload pause (workers.pacing.Overload).

Time is passed in: each CircuitBreaker gets a fake clock its scripts use instead of Redis's TIME,
and a sleep that moves that clock on, so waits and open times are asserted exactly.
"""
from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from redis.asyncio import Redis

from leaderboard import circuit
from leaderboard.circuit import Admit, BreakerConfig, CallResult, Circuit
from workers.breaker import CircuitBreaker, Permit
from workers.errors import JudgeDown
from workers.pacing import MAX_OVERLOAD_PAUSE_S, Overload

T = TypeVar("T")
SPEC = "anthropic/claude-x"
CONFIG = BreakerConfig(failures=3, open_s=2.0, probes=2, probe_ttl_s=30.0)
ANSWERED, FAILED, UNKNOWN = CallResult.ANSWERED, CallResult.FAILED, CallResult.UNKNOWN


class Clock:
    """A fake Redis clock; `sleep` moves it on (one simulated timeline for every caller)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def run(redis_url: str, body: Callable[..., Awaitable[T]], clients: int = 1) -> T:
    async def main() -> T:
        made = [Redis.from_url(redis_url) for _ in range(clients)]
        try:
            return await body(*made)
        finally:
            for client in made:
                await client.aclose()

    return asyncio.run(main())


def fail(state: Circuit, now: float, token: str = "x") -> Circuit:
    return circuit.record(state, now, token, FAILED, "HTTP 500", CONFIG)


# ---- the pure state machine ---------------------------------------------------------------------


def test_failed_calls_in_a_row_open_it_and_an_answer_between_resets_the_count() -> None:
    state = fail(fail(Circuit(), 0.0), 0.0)
    assert state.closed and state.streak == 2
    assert circuit.record(state, 0.0, "y", ANSWERED, "", CONFIG) == Circuit()  # an answer: back to nothing
    assert circuit.record(state, 0.0, "y", UNKNOWN, "", CONFIG) == state  # a 429 with retry-after: nothing learnt
    state = fail(state, 10.0)
    assert (state.until, state.streak, state.trips, state.why) == (12.0, 3, 0, "HTTP 500")
    assert circuit.admit(state, 11.0, "z", CONFIG)[1].admit is Admit.WAIT
    assert circuit.admit(state, 11.0, "z", CONFIG)[1].wait == 1.0
    assert fail(state, 11.0, "late") == Circuit(4, 12.0, 0, None, None, "HTTP 500")  # sent before it opened


def test_once_open_time_is_over_exactly_one_caller_probes() -> None:
    state = fail(fail(fail(Circuit(), 0.0), 0.0), 0.0)  # open until 2
    state, first = circuit.admit(state, 2.0, "p", CONFIG)
    assert first.admit is Admit.PROBE and (state.probe, state.probe_until) == ("p", 32.0)
    for now in (2.0, 2.1, 31.9):
        again = circuit.admit(state, now, "q", CONFIG)
        assert again[0] == state and again[1].admit is Admit.WAIT
        assert again[1].wait == min(circuit.PROBE_POLL_S, 32.0 - now)
    # the probe answered: closed for everyone
    assert circuit.record(state, 3.0, "p", ANSWERED, "", CONFIG) == Circuit()
    # the probe learnt nothing (a 429 with retry-after): another caller may probe at once
    freed = circuit.record(state, 3.0, "p", UNKNOWN, "", CONFIG)
    assert freed.probe is None and circuit.admit(freed, 3.0, "q", CONFIG)[1].admit is Admit.PROBE
    # the probe never reported (its worker died): presumed lost after probe_ttl_s
    assert circuit.admit(state, 32.0, "q", CONFIG)[1].admit is Admit.PROBE


def test_failed_probes_double_the_open_time_then_the_judge_is_down_yet_still_probed() -> None:
    state = fail(fail(fail(Circuit(), 0.0), 0.0), 0.0)  # open until 2
    state, _ = circuit.admit(state, 2.0, "p1", CONFIG)
    state = circuit.record(state, 2.5, "p1", FAILED, "HTTP 503", CONFIG)
    assert (state.until, state.trips, state.probe, state.why) == (2.5 + 4.0, 1, None, "HTTP 503")
    assert not state.down(CONFIG) and circuit.admit(state, 3.0, "q", CONFIG)[1].admit is Admit.WAIT
    state, _ = circuit.admit(state, 6.5, "p2", CONFIG)
    state = circuit.record(state, 7.0, "p2", FAILED, "HTTP 500", CONFIG)
    assert (state.until, state.trips) == (7.0 + 8.0, 2) and state.down(CONFIG)
    said = circuit.admit(state, 8.0, "q", CONFIG)[1]
    assert (said.admit, said.streak, said.trips, said.why) == (Admit.DOWN, 5, 2, "HTTP 500")
    state, probe = circuit.admit(state, 15.0, "p3", CONFIG)  # down, yet probed once per open time
    assert probe.admit is Admit.PROBE
    assert circuit.admit(state, 15.1, "q", CONFIG)[1].admit is Admit.DOWN  # not waiting on that probe
    assert circuit.record(state, 15.5, "p3", ANSWERED, "", CONFIG) == Circuit()


def test_open_time_is_capped_and_zero_failures_never_opens() -> None:
    config = BreakerConfig(failures=1, open_s=5.0, probes=0)
    assert [config.open_for(k) for k in (0, 1, 2, 3, 4, 100)] == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0]
    assert BreakerConfig(open_s=90.0).open_for(3) == 90.0  # an open time above the cap is kept
    never = BreakerConfig(failures=0)
    state = Circuit()
    for _ in range(50):
        state = circuit.record(state, 0.0, "x", FAILED, "e", never)
    assert state.closed and state.streak == 50
    with pytest.raises(ValueError):
        BreakerConfig(open_s=0.0)


def test_a_lone_overload_pauses_nobody_and_overloads_in_a_row_pause_longer() -> None:
    policy = Overload(after=3, first_s=1.0)
    assert [policy.pause(n) for n in range(1, 8)] == [0.0, 0.0, 1.0, 2.0, 4.0, 8.0, 16.0]
    assert policy.pause(10_000) == MAX_OVERLOAD_PAUSE_S
    assert Overload(after=0).pause(50) == 0.0  # never pause everyone
    assert Overload(after=1, first_s=0.5).pause(1) == 0.5  # every overload pauses everyone


# ---- in Redis -----------------------------------------------------------------------------------


def breaker(client: Redis, clock: Clock, config: BreakerConfig = CONFIG, name: str = "w") -> CircuitBreaker:
    return CircuitBreaker(client, config, clock=clock, sleep=clock.sleep, name=name)


def test_workers_share_one_breaker_and_only_one_of_them_probes(redis_url: str) -> None:
    """Two workers: failures reported by either open it for both; once open time is over, of
    many callers exactly one probes and the rest wait for its answer, then go."""

    async def body(first: Redis, second: Redis) -> None:
        clock = Clock()
        a, b = breaker(first, clock, name="a"), breaker(second, clock, name="b")
        permits = [await (a if k % 2 else b).admit(SPEC) for k in range(3)]
        assert all(not p.probe and p.streak == 0 for p in permits)
        for k, permit in enumerate(permits):
            assert (await (a if k % 2 else b).record(permit, FAILED, "HTTP 500")).streak == k + 1
        now, state = await a.state(SPEC)
        assert (now, state.until, state.streak) == (1000.0, 1002.0, 3)

        order: list[str] = []

        async def caller(who: CircuitBreaker, label: str) -> None:
            permit = await who.admit(SPEC)
            order.append(f"{label}:{'probe' if permit.probe else 'go'}")
            if permit.probe:
                await clock.sleep(1.0)  # the probe's reply takes a second
                await who.record(permit, ANSWERED)

        await asyncio.gather(*(caller(a if k % 2 else b, str(k)) for k in range(6)))
        assert sum(o.endswith(":probe") for o in order) == 1 and order[0].endswith(":probe")
        assert len(order) == 6 and clock.now >= 1003.0
        assert (await a.state(SPEC))[1] == Circuit()
        assert not await first.exists(a.key(SPEC))  # closed with no failure: nothing stored

    run(redis_url, body, clients=2)


def test_a_dead_judge_is_down_after_its_probes_and_callers_fail_unsent(redis_url: str) -> None:
    async def body(client: Redis) -> None:
        clock = Clock()
        shared = breaker(client, clock)
        for _ in range(3):
            await shared.record(await shared.admit(SPEC), FAILED, "anthropic: HTTP 500 api_error")
        probes = 0
        while True:
            try:
                permit = await shared.admit(SPEC)  # waits out the open time on the fake clock
            except JudgeDown as exc:
                assert exc.spec == SPEC and "HTTP 500 api_error" in str(exc) and "is down" in str(exc)
                break
            assert permit.probe
            probes += 1
            await shared.record(permit, FAILED, "anthropic: HTTP 500 api_error")
        assert probes == CONFIG.probes
        assert clock.slept == [2.0, 4.0]  # open 2 s, then 4 s after the first failed probe
        clock.now += 8.0  # the next open time over: one probe still goes, and its answer closes it
        permit = await shared.admit(SPEC)
        assert permit.probe
        assert (await shared.record(permit, ANSWERED)).event == "closed"
        assert not (await shared.admit(SPEC)).probe

    run(redis_url, body)


def test_the_lua_scripts_and_the_pure_model_agree(redis_url: str) -> None:
    """Random steps (admit, record with every result, time passing) by several callers, run both
    in Redis and in leaderboard.circuit: the stored state, the admissions and expiries agree."""

    async def body(client: Redis) -> int:
        checked = 0
        for seed in range(10):
            rng = random.Random(seed)
            clock = Clock(1.7e9 + rng.random() * 1e6)
            config = BreakerConfig(failures=rng.choice([0, 1, 3, 5]), open_s=rng.uniform(0.1, 20),
                                   probes=rng.choice([0, 1, 3]), probe_ttl_s=rng.uniform(1, 60),
                                   max_open_s=rng.choice([circuit.MAX_OPEN_S, rng.uniform(1, 100)]))
            shared, spec, model = breaker(client, clock, config), f"model-{seed}", Circuit()
            tokens = [f"t{k}" for k in range(4)]
            for _ in range(120):
                clock.now += rng.choice([0.0, rng.expovariate(1.0), rng.uniform(0, 40)])
                token = rng.choice(tokens)
                if rng.random() < 0.5:
                    said = await shared.ask(spec, token)
                    model, expected = circuit.admit(model, clock.now, token, config)
                    assert said == expected
                    wrote = said.admit is Admit.PROBE
                else:
                    result = rng.choice([ANSWERED, FAILED, FAILED, UNKNOWN])
                    why = rng.choice(["", "HTTP 500", "timed out"])
                    # a permit that always reaches Redis: the model has no shortcut
                    recorded = await shared.record(Permit(spec, token, True, 1), result, why)
                    model = circuit.record(model, clock.now, token, result, why, config)
                    assert recorded.streak == model.streak
                    wrote = result is FAILED
                now, state = await shared.state(spec)
                assert (now, state) == (clock.now, model)
                if wrote:  # the expiry this step set (real time runs on meanwhile)
                    ttl = circuit.expires_in(model, clock.now) * 1000
                    assert ttl - 1000 < await client.pttl(shared.key(spec)) <= ttl + 1
                checked += 1
        return checked

    assert run(redis_url, body) == 10 * 120
