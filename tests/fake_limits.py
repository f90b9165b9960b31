"""Rate limits and random faults for the fake Anthropic server.

Anthropic enforces requests-per-minute and tokens-per-minute limits with token buckets whose
"capacity is continuously replenished up to your maximum limit", checked over short intervals,
so a burst can be refused even when the minute's total would fit. `RateLimiter` does the same:
a requests bucket refilled at rpm/60 per second holding at most `burst_s * rpm/60`, and a
tokens bucket likewise for tpm. A request costs one request and its input tokens plus its
`max_tokens` (reserved when it arrives, as the API counts output tokens from max_tokens at the
start); when it is answered, the unused part of `max_tokens` is given back (or the excess
taken). The real API keeps separate input- and output-token limits; the fake folds them into
one `tpm` bucket. A request is admitted once the bucket holds its cost, or is full when the
cost exceeds the capacity (the bucket then goes into debt), so no request is refused forever.

`Faults` draws a fault kind for a share of requests from a seeded random.Random, so a run can
be replayed.
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from tests.fake_wire import rfc3339


class Fault(StrEnum):
    """What a random fault does to a live request."""

    RATE_LIMITED = "429"  # rate_limit_error with retry-after (unless fault_retry_after is null)
    OVERLOADED = "529"  # overloaded_error with retry-after (unless fault_retry_after is null)
    SERVER_ERROR = "500"  # api_error
    TIMEOUT = "timeout"  # the reply comes fault_timeout_s late, after the client gave up
    MALFORMED = "malformed"  # a 200 whose text holds no verdict


@dataclass
class TokenBucket:
    """A bucket refilled at `rate` per second up to `capacity`; the level may go below 0."""

    rate: float
    capacity: float
    level: float
    updated: float

    @classmethod
    def per_minute(cls, per_minute: float, burst_s: float, now: float) -> TokenBucket:
        rate = per_minute / 60.0
        capacity = max(rate * burst_s, 1e-9)
        return cls(rate, capacity, capacity, now)

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def wait_s(self, cost: float) -> float:
        """Seconds until the bucket admits `cost` (0 when it does now)."""
        needed = min(cost, self.capacity)
        return 0.0 if self.level >= needed else (needed - self.level) / self.rate

    def full_in_s(self) -> float:
        return max(0.0, (self.capacity - self.level) / self.rate)

    def take(self, amount: float) -> None:
        """Take `amount` (give it back when negative, up to the capacity)."""
        self.level = min(self.capacity, self.level - amount)


@dataclass(frozen=True)
class LimitConfig:
    """Rate limits per minute (None: unlimited) and how many seconds of them a burst may use."""

    rpm: float | None = None
    tpm: float | None = None
    burst_s: float = 1.0

    def updated(self, config: dict[str, Any]) -> LimitConfig:
        """This config with the "rpm", "tpm" and "burst_s" keys of a JSON config applied."""
        rpm = _optional_float(config["rpm"]) if "rpm" in config else self.rpm
        tpm = _optional_float(config["tpm"]) if "tpm" in config else self.tpm
        burst_s = float(config.get("burst_s", self.burst_s))
        if (rpm is not None and rpm <= 0) or (tpm is not None and tpm <= 0) or burst_s <= 0:
            raise ValueError("rpm, tpm and burst_s must be positive (or null for no limit)")
        return LimitConfig(rpm, tpm, burst_s)


@dataclass(frozen=True)
class Admission:
    """The limiter's word on one request: admitted or not, and the headers to send with it."""

    admitted: bool
    headers: dict[str, str]
    retry_after_s: int = 0
    limited: str | None = None  # "requests" or "tokens" when refused
    reserved_output: int = 0  # max_tokens held in the tokens bucket until `settle`


@dataclass
class RateLimiter:
    """Token buckets for requests and tokens per minute; not thread-safe (the fake locks)."""

    config: LimitConfig = field(default_factory=LimitConfig)
    requests: TokenBucket | None = None
    tokens: TokenBucket | None = None

    def __post_init__(self) -> None:
        self.refill_all()

    @property
    def active(self) -> bool:
        return self.requests is not None or self.tokens is not None

    def refill_all(self) -> None:
        """Start with full buckets (after a change of limits or a reset)."""
        now, c = time.monotonic(), self.config
        self.requests = None if c.rpm is None else TokenBucket.per_minute(c.rpm, c.burst_s, now)
        self.tokens = None if c.tpm is None else TokenBucket.per_minute(c.tpm, c.burst_s, now)

    def configure(self, config: LimitConfig) -> None:
        if config != self.config:
            self.config = config
            self.refill_all()

    def admit(self, input_tokens: int, max_tokens: int, now: float) -> Admission:
        """Take one request and its token cost, or refuse with the wait until it would fit."""
        cost = input_tokens + max_tokens
        waits: list[tuple[float, str]] = []
        for bucket, name, amount in ((self.requests, "requests", 1.0), (self.tokens, "tokens", cost)):
            if bucket is not None:
                bucket.refill(now)
                waits.append((bucket.wait_s(amount), name))
        wait, limited = max(waits, default=(0.0, None))
        if wait > 0:
            retry = max(1, math.ceil(wait))
            headers = {"retry-after": str(retry), **self.headers()}
            return Admission(False, headers, retry, limited)
        if self.requests is not None:
            self.requests.take(1)
        if self.tokens is not None:
            self.tokens.take(cost)
        return Admission(True, self.headers(), reserved_output=max_tokens if self.tokens else 0)

    def settle(self, reserved_output: int, output_tokens: int, now: float) -> None:
        """Adjust the tokens bucket from the reserved max_tokens to the tokens actually written."""
        if self.tokens is not None and reserved_output:
            self.tokens.refill(now)
            self.tokens.take(output_tokens - reserved_output)

    def headers(self) -> dict[str, str]:
        """The anthropic-ratelimit-* headers the real API sends, for the active buckets."""
        headers: dict[str, str] = {}
        wall = time.time()
        for bucket, name, limit in ((self.requests, "requests", self.config.rpm),
                                    (self.tokens, "tokens", self.config.tpm)):  # fmt: skip
            if bucket is not None and limit is not None:
                headers[f"anthropic-ratelimit-{name}-limit"] = str(int(limit))
                headers[f"anthropic-ratelimit-{name}-remaining"] = str(max(0, math.floor(bucket.level)))
                headers[f"anthropic-ratelimit-{name}-reset"] = rfc3339(wall + bucket.full_in_s())
        return headers


@dataclass(frozen=True)
class FaultConfig:
    """Random faults: on a `rate` share of live requests, one of `kinds`, drawn with `seed`."""

    rate: float = 0.0
    kinds: tuple[Fault, ...] = tuple(Fault)
    seed: int | None = None
    retry_after: float | None = 1.0  # the retry-after of "429" and "529" faults (None: they carry none)
    timeout_s: float = 30.0  # how late a "timeout" fault answers

    def updated(self, config: dict[str, Any]) -> FaultConfig:
        """This config with the fault_* keys of a JSON config applied."""
        new = replace(
            self,
            rate=float(config.get("fault_rate", self.rate)),
            kinds=tuple(Fault(str(k)) for k in config.get("fault_kinds", self.kinds)),
            seed=_optional_int(config["fault_seed"]) if "fault_seed" in config else self.seed,
            retry_after=_optional_float(config["fault_retry_after"]) if "fault_retry_after" in config
            else self.retry_after,
            timeout_s=float(config.get("fault_timeout_s", self.timeout_s)),
        )
        if not 0 <= new.rate <= 1 or not new.kinds:
            raise ValueError("fault_rate must be within [0, 1] and fault_kinds must not be empty")
        return new


class Draws:
    """A seeded stream of draws: `kind` from `kinds` with probability `rate`, else None."""

    def __init__(self, seed: int | None) -> None:
        self.seed = seed
        self._random = random.Random(seed)

    def restart(self, seed: int | None) -> None:
        """Start the stream again, so the same seed replays the same faults."""
        self.seed = seed
        self._random = random.Random(seed)

    def draw(self, rate: float, kinds: tuple[str, ...]) -> str | None:
        if rate <= 0:
            return None
        hit = self._random.random() < rate
        kind = self._random.choice(kinds)  # drawn either way: each draw uses the same randomness
        return str(kind) if hit else None


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)
