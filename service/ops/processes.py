"""The processes joust runs: one API, N workers, one scheduler, and `joust up`'s supervisor.

`joust up` starts each role as a child process (`python -P -m service.cli <role>`: without the
current folder on its sys.path, so a folder there named `joust` or `service`, such as a clone
seen from its parent, cannot stand in for the installed packages) and, unless REDIS_URL is set,
a redis-server of its own. It says it is up once the API's health answers 200. It restarts any
child that dies (Redis at once, on its port, with its password and its files), except one that
exits with an error at start `START_FAILURES` times in a row: that stops `joust up`, non-zero,
with the child's last lines (its traceback), since starting it again would only fail again.
On Ctrl-C or SIGTERM it stops the roles (SIGTERM to each one's process group, SIGKILL to what
is left of a group after ORPHAN_GRACE_S), then Redis, leaving no process behind. Children die
with their parent (`service.ops.orphans`): a parent-death signal (SIGTERM: each shuts down as when
stopped; Redis saves its data) and a watchdog of their own that SIGKILLs a role and its group
ORPHAN_GRACE_S later; so a SIGKILLed `joust up` leaves nothing running, and a worker that finds
its Redis gone for good on the way out gives up within seconds (`workers.stopping`). Children are
started from the main thread, whose exit is the "parent death" the kernel watches. Their
stderr passes through `joust up` (`service.ops.child_logs`), which keeps each one's last lines.

The data dir is private: 0700, and everything joust keeps there (the database, the API key,
Redis's password and files) 0600, through a umask of 077 for `joust up` and its children. A data
dir left wider by an older joust is tightened at start, and the log says so once
(`service.ops.data_dir`).
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from service.config import Settings
from service.ops.child_logs import Tail
from service.ops.data_dir import (
    API_KEY_FILE,
    REDIS_DIR,
    REDIS_PASSWORD_FILE,
    ensure_api_key,
    ensure_secret,
    make_private,
)
from service.ops.orphans import ORPHAN_GRACE_S, SUPERVISOR_ENV
from service.ops.process_signals import die_with_parent
from service.ops.redis_server import PRIVATE_UMASK, RedisServer, RedisServerError, find_redis_server

log = logging.getLogger(__name__)

SLOW_START_S = 30.0  # a child that lived this long is restarted at once; sooner, with a backoff
START_FAILURES = 3  # exits with an error, each within SLOW_START_S of its start, in a row: give up
HEALTH_TIMEOUT_S = 2.0  # one look at the API's health while waiting to say "up"


def say(line: str) -> None:
    """One line to stdout in one write: print() writes the text and its newline apart, and the
    children's log lines relayed by another thread could land between them (a test read a log
    line as part of joust's URL)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def shown_url(url: str) -> str:
    """A URL with its password masked, for logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=f"{parts.username or ''}:***@{host}").geturl()


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
    env[SUPERVISOR_ENV] = str(os.getpid())  # the role's watchdog ends it when we are gone (service.ops.orphans)
    return env


@dataclass
class Child:
    """One supervised role."""

    name: str
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: float = 0.0
    restart_at: float | None = None  # set once it is found dead: when to start it again
    start_failures: int = 0  # its exits with an error within SLOW_START_S of a start, in a row
    tail: Tail | None = None  # its stderr, passed through, the last lines of this run kept

    def last_words(self) -> str:
        """What it last wrote on stderr (its traceback, when it died of one)."""
        return self.tail.text() if self.tail is not None else ""


@dataclass
class Supervisor:
    """Starts the children, keeps them and the embedded Redis (started by `run_up`) running,
    stops the children."""

    settings: Settings
    redis: RedisServer | None = None
    children: list[Child] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    failed: Child | None = None  # the child that kept dying at start, which stopped everything
    redis_restarts: int = 0
    _redis_retry_at: float = 0.0
    _redis_failures: int = 0

    def add(self, name: str, *args: str) -> None:
        """Register a role to run as `python -P -m service.cli <args>` (see `role_argv`)."""
        self.children.append(Child(name, role_argv(*args)))

    def start(self) -> None:
        """Start every child."""
        for child in self.children:
            self._spawn(child)

    def _spawn(self, child: Child) -> None:
        child.proc = subprocess.Popen(
            child.argv, env=child_env(self.settings), preexec_fn=die_with_parent(), start_new_session=True,
            umask=PRIVATE_UMASK, stderr=subprocess.PIPE,
        )
        assert child.proc.stderr is not None
        child.tail = Tail(child.proc.stderr)
        child.started_at = time.monotonic()
        child.restart_at = None
        log.info("started %s (pid %d)", child.name, child.proc.pid)

    def watch(self, poll_s: float = 0.5) -> None:
        """Restart Redis and the children that die, until told to stop (or a child keeps dying
        at start: `failed`). Nothing here blocks for a child's backoff, so a dead Redis is seen
        within `poll_s` whatever else waits."""
        while not self.stopping.wait(poll_s):
            self.tend()

    def wait_healthy(self, health_url: str, poll_s: float = 0.1) -> bool:
        """Tend the children (as `watch` does) until `health_url` answers 200: True then; False
        when told to stop first, or when a child kept dying at start (`failed`)."""
        while not self.stopping.is_set():
            if answers_ok(health_url):
                return True
            self.stopping.wait(poll_s)
            self.tend()
        return False

    def tend(self) -> None:
        """One look: start Redis again if it died, restart the children that died."""
        self.tend_redis()
        now = time.monotonic()
        for child in self.children:
            if not self.stopping.is_set():
                self._tend(child, now)

    def _tend(self, child: Child, now: float) -> None:
        if child.proc is None or child.proc.poll() is None:
            return
        if child.restart_at is None:
            lived = now - child.started_at
            code = child.proc.returncode
            # An error exit soon after a start counts; a signal (a kill, an OOM) or a long run does not.
            child.start_failures = child.start_failures + 1 if lived <= SLOW_START_S and code > 0 else 0
            if child.start_failures >= START_FAILURES:
                log.error("%s exited with %s at start %d times in a row; stopping", child.name, code,
                          child.start_failures)
                self.failed = child
                self.stopping.set()
                return
            backoff = 0 if lived > SLOW_START_S else min(30, 2**child.restarts)
            log.warning("%s exited with %s; restarting in %ss", child.name, code, backoff)
            child.restart_at = now + backoff
        if now >= child.restart_at:
            child.restarts += 1
            self._spawn(child)

    def tend_redis(self) -> bool:
        """Start the embedded Redis again if it died (same port, password and files); True when
        it did. Children that gave up while it was down are restarted at once."""
        server = self.redis
        if server is None or server.running or self.stopping.is_set() or time.monotonic() < self._redis_retry_at:
            return False
        log.warning("redis-server exited with %s; starting it again on port %s", server.exit_code, server.port)
        began = time.monotonic()
        try:
            server.start()
        except RedisServerError as exc:
            self._redis_failures += 1
            backoff = min(30, 2 ** (self._redis_failures - 1))
            self._redis_retry_at = time.monotonic() + backoff
            log.error("redis-server did not start again (retrying in %ss): %s", backoff, exc)
            return False
        self._redis_failures = 0
        self.redis_restarts += 1
        log.warning("redis-server is back (pid %s) in %.2f s", server.pid, time.monotonic() - began)
        for child in self.children:
            if child.restart_at is not None:
                child.restart_at = time.monotonic()
        return True

    def stop(self, timeout_s: float = ORPHAN_GRACE_S) -> None:
        """SIGTERM every child (workers finish their job), then SIGKILL what is left."""
        self.stopping.set()
        stop_groups([c.proc for c in self.children if c.proc is not None], timeout_s)


def role_argv(*args: str) -> list[str]:
    """The command of a child role: this Python, `-m service.cli ARGS`, without the current
    folder first on sys.path (`-P`, Python 3.11+; on 3.10 the same by hand), so that the
    installed joust is imported whatever folder `joust up` was started in."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", "service.cli", *args]
    safe = "import runpy, sys; del sys.path[0]; runpy.run_module('service.cli', run_name='__main__', alter_sys=True)"
    return [sys.executable, "-c", safe, *args]


def local_url(host: str, port: int) -> str:
    """The URL of a server bound to `host` as this machine reaches it (a wildcard address: loopback)."""
    shown = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


def answers_ok(url: str) -> bool:
    """Whether a GET of `url` answers 200 now (asked directly: never through an HTTP_PROXY)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=HEALTH_TIMEOUT_S) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def stop_groups(procs: list[subprocess.Popen], timeout_s: float, poll_s: float = 0.05) -> None:
    """SIGTERM each process's group (each runs in its own session: a worker and RQ's scheduler
    beside it), wait up to `timeout_s` in all, then SIGKILL the groups still running: a leader
    that ended may have left a member behind (a scheduler stuck on a dead Redis)."""
    alive = [p for p in procs if p.poll() is None]
    for proc in alive:
        _signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for proc in alive:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    while time.monotonic() < deadline and any(group_alive(p.pid) for p in alive):
        time.sleep(poll_s)
    for proc in alive:
        if proc.poll() is None or group_alive(proc.pid):
            log.warning("process group %d did not stop within %.0f s: killing it", proc.pid, timeout_s)
            _signal_group(proc, signal.SIGKILL)
    for proc in alive:
        proc.wait()


def group_alive(pgid: int) -> bool:
    """Whether a process group still has a member."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Signal a child's whole process group (it runs in its own session)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def run_up(settings: Settings, *, host: str, port: int, workers: int) -> int:
    """`joust up`: Redis (embedded unless REDIS_URL), the API, N workers and the scheduler."""
    previous_umask = os.umask(PRIVATE_UMASK)
    try:
        return _run_up(settings, host=host, port=port, workers=workers)
    finally:
        os.umask(previous_umask)


def _run_up(settings: Settings, *, host: str, port: int, workers: int) -> int:
    data_dir = settings.data_dir.resolve()
    tightened = make_private(data_dir)
    if tightened:
        log.warning("made the data dir private (0700, files 0600): tightened %d paths, e.g. %s",
                    len(tightened), ", ".join(str(p) for p in tightened[:3]))
    key_source = "from JOUST_API_KEY" if settings.api_key else f"in {data_dir / API_KEY_FILE}"
    settings = ensure_api_key(settings)
    redis_server: RedisServer | None = None
    if not settings.redis_url:
        password = ensure_secret(data_dir / REDIS_PASSWORD_FILE)
        redis_server = RedisServer(data_dir / REDIS_DIR, binary=find_redis_server(), password=password).start()
        settings = settings.with_(redis_url=redis_server.url)
        redis_shown = f"{redis_server.shown_url} (embedded, password in {data_dir / REDIS_PASSWORD_FILE})"
    else:
        redis_shown = shown_url(settings.redis_url)
    sup = Supervisor(settings, redis=redis_server)
    sup.add("api", "api", "--host", host, "--port", str(port))
    for i in range(workers):
        sup.add(f"worker-{i + 1}", "worker", "--name", f"joust-{os.getpid()}-{i + 1}")
    sup.add("scheduler", "scheduler")

    def on_signal(signum: int, _frame: object) -> None:
        sup.stopping.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    url = local_url(host, port)
    try:
        sup.start()
        if sup.wait_healthy(f"{url}/api/health"):
            say(f"joust is up: {url}/")
            # Never the key itself: logs outlive terminals and are read by more people than the data dir.
            say(f"API key: {key_source}")
            say(f"data: {data_dir}  redis: {redis_shown}  workers: {workers}")
            sup.watch()
    finally:
        say("joust is stopping…")
        sup.stop()
        if redis_server is not None:
            redis_server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        say("joust stopped")
        if sup.failed is not None:  # last, after the other children's goodbyes
            report_failed(sup.failed)
    return 1 if sup.failed is not None else 0


def report_failed(child: Child) -> None:
    """Say on stderr which child kept dying at start, and what it last wrote."""
    code = child.proc.returncode if child.proc is not None else None
    words = child.last_words() or "(it wrote nothing on stderr)"
    print(f"joust up: {child.name} exited with code {code} at start {child.start_failures} times in a row; "
          f"the last it wrote on stderr:\n{words}", file=sys.stderr, flush=True)
