"""The shared rate limit (GCRA with reservation, adaptive after 429s), run in a real Redis.

Time is passed in: each SharedRateLimit gets a fake clock that its scripts use instead of Redis's
TIME, and a sleep that records instead of waiting, so waits are asserted exactly. One test runs
on the real clock and reads the tickets' Redis-clock times, never wall-clock durations.
"""
from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from redis.asyncio import Redis

from workers import pacing
from workers.pacing import DEFAULT_COOLDOWN_S, MAX_COOLDOWN_S, MIN_FACTOR, PENALTY_GAP_S, RECOVERY_S, Pace
from workers.ratelimit import Limits, SharedRateLimit, Ticket

T = TypeVar("T")
SPEC = "anthropic/claude-x"


class Clock:
    """A fake Redis clock; `sleep` records the waits (callers are concurrent: time stays put)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def run(redis_url: str, body: Callable[..., Awaitable[T]], clients: int = 1) -> T:
    """Run `body(*clients)` with its own async Redis clients, one per simulated worker."""

    async def main() -> T:
        made = [Redis.from_url(redis_url) for _ in range(clients)]
        try:
            return await body(*made)
        finally:
            for client in made:
                await client.aclose()

    return asyncio.run(main())


def limiter(client: Redis, clock: Clock) -> SharedRateLimit:
    return SharedRateLimit(client, clock=clock, sleep=clock.sleep)


def test_limits_say_whether_any_limit_is_set() -> None:
    assert not Limits().active and not Limits(rpm=0, tpm=None).active
    assert Limits(rpm=60).active and Limits(tpm=1000).active
    for bad in (dict(rpm=-1), dict(tpm=math.inf), dict(burst_s=-0.1), dict(rpm=math.nan)):
        with pytest.raises(ValueError):
            Limits(**bad)


def test_a_crowd_at_one_instant_is_spaced_one_interval_apart_after_the_burst(redis_url: str) -> None:
    clock = Clock()

    async def body(client: Redis) -> tuple[list[Ticket], list[Ticket]]:
        limit = limiter(client, clock)
        crowd = [await limit.acquire(SPEC, Limits(rpm=60, burst_s=0.5), 0) for _ in range(120)]  # one instant
        wider = [await limit.acquire("other", Limits(rpm=60, burst_s=5), 0) for _ in range(10)]
        return crowd, wider

    crowd, wider = run(redis_url, body)
    # served in the order they asked, one a second after the half-second burst
    assert [t.waited for t in crowd] == [0.0] + [k - 0.5 for k in range(1, 120)]
    assert [t.at for t in crowd] == [1000.0] + [1000.0 + k - 0.5 for k in range(1, 120)]
    # burst_s=5 at one per second: six go at once, then one a second, in the order they asked
    assert [t.waited for t in wider] == [0.0] * 6 + [1.0, 2.0, 3.0, 4.0]


def test_no_sixty_second_window_admits_more_than_the_rate_plus_the_burst(redis_url: str) -> None:
    clock, rng = Clock(), random.Random(7)
    limits = Limits(rpm=60, burst_s=5)

    async def body(client: Redis) -> list[float]:
        limit, starts = limiter(client, clock), []
        for _ in range(1200):  # arrivals at 3 a second on average, for about 400 s
            starts.append((await limit.acquire(SPEC, limits, 0)).at)
            clock.now += rng.expovariate(3.0)
        return starts

    starts = run(redis_url, body)
    assert starts == sorted(starts)  # FIFO: served in the order they arrived
    busiest = max(sum(1 for t in starts if s <= t < s + 60) for s in starts)
    # GCRA: n calls within 60 s need (n - 1) * 1 s - 5 s < 60 s, so at most 65; fixed one-minute
    # windows would let 120 through around an edge. The limit is also used in full (not 64).
    assert busiest == 65
    assert starts[-1] - starts[0] >= 1200 - 1 - 5


def test_two_workers_share_one_limit(redis_url: str) -> None:
    clock = Clock()

    async def body(a: Redis, b: Redis) -> list[float]:
        workers = [limiter(a, clock), limiter(b, clock)]
        return [(await workers[k % 2].acquire(SPEC, Limits(rpm=60), 0)).waited for k in range(8)]

    assert run(redis_url, body, clients=2) == [0.0, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5]


def test_big_calls_wait_longer_and_settling_gives_tokens_back(redis_url: str) -> None:
    clock = Clock()
    limits = Limits(tpm=6000, burst_s=0.5)  # 0.01 s per token; the burst is 50 tokens

    async def body(client: Redis) -> None:
        limit = limiter(client, clock)
        await limit.acquire("big", limits, 1000)
        await limit.acquire("small", limits, 100)
        assert (await limit.acquire("big", limits, 10)).waited == 9.5
        assert (await limit.acquire("small", limits, 10)).waited == 0.5

        refunded = await limit.acquire("refund", limits, 1000)  # the token TAT is now 1010
        await limit.settle(refunded, 200)  # 800 tokens back: 1002
        assert (await limit.state("refund", limits)).wait == 1.5
        assert (await limit.acquire("refund", limits, 10)).waited == 1.5

        overran = await limit.acquire("overran", limits, 1000)
        await limit.settle(overran, 1500)  # 500 more: 1015
        assert (await limit.acquire("overran", limits, 10)).waited == 14.5

        late = await limit.acquire("late", limits, 1000)
        clock.now = 1008.0
        await limit.settle(late, 0)  # a refund frees room from now on, not in the past
        assert (await limit.state("late", limits)).pace.token_tat == 1008.0

        no_tokens = await limit.acquire("rpm-only", Limits(rpm=60), 1000)
        await limit.settle(no_tokens, 5)  # no token limit: nothing to give back
        assert no_tokens.token_step == 0 and (await limit.state("rpm-only", limits)).pace.token_tat is None

    run(redis_url, body)


def test_with_both_limits_the_tighter_one_decides(redis_url: str) -> None:
    clock = Clock()
    limits = Limits(rpm=60, tpm=6000, burst_s=0.5)

    async def body(client: Redis) -> None:
        limit = limiter(client, clock)
        assert [(await limit.acquire("tokens", limits, 200)).waited for _ in range(3)] == [0.0, 1.5, 3.5]
        assert [(await limit.acquire("requests", limits, 10)).waited for _ in range(3)] == [0.0, 0.5, 1.5]

    run(redis_url, body)


def test_a_call_larger_than_the_burst_is_admitted(redis_url: str) -> None:
    clock = Clock()

    async def body(client: Redis) -> None:
        limit = limiter(client, clock)
        for burst_s in (0.5, 0.0):
            limits, spec = Limits(tpm=600, burst_s=burst_s), f"burst-{burst_s}"  # 0.1 s per token
            huge = await limit.acquire(spec, limits, 100_000)  # nearly three hours of quota
            assert huge.waited == 0.0
            after = await limit.acquire(spec, limits, 100_000)  # waits for the backlog, not its own cost
            assert after.waited == 10_000 - burst_s

    run(redis_url, body)


def test_a_penalty_pauses_every_worker_until_retry_after(redis_url: str) -> None:
    clock = Clock(100.0)
    limits = Limits(rpm=60)

    async def body(a: Redis, b: Redis) -> None:
        first, second = limiter(a, clock), limiter(b, clock)
        await first.penalize(SPEC, 10.0, limits)
        clock.now = 101.0
        ticket = await second.acquire(SPEC, limits, 0)
        assert (ticket.at, ticket.waited) == (110.0, 9.0)
        state = await second.state(SPEC, limits)
        assert state.cooling and state.cooldown_until == 110.0

        # no rpm/tpm at all: a 429 still pauses everyone (the default cooldown), and only that
        await first.penalize("unlimited", None, Limits())
        assert (await second.acquire("unlimited", Limits(), 0)).waited == DEFAULT_COOLDOWN_S
        clock.now = 200.0
        assert [(await second.acquire("unlimited", Limits(), 0)).waited for _ in range(3)] == [0.0] * 3

        await first.penalize("capped", 86_400.0, limits)  # a retry-after of a day is capped
        assert (await second.state("capped", limits)).cooldown_until == 200.0 + MAX_COOLDOWN_S

    run(redis_url, body, clients=2)


def test_after_a_penalty_the_rate_is_reduced_then_recovers_linearly(redis_url: str) -> None:
    clock = Clock()
    limits = Limits(rpm=60, burst_s=0.5)

    async def body(client: Redis) -> tuple[list[float], list[float]]:
        limit = limiter(client, clock)
        await limit.penalize(SPEC, 10.0, limits)  # cooldown until 1010, then 0.7 of the rate
        factors = []
        for t in (1005.0, 1010.0, 1019.0, 1028.0, 1010 + RECOVERY_S):
            clock.now = t
            factors.append((await limit.state(SPEC, limits)).factor)
        clock.now = 1001.0
        await limit.penalize("crowd", 10.0, limits)  # cooldown until 1011
        starts = [(await limit.acquire("crowd", limits, 0)).at for _ in range(40)]
        return factors, starts

    factors, starts = run(redis_url, body)
    assert factors == pytest.approx([0.7, 0.7, 0.85, 1.0, 1.0], abs=1e-12)
    # after the pause: no burst, one call per 60/rpm/factor(t) seconds, the factor climbing to 1
    assert starts[0] == 1011.0
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    expected = [1 / min(1.0, 0.7 + (t - 1011.0) / RECOVERY_S) for t in starts[:-1]]
    assert gaps == pytest.approx(expected, abs=1e-9)
    assert gaps[0] == pytest.approx(1 / 0.7) and gaps[-1] == pytest.approx(1.0)


def test_repeated_penalties_bottom_out_and_recover_within_recovery_s(redis_url: str) -> None:
    clock = Clock()
    limits = Limits(rpm=60)

    async def body(client: Redis) -> list[float]:
        limit = limiter(client, clock)
        for _ in range(10):  # 0.7 ** 10 < MIN_FACTOR
            await limit.penalize(SPEC, 1.0, limits)
            clock.now += PENALTY_GAP_S
        pace = (await limit.state(SPEC, limits)).pace
        end = pace.recover_from
        assert end is not None and pace.factor0 == MIN_FACTOR
        factors = []
        for t in (end, end + RECOVERY_S / 2, end + RECOVERY_S * (1 - MIN_FACTOR), end + RECOVERY_S):
            clock.now = t
            factors.append((await limit.state(SPEC, limits)).factor)
        return factors

    assert run(redis_url, body) == pytest.approx([MIN_FACTOR, 0.6, 1.0, 1.0])


def test_penalties_within_the_gap_decrease_the_rate_once(redis_url: str) -> None:
    clock = Clock()
    limits = Limits(rpm=60)

    async def body(a: Redis, b: Redis) -> list[tuple[float, float | None]]:
        workers, seen = [limiter(a, clock), limiter(b, clock)], []
        for k, t in enumerate((1000.0, 1000.5, 1001.9, 1000 + PENALTY_GAP_S)):
            clock.now = t
            await workers[k % 2].penalize(SPEC, 5.0 + k, limits)  # the same burst of 429s
            state = await workers[0].state(SPEC, limits)
            seen.append((state.pace.factor0 or 1.0, state.cooldown_until))
        return seen

    seen = run(redis_url, body, clients=2)
    assert [f for f, _ in seen] == pytest.approx([0.7, 0.7, 0.7, 0.49])
    assert [c for _, c in seen] == [1005.0, 1006.5, 1008.9, 1010.0]  # the pause still extends


def test_a_call_sleeping_on_its_reservation_waits_out_a_penalty_seen_meanwhile(redis_url: str) -> None:
    clock, limits = Clock(), Limits(rpm=60)

    async def body(client: Redis) -> Ticket:
        limit = SharedRateLimit(client, clock=clock, sleep=lambda s: sleep(s))
        armed = []

        async def sleep(seconds: float) -> None:
            if armed and armed.pop():  # a 429 reaches this process while the call sleeps
                await limit.penalize(SPEC, 30.0, limits)
            clock.now += seconds

        for _ in range(3):
            await limit.acquire(SPEC, limits, 0)
        clock.now, armed[:] = 1000.0, [True]
        return await limit.acquire(SPEC, limits, 0)  # reserved for 1002.5, before the penalty

    ticket = run(redis_url, body)
    assert ticket.at == 1030.0 and ticket.waited == 30.0


def test_specs_are_independent(redis_url: str) -> None:
    clock, limits = Clock(), Limits(rpm=60, tpm=6000)

    async def body(client: Redis) -> None:
        limit = limiter(client, clock)
        for _ in range(5):
            await limit.acquire("anthropic/a", limits, 1000)
        await limit.penalize("anthropic/a", 30.0, limits)
        ticket = await limit.acquire("anthropic/b", limits, 10)
        state = await limit.state("anthropic/b", limits)
        assert ticket.waited == 0.0 and state.factor == 1.0 and not state.cooling
        assert (await limit.state("anthropic/a", limits)).wait > 30

    run(redis_url, body)


def test_state_expires_once_it_no_longer_matters(redis_url: str) -> None:
    clock = Clock()

    async def body(client: Redis) -> None:
        limit = limiter(client, clock)
        await limit.acquire("free", Limits(), 100)  # no limit, no cooldown: nothing is written
        assert not await client.exists(limit.key("free"))

        for _ in range(10):
            await limit.acquire(SPEC, Limits(rpm=60), 0)  # the request TAT is now 1010
        assert 12_000 - 500 < await client.pttl(limit.key(SPEC)) <= 12_000  # 10 s + the margin

        await limit.penalize("paused", None, Limits())  # cooldown 1005, recovered 1005 + 0.3 * 60
        assert 25_000 - 500 < await client.pttl(limit.key("paused")) <= 25_000

        real = SharedRateLimit(client)  # Redis's clock: the key really goes (after ~2 s)
        await real.acquire("real", Limits(rpm=6000), 0)
        for _ in range(100):
            if not await client.exists(real.key("real")):
                break
            await asyncio.sleep(0.05)
        assert not await client.exists(real.key("real"))
        assert (await real.acquire("real", Limits(rpm=6000), 0)).waited == 0.0

    run(redis_url, body)


def test_the_lua_scripts_and_the_pure_model_agree(redis_url: str) -> None:
    """Random steps (acquire, settle, penalize, time passing), each run both in Redis and in
    workers.pacing; the stored state, the tickets and the expiries must match to the bit."""

    async def body(client: Redis) -> int:
        checked = 0
        for seed in range(12):
            rng = random.Random(seed)
            clock = Clock(1.7e9 + rng.random() * 1e6)  # epoch-sized times, as in production
            limit, spec = limiter(client, clock), f"model-{seed}"
            limits = Limits(
                rpm=rng.choice([None, rng.uniform(1, 5000)]),
                tpm=rng.choice([None, rng.uniform(1000, 1e6)]),
                burst_s=rng.choice([0.0, 0.5, rng.uniform(0, 20)]),
            )
            rint, tint = pacing.interval(limits.rpm), pacing.interval(limits.tpm)
            model, tickets = Pace(), []
            for _ in range(80):
                clock.now += rng.choice([0.0, rng.expovariate(2.0), rng.uniform(0, 120)])
                op, wrote = rng.random(), True
                if op < 0.6:
                    tokens = rng.randint(0, 20_000)
                    ticket = await limit.acquire(spec, limits, tokens)
                    model, adm = pacing.admit(
                        model, clock.now, request_interval=rint, token_interval=tint,
                        burst_s=limits.burst_s, tokens=tokens,
                    )
                    assert (ticket.at, ticket.waited, ticket.token_step) == (adm.start, adm.wait, adm.token_step)
                    tickets.append(ticket)
                    wrote = limits.active
                elif op < 0.85 and tickets:
                    ticket, actual = rng.choice(tickets), rng.randint(0, 25_000)
                    await limit.settle(ticket, actual)
                    wrote = actual != ticket.tokens and ticket.token_step > 0
                    if wrote:
                        model = pacing.settle(model, clock.now, actual - ticket.tokens, ticket.token_step)
                else:
                    retry_after = rng.choice([None, 0.0, rng.uniform(0, 30), 1e5])
                    await limit.penalize(spec, retry_after, limits)
                    model = pacing.penalize(
                        model, clock.now, pacing.cooldown_for(retry_after), burst_s=limits.burst_s,
                        requests=bool(limits.rpm), tokens=bool(limits.tpm),
                    )
                state = await limit.state(spec, limits)
                assert state.pace == model
                assert state.factor == pacing.factor_at(model, clock.now)
                if wrote:  # the expiry set by this step (real time runs on meanwhile)
                    ttl = pacing.ttl_ms(model, clock.now)
                    assert ttl - 1000 < await client.pttl(limit.key(spec)) <= ttl
                checked += 1
        return checked

    assert run(redis_url, body) == 12 * 80


def test_real_time_two_workers_space_concurrent_calls_on_the_redis_clock(redis_url: str) -> None:
    limits = Limits(rpm=600, burst_s=0.5)  # 0.1 s apart after a burst of 0.5 s

    async def body(a: Redis, b: Redis) -> list[tuple[int, Ticket, float]]:
        workers = [SharedRateLimit(a), SharedRateLimit(b)]

        async def call(k: int) -> tuple[int, Ticket, float]:
            ticket = await workers[k % 2].acquire(SPEC, limits, 0)
            seconds, micros = await a.time()
            return k % 2, ticket, seconds + micros / 1e6  # Redis's clock when the call went

        return list(await asyncio.gather(*(call(k) for k in range(30))))

    done = sorted(run(redis_url, body, clients=2), key=lambda d: d[1].at)
    at = [ticket.at for _, ticket, _ in done]
    for i in range(len(at)):  # GCRA: j - i calls after call i need (j - i) * 0.1 s - burst
        for j in range(i + 1, len(at)):
            assert at[j] - at[i] >= (j - i) * 0.1 - 0.5 - 1e-5  # doubles at epoch scale: ~1e-7 each
    gaps = [b - a for a, b in zip(at[5:], at[6:])]
    assert gaps == pytest.approx([0.1] * len(gaps), abs=0.05)  # a steady 10 a second after the burst
    assert at[-1] - at[0] == pytest.approx(29 * 0.1 - 0.5, abs=0.05)
    assert all(went >= ticket.at - 0.01 for _, ticket, went in done)  # each call slept until its turn
    assert all(ticket.waited > 0.1 for _, ticket, _ in done[8:])
    assert {worker for worker, _, _ in done[10:]} == {0, 1}  # both workers drew from one schedule
