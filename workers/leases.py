"""Claims on judgements being paid for, and leases on matches being judged, kept alive by a
heartbeat, in Redis.

A worker process holds many matches at once. For each it holds:

- a **lease** on the match (a member of the sorted set `joust:leases`, scored by its expiry), from
  the moment the queue hands the match over until the match ends. A process that dies stops
  renewing; its leases expire after `ttl_s`, and any live worker's reaper takes them and puts the
  matches back on the queue: seconds, not the minutes RQ takes to call a job abandoned. Taking
  an expired lease moves it to `joust:reaping` for one ttl, and only once its match is back on
  the queue (which needs the database, to leave finished matches alone) is it removed: a reaper
  that cannot hand it out (the database is down, the reaper died) gives it back
  (`unreaped`) or lets it lapse again, and a reaper takes it later. Nothing is dropped before it
  is safely handed out again.
- a **claim** on the judgement key it is paying for (`joust:judging:<key>`, a token with a TTL),
  so that a twin match (another tournament over the same pair) waits for this judgement instead
  of paying for it again. A claim is renewed with the leases, so a slow provider or a loaded
  machine never lets it lapse while its calls are in flight, and a dead worker's claim lapses
  within `ttl_s`.

One heartbeat renews every lease and claim of the process in a single script call. Expiry times
are read from Redis's clock, so processes on several machines agree on them.
"""
from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from redis.asyncio import Redis

from .lua import LuaScript

LEASES = "joust:leases"
REAPING = "joust:reaping"  # expired leases a reaper is handing out again, scored by when it gives up
CLAIM_PREFIX = "joust:judging:"

# KEYS: claim key. ARGV: token, ttl ms. Take the claim when nobody holds it.
_CLAIM = "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0"
# KEYS: claim key. ARGV: token, ttl ms. Extend the claim if it is still ours; 0 if it lapsed.
_CONFIRM = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
# KEYS: claim key. ARGV: token. Give the claim back unless it lapsed and another holds it now.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
# KEYS[1]: the lease set. ARGV: ttl ms, match ids... Lease (or re-lease) matches until now + ttl.
_HOLD = """
local t = redis.call('TIME')
local expiry = tonumber(t[1]) + tonumber(t[2]) / 1e6 + tonumber(ARGV[1]) / 1000
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], expiry, ARGV[i]) end
return #ARGV - 1
"""
# KEYS[1]: the lease set, KEYS[2..]: claim keys. ARGV[1]: ttl ms, ARGV[2]: n match ids, then the
# match ids, then one token per claim key. Renews what is still ours; returns the lost claims'
# positions (1-based) and then the lost leases' match ids, as "c:<i>" and "m:<id>".
_RENEW = """
local t = redis.call('TIME')
local ttl = tonumber(ARGV[1])
local expiry = tonumber(t[1]) + tonumber(t[2]) / 1e6 + ttl / 1000
local n = tonumber(ARGV[2])
local lost = {}
for i = 1, n do
  local id = ARGV[2 + i]
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', expiry, id) == 0 and not redis.call('ZSCORE', KEYS[1], id) then
    table.insert(lost, 'm:' .. id)
  end
end
for i = 2, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[2 + n + i - 1] then
    redis.call('PEXPIRE', KEYS[i], ttl)
  else
    table.insert(lost, 'c:' .. (i - 1))
  end
end
return lost
"""
# KEYS[1]: the lease set, KEYS[2]: the reaping set. ARGV: the most to take, ttl ms. Takes the
# expired leases, and the reapings that lapsed (their reaper died or could not hand them out)
# unless their match is leased again meanwhile, into the reaping set for one ttl.
_REAP = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local most = tonumber(ARGV[1])
local until_ = now + tonumber(ARGV[2]) / 1000
local taken = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, most)) do
  if redis.call('ZSCORE', KEYS[1], id) then
    redis.call('ZREM', KEYS[2], id)
  else
    redis.call('ZADD', KEYS[2], until_, id)
    table.insert(taken, id)
  end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, most - #taken)) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], until_, id)
  table.insert(taken, id)
end
return taken
"""


class Leases:
    """The leases and claims one worker process holds, and their heartbeat."""

    def __init__(self, redis: Redis, ttl_s: float) -> None:
        if ttl_s <= 0:
            raise ValueError("a lease needs a positive ttl")
        self.redis = redis
        self.ttl_ms = max(1, int(ttl_s * 1000))
        self.matches: set[int] = set()
        self.claims: dict[str, str] = {}  # judgement key -> our token
        self._claim = LuaScript(redis, _CLAIM)
        self._release = LuaScript(redis, _RELEASE)
        self._confirm = LuaScript(redis, _CONFIRM)
        self._hold = LuaScript(redis, _HOLD)
        self._renew = LuaScript(redis, _RENEW)
        self._reap = LuaScript(redis, _REAP)
        self._local: dict[str, tuple[asyncio.Lock, int]] = {}

    async def hold(self, match_id: int) -> None:
        """Lease a match this process has taken from the queue."""
        self.matches.add(match_id)
        await self._hold(keys=[LEASES], args=[self.ttl_ms, match_id])

    async def drop(self, match_id: int) -> None:
        """The match ended here: nobody needs to hand it out again."""
        self.matches.discard(match_id)
        await self.redis.zrem(LEASES, match_id)

    async def abandon(self, match_ids: Iterable[int]) -> None:
        """This process stops before these matches end: expire their leases now, so the next
        reaper hands them out again at once instead of after the ttl."""
        ids = [i for i in match_ids]
        self.matches.difference_update(ids)
        if ids:
            await self.redis.zadd(LEASES, {str(i): 0 for i in ids}, xx=True)

    async def claim(self, key: str) -> bool:
        """Take the right to pay for judgement `key`; False when another process holds it."""
        token = uuid.uuid4().hex
        if await self._claim(keys=[CLAIM_PREFIX + key], args=[token, self.ttl_ms]):
            self.claims[key] = token
            return True
        return False

    async def confirm(self, key: str) -> bool:
        """Whether this process still holds claim `key`, extending it if so: asked right before
        each paid call, so that a claim which lapsed while this process was stalled (its
        heartbeat late) is never paid under; a lost claim is forgotten."""
        token = self.claims.get(key)
        if token is None:
            return False
        if await self._confirm(keys=[CLAIM_PREFIX + key], args=[token, self.ttl_ms]):
            return True
        self.claims.pop(key, None)
        return False

    async def release(self, key: str) -> None:
        """Give a claim back (its judgement is stored, or the attempt ended without one)."""
        token = self.claims.pop(key, None)
        if token is not None:
            await self._release(keys=[CLAIM_PREFIX + key], args=[token])

    @asynccontextmanager
    async def exclusive(self, key: str, poll_s: float = 0.2) -> AsyncIterator[None]:
        """Hold claim `key` for the block, waiting while anyone else holds it (a coroutine of
        this process, or another process until it releases or its claim lapses). For work that
        several matches share and must pay for once: a submission's rubric score, a source's
        facts."""
        lock, users = self._local.get(key, (asyncio.Lock(), 0))
        self._local[key] = (lock, users + 1)
        try:
            async with lock:
                while not await self.claim(key):
                    await asyncio.sleep(poll_s)
                try:
                    yield
                finally:
                    await self.release(key)
        finally:
            lock, users = self._local[key]
            if users == 1:
                del self._local[key]
            else:
                self._local[key] = (lock, users - 1)

    async def renew(self) -> tuple[set[int], set[str]]:
        """Extend every lease and claim held to now + ttl: the heartbeat. Returns the matches
        and claim keys found lost (they lapsed before this beat: another process may hold them
        now), which this process then forgets."""
        matches = sorted(self.matches)
        claims = list(self.claims.items())
        if not matches and not claims:
            return set(), set()
        lost = await self._renew(
            keys=[LEASES, *(CLAIM_PREFIX + key for key, _ in claims)],
            args=[self.ttl_ms, len(matches), *matches, *(token for _, token in claims)],
        )
        lost_matches: set[int] = set()
        lost_claims: set[str] = set()
        for item in lost:
            kind, _, value = (item.decode() if isinstance(item, bytes) else str(item)).partition(":")
            if kind == "m":
                lost_matches.add(int(value))
            else:
                lost_claims.add(claims[int(value) - 1][0])
        sent = dict(claims)
        for key in lost_claims:  # forgotten, unless this process claimed it again meanwhile
            if self.claims.get(key) == sent[key]:
                del self.claims[key]
        return lost_matches, lost_claims

    async def reap(self, most: int = 1000) -> list[int]:
        """Take the leases that expired (their process died, or abandoned them): the matches to
        hand out again, then to confirm with `rehanded` (or give back with `unreaped`). Each is
        taken by one reaper only, for one ttl; one not confirmed by then is taken again."""
        return [int(i) for i in await self._reap(keys=[LEASES, REAPING], args=[most, self.ttl_ms])]

    async def rehanded(self, match_ids: Iterable[int]) -> None:
        """These reaped matches are back on the queue (or needed nothing): forget their leases."""
        ids = [str(i) for i in match_ids]
        if ids:
            await self.redis.zrem(REAPING, *ids)

    async def unreaped(self, match_ids: Iterable[int]) -> None:
        """These reaped matches could not be handed out: the next reaper takes them at once."""
        ids = [str(i) for i in match_ids]
        if ids:
            await self.redis.zadd(REAPING, {i: 0 for i in ids}, xx=True)

    async def expiry(self, match_id: int) -> float | None:
        """When a match's lease expires (Redis clock), or None when it has none."""
        return await self.redis.zscore(LEASES, match_id)
