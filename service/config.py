"""Settings: the only module that reads environment variables.

A `Settings` object is built once at a process's start (`Settings.from_env`) and passed
explicitly to whatever needs it, so tests can build their own without touching the environment.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

DEFAULT_JUDGE = "anthropic/claude-sonnet-4-5"


class SettingsError(ValueError):
    """An environment variable holds a value joust cannot use."""


@dataclass(frozen=True)
class Settings:
    """Everything a joust process needs to know about its surroundings."""

    data_dir: Path = Path("joust-data")
    database_url: str | None = None  # None: SQLite file `joust.db` in data_dir
    redis_url: str | None = None  # None: `joust up` starts an embedded redis-server
    api_key: str | None = None  # None: `joust up` generates one and keeps it in data_dir
    judge: str = DEFAULT_JUDGE
    elo_k: float = 32.0
    queue_name: str = "joust"
    max_body_bytes: int = 10 * 1024 * 1024
    max_batch: int = 10_000
    # A match "running" longer than this (a killed worker) is handed out again by the scheduler.
    match_timeout_s: float = 300.0
    # How many times a match is retried after a provider error before it is recorded as failed.
    job_retries: int = 3
    retry_backoff_s: float = 10.0
    # Concurrent calls to one judge inside one worker process.
    judge_concurrency: int = 4
    # Calls per minute to one judge across all workers (0: no shared limit).
    judge_rpm: int = 0
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    judge_timeout_s: float = 120.0
    judge_max_tokens: int = 512
    scheduler_interval_s: float = 5.0

    @property
    def resolved_database_url(self) -> str:
        """The database to use: DATABASE_URL, or a SQLite file in the data dir."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'joust.db').resolve()}"

    def with_(self, **changes: object) -> "Settings":
        """A copy with some fields changed (for the CLI's flags and for tests)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """Read JOUST_*, DATABASE_URL, REDIS_URL and ANTHROPIC_* from the environment."""
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
            judge=text("JOUST_JUDGE") or base.judge,
            elo_k=number("JOUST_ELO_K", base.elo_k),
            queue_name=text("JOUST_QUEUE") or base.queue_name,
            max_body_bytes=int(number("JOUST_MAX_BODY_BYTES", base.max_body_bytes, int)),
            max_batch=int(number("JOUST_MAX_BATCH", base.max_batch, int)),
            match_timeout_s=number("JOUST_MATCH_TIMEOUT", base.match_timeout_s),
            job_retries=int(number("JOUST_JOB_RETRIES", base.job_retries, int)),
            retry_backoff_s=number("JOUST_RETRY_BACKOFF", base.retry_backoff_s),
            judge_concurrency=max(1, int(number("JOUST_JUDGE_CONCURRENCY", base.judge_concurrency, int))),
            judge_rpm=int(number("JOUST_JUDGE_RPM", base.judge_rpm, int)),
            anthropic_api_key=text("ANTHROPIC_API_KEY"),
            anthropic_base_url=text("ANTHROPIC_BASE_URL"),
            judge_timeout_s=number("JOUST_JUDGE_TIMEOUT", base.judge_timeout_s),
            judge_max_tokens=int(number("JOUST_JUDGE_MAX_TOKENS", base.judge_max_tokens, int)),
            scheduler_interval_s=number("JOUST_SCHEDULER_INTERVAL", base.scheduler_interval_s),
        )
