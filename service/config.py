"""Settings: the only module that reads environment variables.

A `Settings` object is built once at a process's start (`Settings.from_env`) and passed
explicitly to whatever needs it, so tests can build their own without touching the environment.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from leaderboard.circuit import BreakerConfig
from leaderboard.pricing import DEFAULT_PRICES, Price, parse_price_table
from leaderboard.reach import Reach

DEFAULT_JUDGE = "anthropic/claude-sonnet-4-5"
# The judge that needs no network and no key: what `joust up` uses when no provider is configured.
OFFLINE_JUDGE = "offline/rubric"
# Every offline judge the workers have (`workers.providers.offline_judge.SCORERS`; a test checks
# they agree): the service refuses any other `offline/` judge, which could only fail its matches.
OFFLINE_JUDGES = (OFFLINE_JUDGE,)


def default_judge(env: Mapping[str, str]) -> str:
    """The judge when JOUST_JUDGE is unset: Claude when an Anthropic key is configured, else an
    OpenAI-compatible server's model when OPENAI_BASE_URL and JOUST_OPENAI_MODEL say which, else
    the offline rubric judge, so a first `joust up` with no provider still shows a live board."""
    if env.get("ANTHROPIC_API_KEY", "").strip():
        return DEFAULT_JUDGE
    model = env.get("JOUST_OPENAI_MODEL", "").strip()
    if model and env.get("OPENAI_BASE_URL", "").strip():
        return f"openai/{model}"
    return OFFLINE_JUDGE


# Upper bounds (seconds) of the judge-call latency histogram: the workers count each call under
# the first bound it fits (in Redis, `Settings.call_stats_key`) and the API's /metrics reads them.
CALL_LATENCY_BUCKETS = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
LOG_FORMATS = ("text", "json")
REACH_FIELD = "joust_reach"  # the field of a worker's RQ hash (rq:worker:<name>) holding its `Settings.reach()`


class SettingsError(ValueError):
    """An environment variable holds a value joust cannot use."""


@dataclass(frozen=True)
class JudgeEndpoint:
    """Where one judge spec is served, with which key, and what its account allows (an entry of
    JOUST_JUDGE_ENDPOINTS): requests and tokens per minute across all workers, calls in flight
    per worker process. None: the global setting."""

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    rpm: float | None = None
    tpm: float | None = None
    concurrency: int | None = None


@dataclass(frozen=True)
class JudgeLimits:
    """What one judge may be sent: requests and input+output tokens per minute across every
    worker (None: no limit), and calls in flight per worker process."""

    rpm: float | None
    tpm: float | None
    concurrency: int


@dataclass(frozen=True)
class Settings:
    """Everything a joust process needs to know about its surroundings."""

    data_dir: Path = Path("joust-data")
    database_url: str | None = None  # None: SQLite file `joust.db` in data_dir
    # None: `joust up` starts an embedded redis-server. Holds its password: out of repr.
    redis_url: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)  # None: `joust up` generates one in data_dir
    judge: str = DEFAULT_JUDGE
    elo_k: float = 32.0
    queue_name: str = "joust"
    # Where the CLI's remote commands (tournament, submit, board) find a running joust.
    url: str = "http://127.0.0.1:8000"
    max_body_bytes: int = 10 * 1024 * 1024
    max_batch: int = 10_000
    # A match "running" longer than this (a killed worker) is handed out again by the scheduler.
    match_timeout_s: float = 300.0
    # How many times a match is retried after a provider error before it is recorded as failed.
    job_retries: int = 3
    retry_backoff_s: float = 10.0
    # Calls in flight to one judge inside one worker process.
    judge_concurrency: int = 64
    # Requests and input+output tokens per minute to one judge across all workers (0: no limit).
    judge_rpm: float = 0
    judge_tpm: float = 0
    # Matches one worker process holds at once (0: as many as judge_concurrency).
    worker_matches: int = 0
    # A worker's leases on its matches and claims on their judgements lapse this long after its
    # last heartbeat (a dead worker's matches are handed out again then).
    lease_ttl_s: float = 15.0
    # A run whose matches fail this many times in a row, with no judgement between, stops
    # itself with stopped_reason "failing" (0: never).
    stop_after_failures: int = 10
    # A judge's circuit breaker (workers.breaker, shared by every worker): this many failed calls
    # in a row open it (0: never); it stays open breaker_open_s, doubled after each failed probe;
    # after breaker_probes failed probes in a row the judge is down: calls fail unsent (0: never).
    breaker_failures: int = 10
    breaker_open_s: float = 5.0
    breaker_probes: int = 3
    # A 429/529 without retry-after pauses every worker only when it ends this many failed calls
    # in a row (0: never), for overload_pause_s doubled per further failure; else that call alone
    # waits call_backoff_s (doubled per send, jittered) before it is sent again.
    overload_pause_after: int = 3
    overload_pause_s: float = 1.0
    call_backoff_s: float = 1.0
    # On SIGTERM a worker waits this long for its matches in flight before handing them back.
    drain_timeout_s: float = 10.0
    # Message Batches: seconds between polls, and the most requests and bytes per batch.
    batch_poll_s: float = 30.0
    batch_max_requests: int = 100_000
    batch_max_bytes: int = 256 * 1024 * 1024
    anthropic_api_key: str | None = field(default=None, repr=False)
    anthropic_base_url: str | None = None
    # OpenAI-compatible servers (vLLM, Ollama, llama.cpp, OpenAI): the defaults for `openai/...`
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    # Per judge spec ("openai/llama3"): its own base URL and key, over the defaults above.
    judge_endpoints: Mapping[str, JudgeEndpoint] = field(default_factory=dict)
    judge_timeout_s: float = 120.0
    # Retries the provider SDKs make by themselves. Workers set 0: their gate retries each call
    # through the shared rate limit instead (workers.gate), so every 429 is seen and shared.
    sdk_max_retries: int = 1
    judge_max_tokens: int = 512
    scheduler_interval_s: float = 5.0
    # JOUST_PRICES: a JSON file of prices per judge spec, over leaderboard.pricing.DEFAULT_PRICES.
    prices_file: Path | None = None
    prices: Mapping[str, Price] = field(default_factory=dict)
    # JOUST_LOG_FORMAT: "text" (a line per record) or "json" (one JSON object per line, with the
    # request_id or match_id of the work it belongs to).
    log_format: str = "text"
    # JOUST_PRIVATE: reads need a key too (any scope); only GET /api/health stays open.
    private: bool = False

    @property
    def call_stats_key(self) -> str:
        """The Redis hash where workers count their judge calls (calls, 429s, retries, latency)
        for the API's /metrics: one per queue, so deployments sharing a Redis stay apart."""
        return f"{self.queue_name}:calls"

    def price_table(self) -> dict[str, Price]:
        """The default prices with the overrides of `prices_file` on top."""
        return {**DEFAULT_PRICES, **self.prices}

    @property
    def resolved_database_url(self) -> str:
        """The database to use: DATABASE_URL, or a SQLite file in the data dir."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'joust.db').resolve()}"

    def endpoint(self, spec: str) -> JudgeEndpoint:
        """Base URL and key for an `openai/...` judge: its own entry, else OPENAI_* (either may
        be None: the SDK's public endpoint, or a server that wants no key)."""
        own = self.judge_endpoints.get(spec, JudgeEndpoint())
        return JudgeEndpoint(
            base_url=own.base_url or self.openai_base_url,
            api_key=own.api_key or self.openai_api_key,
        )

    def limits(self, spec: str, *, rpm: float | None = None, tpm: float | None = None) -> JudgeLimits:
        """What judge `spec` may be sent: a run's own `rpm`/`tpm` first, then the judge's entry in
        JOUST_JUDGE_ENDPOINTS, then JOUST_JUDGE_RPM / JOUST_JUDGE_TPM / JOUST_JUDGE_CONCURRENCY."""
        own = self.judge_endpoints.get(spec, JudgeEndpoint())

        def first(*values: float | None) -> float | None:
            return next((float(v) for v in values if v), None)

        return JudgeLimits(
            rpm=first(rpm, own.rpm, self.judge_rpm),
            tpm=first(tpm, own.tpm, self.judge_tpm),
            concurrency=max(1, int(own.concurrency or self.judge_concurrency)),
        )

    def breaker(self) -> BreakerConfig:
        """The judges' circuit breaker: a probe is presumed lost once its call could have timed
        out and a pause of the rate limit passed (judge_timeout_s + 30 s)."""
        return BreakerConfig(failures=self.breaker_failures, open_s=max(0.001, self.breaker_open_s),
                             probes=self.breaker_probes, probe_ttl_s=self.judge_timeout_s + 30.0)

    @property
    def matches_in_flight(self) -> int:
        """How many matches one worker process holds at once."""
        return max(1, self.worker_matches or self.judge_concurrency)

    def reach(self) -> Reach:
        """Which judges these settings can call (what is configured, never a key): a worker
        says it in its RQ registration, field `REACH_FIELD`, for an API that holds no key."""
        own = sorted(spec for spec, endpoint in self.judge_endpoints.items()
                     if spec.startswith("openai/") and (endpoint.base_url or endpoint.api_key))
        return Reach(anthropic=bool(self.anthropic_api_key), anthropic_base_url=bool(self.anthropic_base_url),
                     openai=bool(self.openai_base_url or self.openai_api_key), openai_judges=tuple(own))

    def with_(self, **changes: object) -> Settings:
        """A copy with some fields changed (for the CLI's flags and for tests)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read JOUST_*, DATABASE_URL, REDIS_URL, ANTHROPIC_* and OPENAI_* from the environment."""
        env = os.environ if environ is None else environ
        base = cls()

        def text(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        def number(name: str, default: float, kind: type = float) -> float:
            raw = text(name)
            if raw is None:
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise SettingsError(f"{name}={raw!r} is not a {kind.__name__}") from None
            if value < 0:
                raise SettingsError(f"{name}={raw!r} must not be negative")
            return value

        return cls(
            data_dir=Path(text("JOUST_DATA_DIR") or base.data_dir),
            database_url=text("DATABASE_URL"),
            redis_url=text("REDIS_URL"),
            api_key=text("JOUST_API_KEY"),
            judge=text("JOUST_JUDGE") or default_judge(env),
            elo_k=number("JOUST_ELO_K", base.elo_k),
            queue_name=text("JOUST_QUEUE") or base.queue_name,
            url=text("JOUST_URL") or base.url,
            max_body_bytes=int(number("JOUST_MAX_BODY_BYTES", base.max_body_bytes, int)),
            max_batch=int(number("JOUST_MAX_BATCH", base.max_batch, int)),
            match_timeout_s=number("JOUST_MATCH_TIMEOUT", base.match_timeout_s),
            job_retries=int(number("JOUST_JOB_RETRIES", base.job_retries, int)),
            retry_backoff_s=number("JOUST_RETRY_BACKOFF", base.retry_backoff_s),
            judge_concurrency=max(1, int(number("JOUST_JUDGE_CONCURRENCY", base.judge_concurrency, int))),
            judge_rpm=number("JOUST_JUDGE_RPM", base.judge_rpm),
            judge_tpm=number("JOUST_JUDGE_TPM", base.judge_tpm),
            worker_matches=int(number("JOUST_WORKER_MATCHES", base.worker_matches, int)),
            lease_ttl_s=max(1.0, number("JOUST_LEASE_TTL", base.lease_ttl_s)),
            stop_after_failures=int(number("JOUST_STOP_AFTER_FAILURES", base.stop_after_failures, int)),
            breaker_failures=int(number("JOUST_BREAKER_FAILURES", base.breaker_failures, int)),
            breaker_open_s=number("JOUST_BREAKER_OPEN", base.breaker_open_s),
            breaker_probes=int(number("JOUST_BREAKER_PROBES", base.breaker_probes, int)),
            overload_pause_after=int(number("JOUST_OVERLOAD_PAUSE_AFTER", base.overload_pause_after, int)),
            overload_pause_s=number("JOUST_OVERLOAD_PAUSE", base.overload_pause_s),
            call_backoff_s=number("JOUST_CALL_BACKOFF", base.call_backoff_s),
            drain_timeout_s=number("JOUST_DRAIN_TIMEOUT", base.drain_timeout_s),
            batch_poll_s=max(0.05, number("JOUST_BATCH_POLL", base.batch_poll_s)),
            batch_max_requests=max(1, int(number("JOUST_BATCH_MAX_REQUESTS", base.batch_max_requests, int))),
            anthropic_api_key=text("ANTHROPIC_API_KEY"),
            anthropic_base_url=text("ANTHROPIC_BASE_URL"),
            openai_api_key=text("OPENAI_API_KEY"),
            openai_base_url=text("OPENAI_BASE_URL"),
            judge_endpoints=parse_judge_endpoints(text("JOUST_JUDGE_ENDPOINTS"), env),
            judge_timeout_s=number("JOUST_JUDGE_TIMEOUT", base.judge_timeout_s),
            judge_max_tokens=int(number("JOUST_JUDGE_MAX_TOKENS", base.judge_max_tokens, int)),
            scheduler_interval_s=number("JOUST_SCHEDULER_INTERVAL", base.scheduler_interval_s),
            prices_file=Path(raw) if (raw := text("JOUST_PRICES")) else None,
            prices=load_prices(text("JOUST_PRICES")),
            log_format=_log_format(text("JOUST_LOG_FORMAT")),
            private=_flag("JOUST_PRIVATE", text("JOUST_PRIVATE")),
        )


def _log_format(raw: str | None) -> str:
    value = (raw or "text").lower()
    if value not in LOG_FORMATS:
        raise SettingsError(f"JOUST_LOG_FORMAT={raw!r}: use one of {', '.join(LOG_FORMATS)}")
    return value


def _flag(name: str, raw: str | None) -> bool:
    value = (raw or "0").lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name}={raw!r}: use 1 or 0")


_ENDPOINT_KEYS = frozenset({"base_url", "api_key", "api_key_env", "rpm", "tpm", "concurrency"})
_ENDPOINT_NUMBERS = frozenset({"rpm", "tpm", "concurrency"})


def parse_judge_endpoints(raw: str | None, env: Mapping[str, str]) -> dict[str, JudgeEndpoint]:
    """JOUST_JUDGE_ENDPOINTS: a JSON object from judge spec to {"base_url", "api_key"} or
    {"base_url", "api_key_env": "NAME"} (the key read from env var NAME, so it stays out of the
    JSON), and optionally what that judge's account allows: "rpm", "tpm" (per minute, across all
    workers) and "concurrency" (calls in flight per worker process). Raises SettingsError naming
    the entry at fault."""
    if raw is None:
        return {}
    name = "JOUST_JUDGE_ENDPOINTS"
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SettingsError(f'{name} must be a JSON object like {{"openai/llama3": {{"base_url": "..."}}}}')
    endpoints = {}
    for spec, entry in data.items():
        where = f"{name}[{spec!r}]"
        provider, slash, model = spec.partition("/")
        if not (provider and slash and model):
            raise SettingsError(f"{where}: keys are judge specs like 'openai/<model>'")
        if not isinstance(entry, dict):
            raise SettingsError(f"{where} must be an object with base_url, api_key or api_key_env")
        unknown = sorted(set(entry) - _ENDPOINT_KEYS)
        if unknown:
            raise SettingsError(f"{where}: unknown field(s) {unknown}; use {sorted(_ENDPOINT_KEYS)}")
        if not all(isinstance(v, str) and v.strip() for k, v in entry.items() if k not in _ENDPOINT_NUMBERS):
            raise SettingsError(f"{where}: base_url, api_key and api_key_env must be non-empty strings")
        for k in _ENDPOINT_NUMBERS & set(entry):
            v = entry[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or v != v or v == float("inf"):
                raise SettingsError(f"{where}: {k} must be a positive number, not {v!r}")
            if k == "concurrency" and int(v) != v:
                raise SettingsError(f"{where}: concurrency must be a whole number, not {v!r}")
        if "api_key" in entry and "api_key_env" in entry:
            raise SettingsError(f"{where}: give api_key or api_key_env, not both")
        key = entry.get("api_key")
        if "api_key_env" in entry:
            key = env.get(entry["api_key_env"], "").strip() or None
            if key is None:
                raise SettingsError(f"{where}: api_key_env names {entry['api_key_env']}, which is not set")
        endpoints[spec] = JudgeEndpoint(
            base_url=entry.get("base_url", "").strip() or None, api_key=key, rpm=entry.get("rpm"),
            tpm=entry.get("tpm"), concurrency=int(entry["concurrency"]) if "concurrency" in entry else None,
        )
    return endpoints


ENV_PREFIXES = ("JOUST_", "DATABASE_URL", "REDIS_URL", "ANTHROPIC_", "OPENAI_")


def env_fingerprint(environ: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """The environment variables settings are read from, as a comparable value: a long-lived
    process re-reads its settings (and files such as JOUST_PRICES) only when this changes."""
    env = os.environ if environ is None else environ
    return tuple(sorted((k, v) for k, v in env.items() if k.startswith(ENV_PREFIXES)))


def load_prices(path: str | None) -> dict[str, Price]:
    """JOUST_PRICES: read the price override file (format: `leaderboard.pricing.parse_price_table`).

    Raises SettingsError when the file cannot be read or holds something else."""
    if path is None:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"JOUST_PRICES={path!r}: cannot read the file: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise SettingsError(f"JOUST_PRICES={path!r} is not valid JSON: {exc}") from None
    try:
        return parse_price_table(data)
    except ValueError as exc:
        raise SettingsError(f"JOUST_PRICES={path!r}: {exc}") from None
