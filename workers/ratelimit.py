"""A requests- and tokens-per-minute limit per judge, shared by every worker through Redis.

A provider's quota is per account and per model: requests per minute and input+output tokens
per minute. Workers keep many calls in flight, on many machines, so the limit lives in Redis.

The algorithm is GCRA (the generic cell rate algorithm) with reservation, "virtual scheduling":
per judge and per limit Redis keeps a theoretical arrival time (TAT). `acquire` runs ONE Lua
script (EVALSHA, by its text after a Redis restart: `workers.lua`) that reads Redis's own clock (`TIME`,
so all machines share one clock), computes when the call may start (once every active limit's
TAT minus the allowed backlog `burst_s` has passed, and after any cooldown), moves the TATs on
by the call's cost, and returns the wait. The caller sleeps that long and goes; it does not ask
Redis again. Why GCRA rather than windows or a token bucket polled in a loop:
- smooth: calls are spaced one emission interval apart after at most `burst_s` of backlog, so
  no window edge lets twice the rate through (the old fixed one-minute windows did);
- one Redis command per call, whatever the contention (no retry loop hammering Redis);
- FIFO: waiting callers are spread out in the order they asked, nobody starves.
The arithmetic is `workers.pacing` (pure, the scripts' reference model; see it for the state).

Adaptive: when the provider answers 429/529, the gate may `penalize`: a cooldown (the reply's
retry-after, capped; without one, a pause that grows with the overloads in a row, `pacing.Overload`)
that every worker's next `acquire` waits out, and lowers the rate by DECREASE (at most once per
PENALTY_GAP_S, however many workers report the same burst); the rate then recovers linearly,
computed inside the acquire script from the stored factor and time. Calls that already hold a
reservation and are sleeping when *this process* learns of a penalty re-reserve when they wake
(a local check, no Redis command); sleepers in other processes go at their reserved time.

With no limit set and no cooldown, `acquire` costs one read-only script call (to see a cooldown
another worker may have set) and writes nothing. State lives in one hash per judge
(`prefix + spec`), which expires on its own once idle (PEXPIRE just past the last time it
matters).
"""
from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from string import Template

from redis.asyncio import Redis

from . import pacing
from .lua import LuaScript
from .pacing import (  # noqa: F401  (re-exported: the tunables live with the arithmetic)
    DECREASE,
    DEFAULT_COOLDOWN_S,
    EXPIRY_MARGIN_S,
    MAX_COOLDOWN_S,
    MIN_FACTOR,
    PENALTY_GAP_S,
    RECOVERY_S,
    Pace,
)


@dataclass(frozen=True)
class Limits:
    """A judge's quota. `burst_s`: the backlog allowed, in seconds of the rate (how much work
    may go at once); with rpm=60 and burst_s=5, six calls go at once, then one a second."""

    rpm: float | None = None  # requests per minute; None or 0: no request limit
    tpm: float | None = None  # input+output tokens per minute; None or 0: no token limit
    burst_s: float = 0.5

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm", "burst_s"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"Limits.{name} must be a finite number >= 0, not {value!r}")

    @property
    def active(self) -> bool:
        """Whether any limit is set."""
        return bool(self.rpm) or bool(self.tpm)


@dataclass(frozen=True)
class Ticket:
    """What `acquire` reserved, to `settle` once the call's real tokens are known."""

    spec: str
    tokens: int  # tokens reserved
    at: float  # the (Redis-clock) time the call was admitted
    waited: float  # seconds the caller waited
    token_step: float = 0.0  # seconds of token allowance charged per token (0: no token limit)


@dataclass(frozen=True)
class LimitState:
    """A judge's shared limit as of `now` (Redis clock), for status pages, metrics and tests."""

    spec: str
    now: float
    factor: float  # the rate multiplier now (1: full rate)
    cooldown_until: float | None  # no call starts before this (None: never penalized lately)
    wait: float  # how long a call acquired now would wait
    pace: Pace  # the raw stored state

    @property
    def cooling(self) -> bool:
        return self.cooldown_until is not None and self.cooldown_until > self.now


@dataclass(frozen=True)
class _Penalty:
    at: float
    until: float


# Every script: KEYS[1] the judge's hash; ARGV[1] the time, '' for Redis's TIME (tests pass one).
# Numbers go out as %.17g strings so that they round-trip exactly.
_PRELUDE = """
local now
if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local h = redis.call('HMGET', KEYS[1], 'r', 't', 'c', 'f', 's', 'd')
local tr, tt, cool, f0, since, dec =
  tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), tonumber(h[4]), tonumber(h[5]), tonumber(h[6])
local function fmt(x) return string.format('%.17g', x) end
local function factor_at(t)
  if not f0 or not since then return 1 end
  return math.min(1, f0 + math.max(0, t - since) / $RECOVERY_S)
end
local function expire()
  local e = now
  if tr and tr > e then e = tr end
  if tt and tt > e then e = tt end
  if cool and cool > e then e = cool end
  if f0 and since then
    local rec = since + (1 - f0) * $RECOVERY_S
    if rec > e then e = rec end
  end
  if dec and dec + $PENALTY_GAP_S > e then e = dec + $PENALTY_GAP_S end
  redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil((e - now + $EXPIRY_MARGIN_S) * 1000)))
end
"""

# ARGV: now, request interval|'', token interval|'', burst_s, tokens -> now, start, wait, factor, token step
_ACQUIRE = """
local rint, tint, burst, tokens = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local start = now
if cool and cool > start then start = cool end
if rint then
  local tat = math.max(tr or now, now)
  if tat - burst > start then start = tat - burst end
end
if tint then
  local tat = math.max(tt or now, now)
  if tat - burst > start then start = tat - burst end
end
local factor = factor_at(start)
local tstep = 0
if rint then
  tr = math.max(tr or start, start) + rint / factor
  redis.call('HSET', KEYS[1], 'r', fmt(tr))
end
if tint then
  tstep = tint / factor
  tt = math.max(tt or start, start) + tokens * tstep
  redis.call('HSET', KEYS[1], 't', fmt(tt))
end
if rint or tint then expire() end
return {fmt(now), fmt(start), fmt(start - now), fmt(factor), fmt(tstep)}
"""

# ARGV: now, extra tokens, token step -> now, token TAT
_SETTLE = """
local extra, step = tonumber(ARGV[2]), tonumber(ARGV[3])
local base = math.max(tt or now, now)
tt = math.max(now, base + extra * step)
redis.call('HSET', KEYS[1], 't', fmt(tt))
expire()
return {fmt(now), fmt(tt)}
"""

# ARGV: now, cooldown_s, burst_s, requests limited 0|1, tokens limited 0|1 -> now, until, factor0
_PENALIZE = """
local cooldown, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
local current = factor_at(now)
local untl = now + cooldown
if cool and cool > untl then untl = cool end
if not dec or now - dec >= $PENALTY_GAP_S then
  f0 = math.max($MIN_FACTOR, current * $DECREASE)
  dec = now
else
  f0 = current
end
cool, since = untl, untl
local floor = untl + burst
if ARGV[4] == '1' and (not tr or floor > tr) then tr = floor; redis.call('HSET', KEYS[1], 'r', fmt(tr)) end
if ARGV[5] == '1' and (not tt or floor > tt) then tt = floor; redis.call('HSET', KEYS[1], 't', fmt(tt)) end
redis.call('HSET', KEYS[1], 'c', fmt(cool), 'f', fmt(f0), 's', fmt(since), 'd', fmt(dec))
expire()
return {fmt(now), fmt(untl), fmt(f0)}
"""

# ARGV: now -> now, then the six fields ('' when absent)
_STATE = """
return {fmt(now), h[1] or '', h[2] or '', h[3] or '', h[4] or '', h[5] or '', h[6] or ''}
"""


def _script(body: str) -> str:
    constants = {
        name: repr(float(getattr(pacing, name)))
        for name in ("RECOVERY_S", "PENALTY_GAP_S", "EXPIRY_MARGIN_S", "MIN_FACTOR", "DECREASE")
    }
    return Template(_PRELUDE + body).substitute(constants)


def _num(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _floats(reply: Sequence[bytes | str]) -> list[float | None]:
    return [float(v) if v not in (b"", "") else None for v in reply]


class SharedRateLimit:
    """Paces calls to each judge spec across every worker that shares this Redis.

    `clock` is for tests only: a time source used instead of Redis's TIME (production passes
    none, so every machine reads the one Redis clock)."""

    def __init__(
        self,
        redis: Redis,
        *,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        prefix: str = "joust:rate:",
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.redis = redis
        self.prefix = prefix
        self._sleep = sleep
        self._clock = clock
        self._acquire = LuaScript(redis, _script(_ACQUIRE))
        self._settle = LuaScript(redis, _script(_SETTLE))
        self._penalize = LuaScript(redis, _script(_PENALIZE))
        self._state = LuaScript(redis, _script(_STATE))
        self._penalties: dict[str, _Penalty] = {}

    def key(self, spec: str) -> str:
        """The Redis hash that holds `spec`'s state."""
        return self.prefix + spec

    async def acquire(self, spec: str, limits: Limits, tokens: int) -> Ticket:
        """Wait until a call to judge `spec` costing `tokens` (estimated input + max output) may
        go, and reserve it."""
        if tokens < 0:
            raise ValueError("tokens must be >= 0")
        args = [_num(pacing.interval(limits.rpm)), _num(pacing.interval(limits.tpm)), _num(limits.burst_s), str(tokens)]
        waited = 0.0
        while True:
            now, start, wait, _factor, token_step = _floats(await self._run(self._acquire, spec, args))
            assert now is not None and start is not None and wait is not None and token_step is not None
            if wait > 0:
                await self._sleep(wait)
                waited += wait
            # A penalty this process saw after the reservation, whose cooldown covers its start:
            # reserve again rather than send a call into the pause.
            penalty = self._penalties.get(spec)
            if penalty is None or penalty.at < now or start >= penalty.until:
                return Ticket(spec=spec, tokens=tokens, at=start, waited=waited, token_step=token_step)

    async def settle(self, ticket: Ticket, tokens: int) -> None:
        """The call's actual input+output tokens: give back (or take more of) the token allowance.

        No Redis call when there is no token limit or the estimate was exact."""
        if tokens < 0:
            raise ValueError("tokens must be >= 0")
        extra = tokens - ticket.tokens
        if extra == 0 or ticket.token_step == 0:
            return
        await self._run(self._settle, ticket.spec, [str(extra), _num(ticket.token_step)])

    async def penalize(self, spec: str, pause_s: float | None, limits: Limits) -> None:
        """The provider said 429/529: every worker pauses for `pause_s` (a retry-after, or the
        gate's pause for overloads in a row; None: DEFAULT_COOLDOWN_S; at most MAX_COOLDOWN_S) and
        then runs at a reduced rate that recovers."""
        args = [
            _num(pacing.cooldown_for(pause_s)),
            _num(limits.burst_s),
            "1" if limits.rpm else "0",
            "1" if limits.tpm else "0",
        ]
        now, until, _factor0 = _floats(await self._run(self._penalize, spec, args))
        assert now is not None and until is not None
        known = self._penalties.get(spec)
        self._penalties[spec] = _Penalty(at=now, until=max(until, known.until) if known else until)

    async def state(self, spec: str, limits: Limits) -> LimitState:
        """`spec`'s limit as of now: factor, cooldown, and the wait a call would face."""
        now, *fields = _floats(await self._run(self._state, spec, []))
        assert now is not None
        pace = Pace(*fields)
        _, admission = pacing.admit(
            pace,
            now,
            request_interval=pacing.interval(limits.rpm),
            token_interval=pacing.interval(limits.tpm),
            burst_s=limits.burst_s,
            tokens=0,
        )
        return LimitState(
            spec=spec,
            now=now,
            factor=pacing.factor_at(pace, now),
            cooldown_until=pace.cooldown_until,
            wait=admission.wait,
            pace=pace,
        )

    async def _run(self, script: LuaScript, spec: str, args: list[str]) -> list[bytes | str]:
        now = "" if self._clock is None else _num(self._clock())
        return await script(keys=[self.key(spec)], args=[now, *args])

