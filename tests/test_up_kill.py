"""A SIGKILLed `joust up` leaves nothing running: its roles, what they forked (each worker's RQ
scheduler) and its embedded redis-server all end within a bound.

Before: the children got SIGTERM from the kernel (their parent-death signal) and shut down as
if stopped, but the workers' shutdown retried every Redis call for half a minute against a Redis
that had died with `joust up`, the RQ scheduler's first; one worker was alive a minute later.

Redis: the embedded one holds data (the queue, leases, unrecorded charges), so it too is told
to die with `joust up` by SIGTERM, never SIGKILL: it saves and exits, and the test checks that
it is gone as well.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from redis import Redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from service.ops.orphans import ORPHAN_GRACE_S
from service.ops.processes import stop_groups
from service.ops.redis_server import free_port, pid_alive
from tests.fake_anthropic import FakeAnthropic
from tests.joust_up import start_joust, stop_joust
from workers.stopping import GIVE_UP_AFTER_S, REDIS_RETRIES, Stopping, StoppingRetry

POLL_S = 0.05
SETTLE_S = 60  # a bound for the run to reach its state, not a measure


def wait_for(condition: Callable[[], object], within: float, what: str) -> float:
    """Poll `condition` until true; the seconds it took."""
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > within:
            raise AssertionError(f"{what}: not within {within} s")
        time.sleep(POLL_S)
    return time.monotonic() - began


def group_members(leaders: list[int]) -> list[int]:
    """Every live process whose process group is one of `leaders` (each child of `joust up` leads
    its own session: a worker's group holds its RQ scheduler)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] not in ("Z", "X") and int(fields[2]) in leaders:
                found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_a_sigkilled_joust_up_leaves_no_process_behind(tmp_path: Path) -> None:
    """Matches are in flight (the fake judge answers after 0.5 s) when `joust up` is killed.
    Every child and grandchild must be gone within the watchdog's grace; it took 63 s before.
    Over 20 s at worst by design: the bound is ORPHAN_GRACE_S plus a margin (it measured about
    3 s here, printed with -s)."""
    with FakeAnthropic(latency_s=0.5) as fake:
        joust = start_joust(tmp_path / "data", fake, workers=2)
        try:
            subs = [{"question": f"q{i}", "model": m, "output": f"{m} says {i}"} for i in range(4) for m in "abcd"]
            assert joust.call("POST", "/api/submissions", subs)[0] == 201
            status, run = joust.call("POST", "/api/tournaments", {"name": "t", "judge": "anthropic/judge-1"})
            assert status == 202, run
            wait_for(lambda: fake.requests > 0, SETTLE_S, "no judge call started")
            children = joust.children()
            assert sorted(joust.roles()) == ["api", "redis-server", "scheduler", "worker", "worker"], joust.roles()
            # each worker's RQ scheduler is up beside it (the one that holds the lock)
            wait_for(lambda: len(group_members(children)) > len(children), SETTLE_S, "no RQ scheduler forked")
            everything = group_members(children)
            killed_at = time.monotonic()
            joust.proc.send_signal(signal.SIGKILL)
            joust.proc.wait()
            try:
                took = wait_for(lambda: not any(pid_alive(pid) for pid in everything), ORPHAN_GRACE_S + 5,
                                "processes outlived joust up")
            except AssertionError:
                left = [(pid, Path(f"/proc/{pid}/cmdline").read_bytes()[:80]) for pid in everything if pid_alive(pid)]
                raise AssertionError(f"alive {time.monotonic() - killed_at:.1f} s after joust up was killed: {left}\n"
                                     + "".join(joust.lines[-40:])) from None
            print(f"\nSIGKILL of joust up to its last child gone: {took:.2f} s ({len(everything)} processes)")
        finally:
            stop_joust(joust)


def test_stopping_a_group_kills_what_its_ended_leader_left_behind(tmp_path: Path) -> None:
    """A leader that ends on SIGTERM while a process it forked ignores SIGTERM (a scheduler stuck
    on a dead Redis): `stop_groups` used to wait for the leader only and leave the other running."""
    ready = tmp_path / "ready"
    script = (
        "import os, signal, sys, time\n"
        "if os.fork() == 0:\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"    open({str(ready)!r}, 'w').write(str(os.getpid()))\n"
        "    while True: time.sleep(1)\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
        "while True: time.sleep(1)\n"
    )
    leader = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        wait_for(lambda: ready.exists() and ready.read_text(), SETTLE_S, "the member never started")
        member = int(ready.read_text())
        stop_groups([leader], timeout_s=1.0)
        assert leader.returncode == 0  # it did stop on SIGTERM
        wait_for(lambda: not pid_alive(member), 5, "the member the leader left outlived stop_groups")
    finally:
        try:
            os.killpg(leader.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        leader.wait()


class CountingBackoff(ExponentialBackoff):
    """redis-py's backoff without the waits, counting how often the retry loop asked for one."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def compute(self, failures: int) -> float:
        self.asked += 1
        return 0.0

    def __deepcopy__(self, memo: dict) -> CountingBackoff:
        return self  # redis-py copies the policy into each connection: count there too


def test_a_stopping_worker_gives_up_on_a_dead_redis_instead_of_retrying_it() -> None:
    """Working: every retry is made (a restarted Redis is waited for). Stopping for longer than
    GIVE_UP_AFTER_S: the first failure ends the call, at every level of redis-py's retries (the
    command's, and the reconnect's inside it)."""
    now = [0.0]
    stopping = Stopping(clock=lambda: now[0])
    dead = free_port()  # nothing listens there: refused at once

    def attempts() -> int:
        backoff = CountingBackoff()
        client = Redis(port=dead, retry=StoppingRetry(backoff, REDIS_RETRIES, stopping), socket_connect_timeout=1)
        with pytest.raises(RedisConnectionError):
            client.ping()
        client.close()
        return backoff.asked

    assert attempts() >= REDIS_RETRIES  # working: it rides the outage out
    stopping.mark()
    assert attempts() >= REDIS_RETRIES  # just told to stop: a Redis restart is still waited for
    now[0] += GIVE_UP_AFTER_S
    assert attempts() == 0
