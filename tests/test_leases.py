"""Leases on matches and claims on judgements, in a real Redis: a heartbeat keeps them, a dead
holder's lapse within the ttl, and one reaper hands each expired match out."""
from __future__ import annotations

import asyncio

from redis.asyncio import Redis

from workers.leases import CLAIM_PREFIX, LEASES, REAPING, Leases

TTL = 0.4  # seconds: short, so that lapsing is quick to see (asserted on state, never on timing)


async def _pair(redis_url: str) -> tuple[Leases, Leases, list[Redis]]:
    clients = [Redis.from_url(redis_url), Redis.from_url(redis_url)]
    return Leases(clients[0], TTL), Leases(clients[1], TTL), clients


async def _close(clients: list[Redis]) -> None:
    for c in clients:
        await c.aclose()


def test_a_claim_is_exclusive_until_released(redis_url: str) -> None:
    async def run() -> None:
        mine, theirs, clients = await _pair(redis_url)
        assert await mine.claim("k1")
        assert not await theirs.claim("k1")  # the twin waits
        await theirs.release("k1")  # not theirs: nothing happens
        assert not await theirs.claim("k1")
        await mine.release("k1")
        assert await theirs.claim("k1")
        assert "k1" in theirs.claims and "k1" not in mine.claims
        await _close(clients)

    asyncio.run(run())


def test_the_heartbeat_keeps_claims_and_leases_past_their_ttl(redis_url: str) -> None:
    async def run() -> None:
        mine, theirs, clients = await _pair(redis_url)
        await mine.hold(7)
        assert await mine.claim("k")
        for _ in range(6):  # 1.2 s of beats, three ttls
            await asyncio.sleep(TTL / 4)
            assert await mine.renew() == (set(), set())
        assert await theirs.reap() == []  # nothing lapsed
        assert not await theirs.claim("k")
        await _close(clients)

    asyncio.run(run())


def test_a_dead_holders_lease_and_claim_lapse_and_one_reaper_takes_each(redis_url: str) -> None:
    async def run() -> None:
        dead, alive, clients = await _pair(redis_url)
        third = Leases(Redis.from_url(redis_url), TTL)
        for match_id in (1, 2, 3):
            await dead.hold(match_id)
        assert await dead.claim("k")
        await alive.hold(4)
        await asyncio.sleep(TTL * 2)  # `dead` never beats again
        await alive.renew()
        reaped = await asyncio.gather(alive.reap(), third.reap())
        assert sorted(reaped[0] + reaped[1]) == [1, 2, 3]  # each once, whoever pops it
        assert await alive.claim("k")  # the claim lapsed too
        assert await alive.expiry(4) is not None and await alive.expiry(1) is None
        await _close([*clients, third.redis])

    asyncio.run(run())


def test_a_late_beat_reports_what_was_lost(redis_url: str) -> None:
    async def run() -> None:
        slow, other, clients = await _pair(redis_url)
        await slow.hold(9)
        assert await slow.claim("k")
        await asyncio.sleep(TTL * 2)
        assert await other.reap() == [9]
        assert await other.claim("k")
        assert await slow.renew() == ({9}, {"k"})
        assert "k" not in slow.claims  # forgotten: no further call is sent under it
        assert await clients[0].get(CLAIM_PREFIX + "k") is not None  # the other's claim stands
        await _close(clients)

    asyncio.run(run())


def test_abandoned_and_dropped_leases(redis_url: str) -> None:
    async def run() -> None:
        mine, reaper, clients = await _pair(redis_url)
        for match_id in (1, 2):
            await mine.hold(match_id)
        await mine.abandon([1])  # given back: expired at once, no ttl to wait
        await mine.drop(2)  # ended here: nobody hands it out
        assert await reaper.reap() == [1]
        assert await clients[0].zcard(LEASES) == 0
        await _close(clients)

    asyncio.run(run())


def test_a_reaped_lease_is_kept_until_its_match_is_handed_out_again(redis_url: str) -> None:
    """Reaping takes an expired lease for one ttl instead of popping it: a reaper that cannot
    hand the match out (the database is down) gives it back for the next one, a reaper that
    dies lets it lapse and another takes it, and a match leased again meanwhile is left alone."""

    async def run() -> None:
        dead, reaper, clients = await _pair(redis_url)
        other = Leases(Redis.from_url(redis_url), TTL)
        for match_id in (1, 2, 3, 4):
            await dead.hold(match_id)
        await dead.abandon([1, 2, 3, 4])  # expired at once
        assert sorted(await reaper.reap()) == [1, 2, 3, 4]
        assert await other.reap() == []  # taken: nobody else hands them out meanwhile
        await reaper.unreaped([1])  # could not be handed out
        assert await other.reap() == [1]  # the next reaper takes it at once
        await other.rehanded([1])
        await reaper.rehanded([2])  # back on the queue: done with
        await other.hold(4)  # handed out and leased again, but its reaper died before confirming
        deadline = asyncio.get_running_loop().time() + 30
        taken: list[int] = []
        while not taken and asyncio.get_running_loop().time() < deadline:
            await other.renew()  # its heartbeat keeps 4
            taken = await other.reap()  # the reaper of 3 and 4 died: their reapings lapse
            await asyncio.sleep(TTL / 8)
        assert taken == [3]  # 4 is leased again: left to its holder
        await other.rehanded(taken)
        assert await clients[0].zcard(REAPING) == 0 and await other.expiry(4) is not None
        await _close([*clients, other.redis])

    asyncio.run(run())
