"""The arithmetic of the shared rate limit: GCRA with reservation, and the adaptive factor.

Pure: no Redis, no clock; time is passed in (seconds on Redis's clock). `workers.ratelimit` runs
the very same steps as Lua scripts inside Redis, so that every worker on every machine updates
one shared state atomically; this module is their reference model. Each function here performs
the same floating-point operations in the same order as its Lua twin, so the two agree to the
bit (tests/test_ratelimit.py drives both with the same random steps and compares).

State of one judge (`Pace`, one Redis hash; absent fields are None):
- `request_tat`, `token_tat`: GCRA's theoretical arrival times. A limit of `n` per minute has
  emission interval T = 60/n seconds per unit; each admitted call pushes its TAT forward by
  cost * T / factor. A call may start once TAT - burst_s <= its start: the backlog allowed is
  `burst_s` seconds of the rate. Admission looks only at the TAT *before* the call's own cost
  ("virtual scheduling" with reservation), so a call larger than the burst still goes and its
  cost delays the calls after it: nothing deadlocks.
- `cooldown_until`: no call starts before it (set by a 429/529 that named a retry-after, or by
  overloads in a row: `Overload`).
- `factor0`, `recover_from`: the rate multiplier. After a penalty the rate is `factor0` times
  the configured one; from `recover_from` (the end of the cooldown, so the reduced rate is
  actually used after the pause even when retry-after is long) it climbs linearly by
  1/RECOVERY_S per second back to 1: factor(t) = min(1, factor0 + max(0, t - recover_from) /
  RECOVERY_S). From MIN_FACTOR this takes at most RECOVERY_S.
- `decreased_at`: when the factor was last decreased; the many 429s of one burst, reported by
  many workers, decrease it once per PENALTY_GAP_S, not once each.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

DEFAULT_COOLDOWN_S = 5.0
"""The pause `penalize` applies when told none. The gate always tells one: a 429/529's
retry-after, or `Overload.pause` for one without (a lone overload pauses nobody)."""
MAX_COOLDOWN_S = 300.0
"""retry-after is capped: a misbehaving hint must not park every worker for hours."""
DECREASE = 0.7
"""Each penalty multiplies the rate by this (multiplicative decrease)..."""
MIN_FACTOR = 0.1
"""...down to at most a tenth of the configured rate."""
RECOVERY_S = 60.0
"""...and the factor then climbs back by 1/RECOVERY_S per second (additive increase)."""
PENALTY_GAP_S = 2.0
"""At most one decrease per this many seconds, however many workers report the same burst."""
EXPIRY_MARGIN_S = 2.0
"""A judge's state expires this long after it last matters (TAT, cooldown, recovery all past)."""
MAX_OVERLOAD_PAUSE_S = 60.0
"""The longest shared pause overloads in a row make (the circuit breaker takes over beyond)."""


@dataclass(frozen=True)
class Overload:
    """How a 429/529 that named no retry-after is met. Why not a pause for everyone each time: with
    a fifth of calls overloaded, a fixed 5 s pause per 529 kept every worker paused most of the
    run (7.7 times as long as a clean one), while a sparse overload only needs its own call sent
    again after a backoff. So the pause grows with how many calls failed in a row (across every
    worker, counted by the circuit breaker): none below `after` (0: never), then `first_s`,
    doubled with each further failure in a row, at most MAX_OVERLOAD_PAUSE_S. Random overloads
    rarely come `after` in a row; a provider that sheds everything does at once."""

    after: int = 3
    first_s: float = 1.0

    def __post_init__(self) -> None:
        if self.after < 0 or not (math.isfinite(self.first_s) and self.first_s >= 0):
            raise ValueError(f"Overload needs after >= 0 and a finite first_s >= 0, not {self!r}")

    def pause(self, streak: int) -> float:
        """The shared pause after an overload that ended `streak` failed calls in a row."""
        if self.after <= 0 or streak < self.after:
            return 0.0
        return min(MAX_OVERLOAD_PAUSE_S, self.first_s * 2.0 ** min(streak - self.after, 30))


@dataclass(frozen=True)
class Pace:
    """One judge's shared state, as stored in its Redis hash (None: the field is absent)."""

    request_tat: float | None = None
    token_tat: float | None = None
    cooldown_until: float | None = None
    factor0: float | None = None
    recover_from: float | None = None
    decreased_at: float | None = None


@dataclass(frozen=True)
class Admission:
    """What `admit` decided for one call."""

    start: float  # when the call may go
    wait: float  # start - now
    factor: float  # the rate factor at `start`
    token_step: float  # seconds of token allowance charged per token (0: no token limit)


def interval(per_minute: float | None) -> float | None:
    """The emission interval (seconds per unit) of a per-minute limit; None when unlimited."""
    return 60.0 / per_minute if per_minute else None


def cooldown_for(retry_after: float | None) -> float:
    """The pause a 429/529 asks for: retry-after clamped to [0, MAX_COOLDOWN_S], else the default."""
    if retry_after is None or math.isnan(retry_after):
        return DEFAULT_COOLDOWN_S
    return min(MAX_COOLDOWN_S, max(0.0, float(retry_after)))


def factor_at(pace: Pace, t: float) -> float:
    """The rate multiplier at time `t` (1 when never penalized)."""
    if pace.factor0 is None or pace.recover_from is None:
        return 1.0
    return min(1.0, pace.factor0 + max(0.0, t - pace.recover_from) / RECOVERY_S)


def admit(
    pace: Pace,
    now: float,
    *,
    request_interval: float | None,
    token_interval: float | None,
    burst_s: float,
    tokens: int,
) -> tuple[Pace, Admission]:
    """Reserve one call costing 1 request and `tokens` tokens: when it may start, and the new state."""
    start = now
    if pace.cooldown_until is not None and pace.cooldown_until > start:
        start = pace.cooldown_until
    if request_interval is not None:
        tat = max(_or(pace.request_tat, now), now)
        if tat - burst_s > start:
            start = tat - burst_s
    if token_interval is not None:
        tat = max(_or(pace.token_tat, now), now)
        if tat - burst_s > start:
            start = tat - burst_s
    factor = factor_at(pace, start)
    request_tat, token_tat, token_step = pace.request_tat, pace.token_tat, 0.0
    if request_interval is not None:
        request_tat = max(_or(pace.request_tat, start), start) + request_interval / factor
    if token_interval is not None:
        token_step = token_interval / factor
        token_tat = max(_or(pace.token_tat, start), start) + tokens * token_step
    new = replace(pace, request_tat=request_tat, token_tat=token_tat)
    return new, Admission(start=start, wait=start - now, factor=factor, token_step=token_step)


def settle(pace: Pace, now: float, extra_tokens: int, token_step: float) -> Pace:
    """Charge (or refund, when negative) tokens a call used beyond its reservation.

    The token TAT never moves below `now`: a refund frees room from now on, it cannot create
    a burst out of time already past."""
    base = max(_or(pace.token_tat, now), now)
    return replace(pace, token_tat=max(now, base + extra_tokens * token_step))


def penalize(pace: Pace, now: float, cooldown_s: float, *, burst_s: float, requests: bool, tokens: bool) -> Pace:
    """A 429/529: pause until now + cooldown_s, reduce the rate (once per PENALTY_GAP_S).

    The active limits' TATs are pushed to cooldown end + burst_s: the provider's own bucket
    is empty, so calls resume one interval apart instead of in a burst."""
    current = factor_at(pace, now)
    until = now + cooldown_s
    if pace.cooldown_until is not None and pace.cooldown_until > until:
        until = pace.cooldown_until
    if pace.decreased_at is None or now - pace.decreased_at >= PENALTY_GAP_S:
        factor0, decreased_at = max(MIN_FACTOR, current * DECREASE), now
    else:
        factor0, decreased_at = current, pace.decreased_at
    floor = until + burst_s
    request_tat, token_tat = pace.request_tat, pace.token_tat
    if requests and (request_tat is None or floor > request_tat):
        request_tat = floor
    if tokens and (token_tat is None or floor > token_tat):
        token_tat = floor
    return Pace(request_tat, token_tat, until, factor0, until, decreased_at)


def ttl_ms(pace: Pace, now: float) -> int:
    """How long (ms) the state must live: until it is the same as no state, plus a margin."""
    end = now
    for t in (pace.request_tat, pace.token_tat, pace.cooldown_until):
        if t is not None and t > end:
            end = t
    if pace.factor0 is not None and pace.recover_from is not None:
        recovered = pace.recover_from + (1 - pace.factor0) * RECOVERY_S
        if recovered > end:
            end = recovered
    if pace.decreased_at is not None and pace.decreased_at + PENALTY_GAP_S > end:
        end = pace.decreased_at + PENALTY_GAP_S
    return math.ceil((end - now + EXPIRY_MARGIN_S) * 1000)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
