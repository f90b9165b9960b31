"""A circuit breaker per judge, shared by every worker through Redis.

Why shared: a dead provider is dead for every worker on every machine, and each of them keeps
dozens of calls in flight; a breaker per process would let each process spend its own streak on
it. The state machine is `leaderboard.circuit` (pure, the reference model); here each step is one
Lua script on the judge's hash (`prefix + spec`), on Redis's clock, so every worker updates one
state atomically and agrees on when it opens and who probes.

A call asks `admit` before it goes: it returns at once while the breaker is closed (one read-only
script call), waits while it is open or while another worker's probe is in flight, returns a
probe permit to exactly one caller once the open time is over, and raises `JudgeDown` (nothing
sent) once the probes have failed `probes` times in a row. After the call, `record` tells what
it learnt: every answer, so that the streak counts failed calls with no answer between. (An
answer whose call was admitted with no streak may not skip that: with twenty calls in flight and
a fifth of them failing, the answers of calls sent before a failure are the ones that end its
streak, and without them random errors opened the breaker.) So a call costs two script calls,
the second one a DEL when nothing failed lately.

Tests pass `clock` (a time source instead of Redis's TIME) and `sleep`.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from string import Template

from redis.asyncio import Redis

from leaderboard import circuit
from leaderboard.circuit import Admission, Admit, BreakerConfig, CallResult, Circuit

from .errors import JudgeDown
from .lua import LuaScript

log = logging.getLogger(__name__)

WHY_CHARS = 300  # a failure's message is kept this long, for the error of the calls that follow

# KEYS[1] the judge's hash; ARGV[1] the time, '' for Redis's TIME (tests pass one).
_PRELUDE = """
local now
if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local h = redis.call('HMGET', KEYS[1], 'n', 'u', 'k', 'p', 'q', 'w')
local streak, untl, trips = tonumber(h[1]) or 0, tonumber(h[2]), tonumber(h[3]) or 0
local probe, pq, why = h[4], tonumber(h[5]), h[6] or ''
local function fmt(x) return string.format('%.17g', x) end
local function expire()
  local e = now
  if untl and untl > e then e = untl end
  if pq and pq > e then e = pq end
  redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil((e - now + $MEMORY_S) * 1000)))
end
"""

# ARGV: now, token, probes, probe_ttl_s -> kind, wait, streak, trips, why, now
_ADMIT = """
local token, probes, ttl = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local function said(kind, wait) return {kind, fmt(wait), tostring(streak), tostring(trips), why, fmt(now)} end
if not untl then return said('go', 0) end
local down = probes > 0 and trips >= probes
if now < untl then
  if down then return said('down', 0) end
  return said('wait', untl - now)
end
if probe and pq and pq > now then
  if down then return said('down', 0) end
  return said('wait', math.min($PROBE_POLL_S, pq - now))
end
pq = now + ttl
redis.call('HSET', KEYS[1], 'p', token, 'q', fmt(pq))
expire()
return said('probe', 0)
"""

# ARGV: now, token, result, why, failures, open_s, max_open_s
#   -> streak, until|'', trips, now, what changed ('opened', 'reopened', 'closed' or '')
_RECORD = """
local token, result, reason = ARGV[2], ARGV[3], ARGV[4]
local failures, open_s, max_open = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local function state(event) return {tostring(streak), untl and fmt(untl) or '', tostring(trips), fmt(now), event} end
if result == 'answered' then
  local was = untl
  redis.call('DEL', KEYS[1])
  streak, untl, trips = 0, nil, 0
  if was then return state('closed') end
  return state('')
end
local probing = probe and probe == token
if result == 'unknown' then
  if probing then redis.call('HDEL', KEYS[1], 'p', 'q') end
  return state('')
end
local event = ''
local function open_for(k) return math.min(math.max(max_open, open_s), open_s * 2 ^ math.min(k, 60)) end
streak = streak + 1
if probing then
  trips = trips + 1
  untl, pq = now + open_for(trips), nil
  redis.call('HDEL', KEYS[1], 'p', 'q')
  redis.call('HSET', KEYS[1], 'n', tostring(streak), 'u', fmt(untl), 'k', tostring(trips), 'w', reason)
  event = 'reopened'
elseif not untl and failures > 0 and streak >= failures then
  trips = 0
  untl, pq = now + open_for(0), nil
  redis.call('HDEL', KEYS[1], 'p', 'q')
  redis.call('HSET', KEYS[1], 'n', tostring(streak), 'u', fmt(untl), 'k', '0', 'w', reason)
  event = 'opened'
else
  redis.call('HSET', KEYS[1], 'n', tostring(streak), 'w', reason)
end
expire()
return state(event)
"""

# ARGV: now -> now, then the six fields ('' when absent)
_STATE = """
return {fmt(now), h[1] or '', h[2] or '', h[3] or '', h[4] or '', h[5] or '', h[6] or ''}
"""


def _script(body: str) -> str:
    constants = {name: repr(float(getattr(circuit, name))) for name in ("MEMORY_S", "PROBE_POLL_S")}
    return Template(_PRELUDE + body).substitute(constants)


def _num(value: float) -> str:
    return repr(float(value))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _float(value: bytes | str) -> float | None:
    text = _text(value)
    return float(text) if text else None


@dataclass(frozen=True)
class Recorded:
    """What a call's outcome did: the streak of failed calls after it, and whether it opened the
    breaker ("opened"), failed its probe ("reopened"), closed it ("closed"), or none ("")."""

    streak: int
    event: str = ""


@dataclass(frozen=True)
class Permit:
    """A call's leave to go: whether it is the probe, and the streak when it was admitted."""

    spec: str
    token: str
    probe: bool
    streak: int


class CircuitBreaker:
    """Admits and records the calls to each judge spec for every worker sharing this Redis."""

    def __init__(
        self,
        redis: Redis,
        config: BreakerConfig,
        *,
        prefix: str = "joust:circuit:",
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] | None = None,
        name: str | None = None,
    ) -> None:
        self.redis = redis
        self.config = config
        self.prefix = prefix
        self._sleep = sleep
        self._clock = clock
        self._name = name or f"{socket.gethostname()}:{os.getpid()}"
        self._tokens = itertools.count(1)
        self._admit = LuaScript(redis, _script(_ADMIT))
        self._record = LuaScript(redis, _script(_RECORD))
        self._state = LuaScript(redis, _script(_STATE))

    def key(self, spec: str) -> str:
        """The Redis hash that holds `spec`'s breaker."""
        return self.prefix + spec

    async def admit(self, spec: str) -> Permit:
        """Wait until a call to `spec` may go (see the module docstring); raises JudgeDown."""
        token = f"{self._name}:{next(self._tokens)}"
        while True:
            said = await self.ask(spec, token)
            if said.admit is Admit.GO or said.admit is Admit.PROBE:
                if said.admit is Admit.PROBE:
                    log.info("probing %s with one call after %d failed calls in a row", spec, said.streak)
                return Permit(spec, token, said.admit is Admit.PROBE, said.streak)
            if said.admit is Admit.DOWN:
                raise JudgeDown(
                    f"{spec} is down: {said.streak} calls failed in a row, its last {said.trips} probes "
                    f"among them (the last error: {said.why or 'none given'}); its calls go again once "
                    "a probe is answered", spec=spec)
            await self._sleep(said.wait)

    async def ask(self, spec: str, token: str) -> Admission:
        """One look at `spec`'s breaker for the caller `token` (`admit` without the waiting)."""
        args = [token, str(self.config.probes), _num(self.config.probe_ttl_s)]
        kind, wait, streak, trips, why, _now = await self._run(self._admit, spec, args)
        return Admission(Admit(_text(kind)), float(_text(wait)), int(_text(streak)), int(_text(trips)), _text(why))

    async def record(self, permit: Permit, result: CallResult, why: str = "") -> Recorded:
        """What the permitted call learnt about its provider (no Redis call when it learnt
        nothing and was not the probe)."""
        if result is CallResult.UNKNOWN and not permit.probe:
            return Recorded(permit.streak)
        config = self.config
        args = [permit.token, result.value, why[:WHY_CHARS], str(config.failures), _num(config.open_s),
                _num(config.max_open_s)]
        streak_raw, until_raw, trips_raw, now_raw, event = await self._run(self._record, permit.spec, args)
        streak, until, trips, now = int(_text(streak_raw)), _float(until_raw), int(_text(trips_raw)), _float(now_raw)
        changed = _text(event)
        if changed == "opened" and until is not None and now is not None:
            log.warning("%s failed %d calls in a row: no call goes for %.1f s, then one probe (%s)",
                        permit.spec, streak, until - now, why[:WHY_CHARS])
        elif changed == "reopened" and until is not None and now is not None:
            down = " it is down: calls fail at once until a probe is answered;" if trips >= config.probes > 0 else ""
            log.warning("the probe of %s failed (%d in a row):%s the next goes in %.1f s (%s)",
                        permit.spec, trips, down, until - now, why[:WHY_CHARS])
        elif changed == "closed":
            log.info("%s answered again: its calls go", permit.spec)
        return Recorded(streak, changed)

    async def state(self, spec: str) -> tuple[float, Circuit]:
        """(now on the breaker's clock, `spec`'s breaker) for status pages and tests."""
        now, streak, until, trips, probe, probe_until, why = await self._run(self._state, spec, [])
        circuit_now = _float(now)
        assert circuit_now is not None
        found = Circuit(
            streak=int(_text(streak) or 0),
            until=_float(until),
            trips=int(_text(trips) or 0),
            probe=_text(probe) or None,
            probe_until=_float(probe_until),
            why=_text(why),
        )
        return circuit_now, found

    async def _run(self, script: LuaScript, spec: str, args: Sequence[str]) -> list[bytes | str]:
        now = "" if self._clock is None else _num(self._clock())
        return await script(keys=[self.key(spec)], args=[now, *args])
