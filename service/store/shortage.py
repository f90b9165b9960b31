"""Out of space: which part of joust cannot write for want of disk (or memory), where, and why.

Why a module: a full disk used to look like something else. SQLite's "database or disk is full"
was a generic "database unavailable", Redis's refusal (MISCONF: it could not write its AOF or
RDB file; OOM: it reached maxmemory) showed as "redis: down", and the workers died of it and were
restarted, over and over. Here each part's shortage is named once, for `/api/health`,
`joust healthcheck`, the API's 507 and the workers' wait:
- the SQLite database: its disk has less than MIN_FREE_BYTES free (a statvfs of its folder,
  the rule by which the store refuses writes, `service.store.space`), or a write failed for it;
- PostgreSQL: only a failed write tells (`store.StoreFull`); the server's disk is not ours to see;
- Redis: PING answers MISCONF while Redis cannot persist (Redis refuses PING then, on purpose),
  and INFO says when a noeviction Redis sits at its maxmemory.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from redis import Redis
from redis.exceptions import OutOfMemoryError, RedisError, ResponseError
from sqlalchemy.engine import make_url

from .space import MIN_FREE_BYTES, shortage


@dataclass(frozen=True)
class Shortage:
    """One part that cannot write: `part` is "database" or "redis"; `where` a path (or a server's
    address, never a password); `reason` the words of whoever said so."""

    part: str
    where: str
    reason: str

    def as_json(self) -> dict[str, str]:
        return {"part": self.part, "where": self.where, "reason": self.reason}

    def line(self) -> str:
        return f"{self.part} is out of space at {self.where}: {self.reason}"


def sqlite_file(database_url: str) -> Path | None:
    """The file of a SQLite URL; None for another database or an in-memory one."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return Path(url.database).resolve()


def database_shortage(database_url: str, minimum: int = MIN_FREE_BYTES) -> Shortage | None:
    """The SQLite database's disk, when it holds less than `minimum` free; None otherwise (and
    for PostgreSQL, whose disk only its failed writes tell of)."""
    path = sqlite_file(database_url)
    if path is None:
        return None
    why = shortage(path.parent, minimum)
    return None if why is None else Shortage("database", str(path), why)


def redis_full_reason(exc: BaseException) -> str | None:
    """Redis's words when `exc` is its refusal to write for want of disk (MISCONF) or memory
    (OOM); None for any other error."""
    if isinstance(exc, OutOfMemoryError):
        return str(exc)
    if isinstance(exc, ResponseError):
        text = str(exc)
        # a pipeline's error quotes the command's: "Command # 1 (...) of pipeline caused error: MISCONF ..."
        for word in ("MISCONF", "OOM"):
            if text.startswith(word) or f"caused error: {word}" in text:
                return text[text.index(word):]
    return None


def redis_shortage(redis: Redis) -> Shortage | None:
    """Redis, when it refuses writes for want of disk or memory; None when it takes them (or
    cannot be asked: that is "down", not "full"; the caller's PING says so)."""
    try:
        redis.ping()
    except ResponseError as exc:
        reason = redis_full_reason(exc)
        return None if reason is None else Shortage("redis", _redis_dir(redis), reason)
    except RedisError:
        return None
    try:
        memory = redis.info("memory")
    except RedisError:
        return None
    limit, used = int(memory.get("maxmemory", 0)), int(memory.get("used_memory", 0))
    if limit and used >= limit and memory.get("maxmemory_policy") == "noeviction":
        return Shortage("redis", _redis_dir(redis), f"OOM: used_memory {used} >= maxmemory {limit}")
    return None


def _redis_dir(redis: Redis) -> str:
    """Where Redis writes (CONFIG GET dir: allowed while it refuses writes), else its address
    (a managed Redis may forbid CONFIG)."""
    try:
        found = redis.config_get("dir").get("dir")
    except RedisError:
        found = None
    kwargs = redis.connection_pool.connection_kwargs
    address = f"redis at {kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
    return f"{found} ({address})" if found else address
