"""`joust up` as a user runs it, in a subprocess against a fake provider: for the end-to-end
tests and the browser tests, which drive the same process."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.ops.redis_server import free_port
from tests.fake_anthropic import FakeAnthropic

REPO = Path(__file__).resolve().parents[1]
# Between looks at the API while it starts, and at a run while it runs: each look is a GET of a
# few milliseconds, which the run's own processes could use.
START_POLL_S = 0.05
RUN_POLL_S = 0.1


@dataclass
class Joust:
    """A running `joust up` and what it printed."""

    proc: subprocess.Popen[str]
    url: str
    key: str
    data_dir: Path
    lines: list[str] = field(default_factory=list)

    def call(self, method: str, path: str, body: Any = None, auth: bool = True) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if auth:
            req.add_header("Authorization", f"Bearer {self.key}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read().decode()
                status = resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read().decode(), err.code
        try:
            return status, json.loads(raw)
        except json.JSONDecodeError:
            return status, raw

    def wait_done(self, tid: int, timeout_s: float = 120) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            _, view = self.call("GET", f"/api/tournaments/{tid}")
            if view["status"] in ("done", "failed", "cancelled"):
                return view
            time.sleep(RUN_POLL_S)
        raise AssertionError(f"tournament {tid} did not finish: {view}\n" + "".join(self.lines[-40:]))

    def children(self) -> list[int]:
        """Pids whose parent is `joust up`."""
        kids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                    kids.append(int(entry.name))
        return kids

    def worker_pids(self) -> list[int]:
        return [pid for pid in self.children() if b"worker" in _cmdline(pid)]

    def roles(self) -> list[str]:
        """What each child runs: redis-server, or the `joust` role (api, worker, scheduler)."""
        found = []
        for pid in self.children():
            argv = _cmdline(pid).split(b"\0")
            if b"service.cli" in argv:
                found.append(argv[argv.index(b"service.cli") + 1].decode())
            else:
                found.append(Path(argv[0].decode()).name.split()[0])
        return sorted(found)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _read_lines(proc: subprocess.Popen[str], sink: list[str], found: queue.Queue[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        sink.append(line)
        found.put(line)


def start_joust(data_dir: Path, fake: FakeAnthropic, workers: int = 2, **env_vars: str) -> Joust:
    """Run `joust up` on `data_dir` against the fake provider; return once its API answers.
    The API key is read from the data dir: `joust up` prints only where it is kept."""
    env = {k: v for k, v in os.environ.items() if k not in ("JOUST_API_KEY", "REDIS_URL", "DATABASE_URL")}
    env.update(
        ANTHROPIC_BASE_URL=fake.url,
        ANTHROPIC_API_KEY="test",
        JOUST_SCHEDULER_INTERVAL="0.5",
        JOUST_MATCH_TIMEOUT="6",
        JOUST_RETRY_BACKOFF="0.1",
        JOUST_BATCH_POLL="1",
        PYTHONUNBUFFERED="1",
    )
    env.update(env_vars)  # a test's own settings, over these
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "up", "--port", str(port), "--workers", str(workers),
         "--data-dir", str(data_dir)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    found: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_lines, args=(proc, lines, found), daemon=True).start()
    url = key_line = None
    deadline = time.monotonic() + 60
    while (url is None or key_line is None) and time.monotonic() < deadline:
        try:
            line = found.get(timeout=1)
        except queue.Empty:
            if proc.poll() is not None:
                raise AssertionError("joust up exited:\n" + "".join(lines)) from None
            continue
        if line.startswith("joust is up: "):
            url = line.split(": ", 1)[1].strip().rstrip("/")
        elif line.startswith("API key: "):
            key_line = line.split(": ", 1)[1].strip()
    if not (url and key_line):
        proc.kill()
        raise AssertionError("joust up printed no URL and key:\n" + "".join(lines))
    assert key_line == f"in {data_dir.resolve() / 'api_key'}", key_line
    key = (data_dir / "api_key").read_text().strip()
    running = Joust(proc, url, key, data_dir, lines)
    deadline = time.monotonic() + 60
    while True:  # the API may still be importing
        try:
            if running.call("GET", "/api/health")[0] == 200:
                return running
        except (urllib.error.URLError, ConnectionError):
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise AssertionError("the API of joust up never answered /api/health:\n" + "".join(lines))
        time.sleep(START_POLL_S)


def stop_joust(running: Joust) -> None:
    """Kill `joust up` if a test left it running, and every process it started. They are told to
    die with it, and do, but gracefully: a worker's shutdown then talks to a Redis that died too,
    and redis-py's retries keep it waiting for a minute. And a process a role forked (RQ's
    scheduler beside each worker) outlives a worker a test killed. Left alone, they would run on
    beside the rest of the suite."""
    children = running.children()  # sessions of their own: a role and what it forked
    if running.proc.poll() is None:
        running.proc.kill()
        running.proc.wait()
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in _processes_of(running.data_dir):  # what was left behind earlier, reparented
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _processes_of(data_dir: Path) -> list[int]:
    """The processes started for `data_dir`, wherever they were reparented: `joust up` gives each
    role (and so what it forks) JOUST_DATA_DIR."""
    wanted = b"JOUST_DATA_DIR=" + str(data_dir.resolve()).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if wanted in environ.split(b"\0"):
                found.append(int(entry.name))
    return found
