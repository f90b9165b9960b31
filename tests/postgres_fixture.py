"""pytest fixtures backed by a real PostgreSQL server on a free loopback port.

Nothing fakes the database in joust's tests. One throwaway cluster runs for the whole session:
`initdb` in a temp dir, then `postgres` bound to 127.0.0.1 on a free port, its unix socket in the
same temp dir (durability off: fsync, synchronous_commit and full-page writes, so it is quick).
Each test that asks for `postgres_url` gets a database of its own, created empty and dropped
after it. At the end of the session the server is stopped and the temp dir removed.

postgres refuses to run as root: as root, the cluster belongs to the `postgres` system user
(Debian's package creates it) and `initdb` and `postgres` run as that user. Where the binaries
(or psycopg) are missing, every test that needs PostgreSQL is skipped, saying why: a required
skip (tests/required.py), which fails the run under CI=true.

tests/conftest.py imports them (`from tests.postgres_fixture import *` takes exactly `__all__`).
"""
from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from service.ops.redis_server import HOST, die_with_parent, free_port
from tests.required import skip_required

__all__ = ["postgres_server", "postgres_url"]

SUPERUSER = "joust"
_SEARCH_DIRS = ("/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin")
_PORT_ATTEMPTS = 3
_SETTINGS = {
    "listen_addresses": HOST,
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "shared_buffers": "32MB",
    "log_min_messages": "warning",
    # Deadlocks are reported quickly, so a test that would hang fails instead.
    "deadlock_timeout": "200ms",
}


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries, no psycopg, or no unprivileged user to run the server as; `part`
    names the required part that is missing ("postgresql" or "psycopg", see tests/required.py)."""

    def __init__(self, message: str, part: str = "postgresql") -> None:
        super().__init__(message)
        self.part = part


def find_binary(name: str) -> str:
    """`initdb` or `postgres`: on PATH, else in Debian's (or the source build's) bin dir."""
    on_path = shutil.which(name)
    if on_path:
        return on_path
    for pattern in _SEARCH_DIRS:
        for directory in sorted(glob.glob(pattern), key=_version, reverse=True):  # the newest first
            candidate = Path(directory) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    raise PostgresUnavailable(
        f"no `{name}` on PATH or in {', '.join(_SEARCH_DIRS)}: install PostgreSQL "
        "(`apt-get install postgresql`; scripts/test does) to run the PostgreSQL tests"
    )


def _version(directory: str) -> tuple[int, ...]:
    """(15,) for /usr/lib/postgresql/15/bin, () where the path names no version."""
    parts = [p for p in Path(directory).parts if p.replace(".", "").isdigit()]
    return tuple(int(n) for n in parts[-1].split(".")) if parts else ()


class PostgresServer:
    """A throwaway PostgreSQL cluster under `base_dir`, served on 127.0.0.1 from a free port."""

    def __init__(self, base_dir: Path | str, *, startup_timeout: float = 60.0, stop_timeout: float = 30.0) -> None:
        self.base_dir = Path(base_dir).resolve()
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._user: str | None = None
        self._databases = itertools.count(1)

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "postgres.log"

    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL of one database of this server (psycopg 3 driver)."""
        return f"postgresql+psycopg://{SUPERUSER}@{HOST}:{self.port}/{database}"

    def start(self) -> PostgresServer:
        """initdb, then start postgres and return once it accepts connections."""
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise PostgresUnavailable(
                "psycopg is not installed: `pip install -e \".[dev]\"` (or the `postgres` extra) "
                "to run the PostgreSQL tests", part="psycopg"
            ) from None
        initdb, postgres = find_binary("initdb"), find_binary("postgres")
        self._user = self._server_user()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        if self._user is not None:
            shutil.chown(self.base_dir, user=self._user, group=pwd.getpwnam(self._user).pw_gid)
            self.base_dir.chmod(0o700)
        self._run([initdb, "-D", str(self.data_dir), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                   "--locale=C", "--no-sync"])
        for _ in range(_PORT_ATTEMPTS):
            self.port = free_port()
            if self._launch(postgres):
                return self
        raise PostgresUnavailable(f"postgres could not bind a loopback port (log {self.log_path}):\n{self._log_tail()}")

    def stop(self) -> None:
        """Fast shutdown (SIGINT), escalating to SIGQUIT and SIGKILL."""
        proc = self._proc
        self._proc = None
        if proc is None or proc.poll() is not None:
            return
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
            proc.send_signal(sig)
            try:
                proc.wait(timeout=self.stop_timeout)
                return
            except subprocess.TimeoutExpired:
                continue

    def start_again(self) -> None:
        """Start the server `stop` stopped, on the same port over the same data (its databases
        and their rows kept): the end of a database outage a test made."""
        if self._proc is not None and self._proc.poll() is None:
            return
        if self.port is None:
            raise RuntimeError("the server was never started")
        if not self._launch(find_binary("postgres")):
            raise RuntimeError(f"port {self.port} was taken while postgres was down (log {self.log_path})")

    def create_database(self) -> str:
        """A new, empty database; its name. FILE_COPY copies the small template's files, where
        PostgreSQL 15's default (WAL_LOG) writes them through the log: about twice as fast here,
        and a test asks for a database a thousand times a run."""
        name = f"test_{next(self._databases)}"
        with self._connect() as conn:
            version = int(conn.execute("SHOW server_version_num").fetchone()[0])
            conn.execute(f'CREATE DATABASE "{name}"' + (" STRATEGY = FILE_COPY" if version >= 150000 else ""))
        return name

    def drop_database(self, name: str) -> None:
        """Drop a database, closing whatever connections a test left open on it."""
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- internals ------------------------------------------------------------------------

    @staticmethod
    def _server_user() -> str | None:
        """None to run as ourselves; as root, the `postgres` system user (postgres refuses root)."""
        if os.geteuid() != 0:
            return None
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresUnavailable(
                "running as root and there is no `postgres` user to run the server as "
                "(Debian's postgresql package creates it)"
            ) from None
        return "postgres"

    def _as_user(self) -> dict[str, Any]:
        if self._user is None:
            return {}
        entry = pwd.getpwnam(self._user)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": [],
                "env": {**os.environ, "HOME": entry.pw_dir, "USER": self._user, "LOGNAME": self._user}}

    def _run(self, args: list[str]) -> None:
        done = subprocess.run(args, cwd=self.base_dir, stdin=subprocess.DEVNULL, capture_output=True,
                              check=False, **self._as_user())
        if done.returncode:
            output = (done.stdout + done.stderr).decode(errors="replace").strip()
            raise RuntimeError(f"{' '.join(args)} exited with code {done.returncode}:\n{output[-3000:]}")

    def _launch(self, postgres: str) -> bool:
        """Start postgres on self.port; False when the port was taken meanwhile."""
        settings = [arg for name, value in _SETTINGS.items() for arg in ("-c", f"{name}={value}")]
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            if self._user is not None:
                shutil.chown(self.log_path, user=self._user)
            proc = subprocess.Popen(
                [postgres, "-D", str(self.data_dir), "-p", str(self.port), "-k", str(self.base_dir), *settings],
                cwd=self.base_dir, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, preexec_fn=die_with_parent(), **self._as_user(),
            )
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if proc.poll() is not None:
                tail = self._log_tail(offset)
                if "already in use" in tail:
                    return False
                raise RuntimeError(f"postgres exited with code {proc.returncode} while starting "
                                   f"(log {self.log_path}):\n{tail}")
            if self._answers():
                self._proc = proc
                return True
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"postgres did not accept connections on {HOST}:{self.port} within "
                                   f"{self.startup_timeout:.0f} s (log {self.log_path}):\n{self._log_tail(offset)}")
            time.sleep(0.05)

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(host=HOST, port=self.port, user=SUPERUSER, dbname="postgres", autocommit=True,
                               connect_timeout=2)

    def _answers(self) -> bool:
        import psycopg

        try:
            with self._connect() as conn:  # our server, not a stranger that took the port first
                return conn.execute("SHOW data_directory").fetchone() == (str(self.data_dir),)
        except psycopg.OperationalError:
            return False

    def _admin(self, sql: str) -> None:
        with self._connect() as conn:
            conn.execute(sql)

    def _log_tail(self, offset: int = 0, lines: int = 20) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                text = log.read().decode("utf-8", "replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:]) or "(empty log)"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server; a required skip (saying why) where PostgreSQL cannot run here."""
    # As root the server runs as `postgres`, which must reach the dir: /tmp, whatever TMPDIR says.
    base = Path(tempfile.mkdtemp(prefix="joust-pg-", dir="/tmp" if os.geteuid() == 0 else None))
    server = PostgresServer(base)
    try:
        try:
            server.start()
        except PostgresUnavailable as why:
            skip_required(why.part, f"PostgreSQL tests skipped: {why}")
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a new, empty database on the session's server, dropped after the test."""
    name = postgres_server.create_database()
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop_database(name)
