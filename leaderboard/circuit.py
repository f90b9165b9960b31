"""A judge's circuit breaker: the state machine, pure (no Redis, no clock; time is passed in).

Why: a provider that fails everything must not be asked again and again. Retries per call and
per match multiply every call by up to a dozen sends, and with dozens of matches in flight a dead
provider got thousands of requests before a run's streak of failed *matches* stopped it. The
breaker counts failed *calls*, across every worker (its state lives in Redis, `workers.breaker`
runs the same steps as Lua scripts; this module is their reference model, and a test drives both
with the same random steps):

- closed: calls go. `streak` counts failed calls in a row (a 5xx, a 529, a timeout, a lost
  connection, a 429 that named no retry-after); any answer resets it. At `failures` in a row
  it opens.
- open (until `until`): no call goes; callers wait.
- half-open (the open time is over): exactly one caller gets the probe; the others wait for its
  answer. The probe answered: closed again. The probe failed: open again for twice as long
  (`open_s`, doubled per failed probe, at most `max_open_s`). A probe that never reports (its
  worker died) is presumed lost after `probe_ttl_s`, and another caller probes.
- down (`probes` probes failed in a row): callers fail at once instead of waiting, paying
  nothing, so their matches fail with the reason and the run stops (`failing`). One probe still
  goes after each open period, so a provider that comes back closes the breaker again.

A call that learnt nothing about the provider (a 429 with retry-after is the rate limiter's
business; a call never sent) changes nothing, except that a probe that learnt nothing lets
another caller probe. Calls sent before the breaker opened may still fail afterwards: they
lengthen the streak and nothing else. So a provider that fails everything receives at most
`failures` calls + the calls in flight when it opened + `probes` probes before callers fail.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum

MAX_OPEN_S = 60.0
"""The longest a breaker stays open between probes (unless `open_s` itself is longer)."""
PROBE_POLL_S = 0.25
"""How often a caller waiting on a probe in flight looks again."""
MEMORY_S = 600.0
"""A breaker's state is forgotten this long after it last matters (its open time, its probe)."""


class CallResult(str, Enum):
    """What one call told about its provider."""

    ANSWERED = "answered"  # a reply, or a refusal of the request itself (4xx): the provider is up
    FAILED = "failed"  # 5xx, 529, a timeout, a lost connection, a 429 without retry-after
    UNKNOWN = "unknown"  # nothing: a 429 with retry-after, a call never sent, a call cancelled


class Admit(str, Enum):
    """What a caller may do now."""

    GO = "go"  # closed: send
    PROBE = "probe"  # half-open, and this caller is the probe: send
    WAIT = "wait"  # open, or a probe is in flight: ask again after `wait`
    DOWN = "down"  # open after `probes` failed probes: fail without sending


@dataclass(frozen=True)
class BreakerConfig:
    """`failures` failed calls in a row open the breaker (0: it never opens); it stays open
    `open_s`, doubled after each failed probe up to `max_open_s`; after `probes` failed probes in
    a row the judge is down (0: never; callers keep waiting); a probe not reported within
    `probe_ttl_s` is presumed lost."""

    failures: int = 10
    open_s: float = 5.0
    probes: int = 3
    probe_ttl_s: float = 150.0
    max_open_s: float = MAX_OPEN_S

    def __post_init__(self) -> None:
        for name in ("open_s", "probe_ttl_s", "max_open_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"BreakerConfig.{name} must be a finite number > 0, not {value!r}")
        if self.failures < 0 or self.probes < 0:
            raise ValueError("BreakerConfig.failures and .probes must be >= 0")

    def open_for(self, trips: int) -> float:
        """How long the breaker stays open after `trips` failed probes (0: it just opened)."""
        return min(max(self.max_open_s, self.open_s), self.open_s * 2.0 ** min(trips, 60))


@dataclass(frozen=True)
class Circuit:
    """One judge's breaker, as stored (all defaults: closed with no failure, i.e. no state)."""

    streak: int = 0  # failed calls in a row
    until: float | None = None  # open until then; None: closed
    trips: int = 0  # failed probes in a row since it opened
    probe: str | None = None  # the token of the probe in flight
    probe_until: float | None = None  # when that probe is presumed lost
    why: str = ""  # the last failure's message

    @property
    def closed(self) -> bool:
        return self.until is None

    def down(self, config: BreakerConfig) -> bool:
        """Whether callers fail at once rather than wait (see the module docstring)."""
        return self.until is not None and config.probes > 0 and self.trips >= config.probes


@dataclass(frozen=True)
class Admission:
    """What `admit` decided, with the state it decided on (for the caller's messages)."""

    admit: Admit
    wait: float  # WAIT: seconds before asking again; else 0
    streak: int
    trips: int
    why: str


def admit(circuit: Circuit, now: float, token: str, config: BreakerConfig) -> tuple[Circuit, Admission]:
    """May a call go now? `token` names the caller, kept as the probe's when it gets the probe."""

    def said(kind: Admit, wait: float = 0.0) -> Admission:
        return Admission(kind, wait, circuit.streak, circuit.trips, circuit.why)

    if circuit.until is None:
        return circuit, said(Admit.GO)
    down = circuit.down(config)
    if now < circuit.until:
        return circuit, said(Admit.DOWN) if down else said(Admit.WAIT, circuit.until - now)
    if circuit.probe is not None and circuit.probe_until is not None and circuit.probe_until > now:
        return circuit, said(Admit.DOWN) if down else said(Admit.WAIT, min(PROBE_POLL_S, circuit.probe_until - now))
    return replace(circuit, probe=token, probe_until=now + config.probe_ttl_s), said(Admit.PROBE)


def record(circuit: Circuit, now: float, token: str, result: CallResult, why: str,
           config: BreakerConfig) -> Circuit:
    """The call named `token` ended with `result` (`why`: its error): the new state."""
    if result is CallResult.ANSWERED:
        return Circuit()
    probing = circuit.probe is not None and circuit.probe == token
    if result is CallResult.UNKNOWN:
        return replace(circuit, probe=None, probe_until=None) if probing else circuit
    streak = circuit.streak + 1
    if probing:
        trips = circuit.trips + 1
        return Circuit(streak, now + config.open_for(trips), trips, None, None, why)
    if circuit.until is None and config.failures > 0 and streak >= config.failures:
        return Circuit(streak, now + config.open_for(0), 0, None, None, why)
    return replace(circuit, streak=streak, why=why)


def expires_in(circuit: Circuit, now: float) -> float:
    """Seconds the state must be kept: MEMORY_S past the last time it matters."""
    end = now
    for t in (circuit.until, circuit.probe_until):
        if t is not None and t > end:
            end = t
    return end - now + MEMORY_S
