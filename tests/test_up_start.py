"""`joust up`'s start, as a user runs it (the installed `joust` command, in a folder of their
choosing): its children import the installed joust whatever the current folder, it says "up"
only once the API's health answers, and a child that keeps dying at start stops it with that
child's error instead of being restarted for ever."""
from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from service.ops.redis_server import free_port
from tests.joust_up import Joust, _read_lines, stop_joust

pytestmark = pytest.mark.slow  # real `joust up` processes

JOUST = Path(sys.executable).parent / "joust"  # the console script `pip install` made
UP_LINE = "joust is up: "
LINE_WAIT_S = 90  # a bound for a start that never comes (what the defects did), not a measure


def launch(cwd: Path, data_dir: Path, port: int) -> tuple[Joust, queue.Queue[str]]:
    """`joust up` started in `cwd`; its stdout and stderr are read line by line on a thread, into
    the Joust's lines and the queue returned."""
    env = {k: v for k, v in os.environ.items() if k not in ("JOUST_API_KEY", "REDIS_URL", "DATABASE_URL")}
    env.update(PYTHONUNBUFFERED="1", JOUST_JUDGE="offline/rubric")
    proc = subprocess.Popen([str(JOUST), "up", "--port", str(port), "--workers", "1", "--data-dir", str(data_dir)],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    running = Joust(proc, f"http://127.0.0.1:{port}", "", data_dir)
    found: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_lines, args=(proc, running.lines, found), daemon=True).start()
    return running, found


def next_line_starting(running: Joust, found: queue.Queue[str], prefix: str) -> str | None:
    """The first line that starts with `prefix`; None when `joust up` ended first."""
    deadline = time.monotonic() + LINE_WAIT_S
    while time.monotonic() < deadline:
        try:
            line = found.get(timeout=0.2)
        except queue.Empty:
            if running.proc.poll() is not None and found.empty():
                return None
            continue
        if line.startswith(prefix):
            return line
    raise AssertionError(f"no line starting {prefix!r}:\n" + "".join(running.lines[-60:]))


def health(url: str) -> int:
    try:
        with urllib.request.urlopen(url + "/api/health", timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, ConnectionError) as err:
        return -1 if "refused" in str(err) else -2


def test_joust_up_in_a_clones_parent_folder_runs_the_installed_joust_and_says_up_once_healthy(tmp_path: Path) -> None:
    """The folder holds `joust/`, a clone (no __init__.py): with the current folder first on a
    child's sys.path, `import joust` found that folder and every child died of an ImportError."""
    clone = tmp_path / "joust"
    (clone / "joust").mkdir(parents=True)  # the clone's own client package, as a clone has it
    (clone / "README.md").write_text("# joust\n")
    running, found = launch(tmp_path, tmp_path / "data", free_port())
    try:
        line = next_line_starting(running, found, UP_LINE)
        assert line is not None, "joust up ended:\n" + "".join(running.lines)
        assert health(running.url) == 200, "said up before its health answered:\n" + "".join(running.lines)
        assert not any("ImportError" in x for x in running.lines), "".join(running.lines)
        running.proc.send_signal(signal.SIGTERM)
        assert running.proc.wait(timeout=60) == 0
    finally:
        stop_joust(running)


def test_a_child_that_keeps_dying_at_start_stops_joust_up_with_its_error(tmp_path: Path) -> None:
    """The API's port is held by another program: the API dies at every start. `joust up`
    restarted it for ever (with a growing wait) and had said "up" at once. Now it never says
    up, and ends non-zero with the API's own error last. Takes a few seconds: three API starts
    and the waits between them (1 s, then 2 s)."""
    port = free_port()
    with socket.socket() as squatter:  # listens, never answers HTTP
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        running, found = launch(tmp_path, tmp_path / "data", port)
        try:
            assert next_line_starting(running, found, UP_LINE) is None, "said up:\n" + "".join(running.lines)
            code = running.proc.wait(timeout=LINE_WAIT_S)
        finally:
            stop_joust(running)
    out = "".join(running.lines)
    assert code != 0, out
    tail = out[out.rindex("joust up: "):]
    assert "api" in tail.splitlines()[0] and "address already in use" in tail, out
    assert "joust stopped" in out.split(tail)[0]  # the others stopped, then the error, last
