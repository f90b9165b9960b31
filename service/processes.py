"""The processes joust runs: one API, N workers, one scheduler, and `joust up`'s supervisor.

`joust up` starts each role as a child process (`python -m service.cli <role>`), restarts a
child that dies, and on Ctrl-C or SIGTERM stops them all, then the embedded Redis, leaving no
process behind. Children are told to die with their parent, so even a SIGKILLed `joust up`
leaves nothing running.
"""
from __future__ import annotations

import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from .config import Settings
from .redis_server import RedisServer, die_with_parent, find_redis_server

log = logging.getLogger(__name__)

API_KEY_FILE = "api_key"


def ensure_api_key(settings: Settings) -> Settings:
    """The settings with an API key: JOUST_API_KEY, else the data dir's key, else a new one kept there."""
    if settings.api_key:
        return settings
    path = settings.data_dir / API_KEY_FILE
    if path.exists():
        key = path.read_text().strip()
    else:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key + "\n")
    return settings.with_(api_key=key)


def child_env(settings: Settings) -> dict[str, str]:
    """The environment a child role needs to find the same data, Redis and key as `joust up`."""
    env = dict(os.environ)
    env["JOUST_DATA_DIR"] = str(settings.data_dir.resolve())
    env["DATABASE_URL"] = settings.resolved_database_url
    if settings.redis_url:
        env["REDIS_URL"] = settings.redis_url
    if settings.api_key:
        env["JOUST_API_KEY"] = settings.api_key
    env["JOUST_QUEUE"] = settings.queue_name
    return env


@dataclass
class Child:
    """One supervised role."""

    name: str
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: float = 0.0


@dataclass
class Supervisor:
    """Starts the children, keeps them running, stops them all."""

    settings: Settings
    children: list[Child] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def add(self, name: str, *args: str) -> None:
        """Register a role to run as `python -m service.cli <args>`."""
        self.children.append(Child(name, [sys.executable, "-m", "service.cli", *args]))

    def start(self) -> None:
        """Start every child."""
        for child in self.children:
            self._spawn(child)

    def _spawn(self, child: Child) -> None:
        child.proc = subprocess.Popen(
            child.argv, env=child_env(self.settings), preexec_fn=die_with_parent(), start_new_session=True
        )
        child.started_at = time.monotonic()
        log.info("started %s (pid %d)", child.name, child.proc.pid)

    def watch(self, poll_s: float = 0.5) -> None:
        """Restart children that die, until told to stop."""
        while not self.stopping.wait(poll_s):
            for child in self.children:
                if child.proc is not None and child.proc.poll() is not None and not self.stopping.is_set():
                    code = child.proc.returncode
                    backoff = 0 if time.monotonic() - child.started_at > 30 else min(30, 2**child.restarts)
                    log.warning("%s exited with %s; restarting in %ss", child.name, code, backoff)
                    if self.stopping.wait(backoff):
                        return
                    child.restarts += 1
                    self._spawn(child)

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM every child (workers finish their job), then SIGKILL what is left."""
        self.stopping.set()
        stop_groups([c.proc for c in self.children if c.proc is not None], timeout_s)


def stop_groups(procs: list[subprocess.Popen], timeout_s: float) -> None:
    """SIGTERM each process's group (each runs in its own session: a worker and RQ's scheduler
    beside it), wait up to `timeout_s` in all, then SIGKILL the groups still running."""
    alive = [p for p in procs if p.poll() is None]
    for proc in alive:
        _signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for proc in alive:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Signal a child's whole process group (it runs in its own session)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def run_up(settings: Settings, *, host: str, port: int, workers: int) -> int:
    """`joust up`: Redis (embedded unless REDIS_URL), the API, N workers and the scheduler."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    settings = ensure_api_key(settings)
    redis_server: RedisServer | None = None
    if not settings.redis_url:
        redis_server = RedisServer(settings.data_dir / "redis", binary=find_redis_server()).start()
        settings = settings.with_(redis_url=redis_server.url)
    sup = Supervisor(settings)
    sup.add("api", "api", "--host", host, "--port", str(port))
    for i in range(workers):
        sup.add(f"worker-{i + 1}", "worker", "--name", f"joust-{os.getpid()}-{i + 1}")
    sup.add("scheduler", "scheduler")

    def on_signal(signum: int, _frame: object) -> None:
        sup.stopping.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        sup.start()
        shown_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        print(f"joust is up: http://{shown_host}:{port}/", flush=True)
        print(f"API key: {settings.api_key}", flush=True)
        print(f"data: {settings.data_dir.resolve()}  redis: {settings.redis_url}  workers: {workers}", flush=True)
        sup.watch()
    finally:
        print("joust is stopping…", flush=True)
        sup.stop()
        if redis_server is not None:
            redis_server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        print("joust stopped", flush=True)
    return 0
