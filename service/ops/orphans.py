"""A process that must not outlive the one that started it: `joust up`'s roles, and the RQ
scheduler each worker forks.

Two layers, because the first is a request and not a guarantee:
- the parent-death signal (Linux `prctl(PR_SET_PDEATHSIG)`): SIGTERM the moment the parent dies,
  so the process shuts down as it would when stopped (a worker gives its matches back). It is
  tied to the parent's *thread* that forked, so fork from a long-lived thread (the main one);
- a watchdog thread in the process itself (`watch_parent`): once its parent is gone (its parent
  pid changes) it allows `grace_s` for that shutdown, then SIGKILLs the process, and its whole
  process group when it leads one (what it forked: a worker's RQ scheduler). Where the platform
  has no parent-death signal, the watchdog sends the SIGTERM itself.

`joust up` names itself to its roles in JOUST_SUPERVISOR_PID (`service.ops.processes.child_env`);
a role calls `watch_supervisor()` at its start.
"""
from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time

log = logging.getLogger(__name__)

SUPERVISOR_ENV = "JOUST_SUPERVISOR_PID"
# As long as `joust up` itself gives a child to stop before its SIGKILL (Supervisor.stop).
ORPHAN_GRACE_S = 15.0
POLL_S = 0.25
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def set_parent_death_signal(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel for `sig` when this process's parent (thread) dies; False where the
    platform has no such signal. Call it in the child, right after the fork."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    return prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


def watch_parent(parent_pid: int, grace_s: float = ORPHAN_GRACE_S, *, signalled: bool,
                 poll_s: float = POLL_S) -> threading.Thread:
    """Start the watchdog (see the module docstring). `signalled`: the kernel sends the SIGTERM
    when the parent dies (`set_parent_death_signal` took), so the watchdog need not."""
    thread = threading.Thread(target=_watch, args=(parent_pid, grace_s, signalled, poll_s),
                              name="orphan-watchdog", daemon=True)
    thread.start()
    return thread


def die_with_parent(parent_pid: int, grace_s: float = ORPHAN_GRACE_S) -> None:
    """In a child just forked (not exec'd) from `parent_pid`: both layers. A parent already
    gone by now leaves the child to end at once."""
    signalled = set_parent_death_signal()
    if os.getppid() != parent_pid:
        os._exit(1)
    watch_parent(parent_pid, grace_s, signalled=signalled)


def watch_supervisor() -> threading.Thread | None:
    """The watchdog for a role `joust up` started (JOUST_SUPERVISOR_PID names it); None for a
    process started otherwise (`joust worker` under docker compose: its supervisor is not ours).
    The parent-death signal was set before the exec (`service.ops.process_signals.die_with_parent`)."""
    try:
        parent = int(os.environ.get(SUPERVISOR_ENV, ""))
    except ValueError:
        return None
    if os.getppid() != parent:  # not ours (a stale variable), or gone already: the kernel's signal did it
        return None
    return watch_parent(parent, signalled=sys.platform.startswith("linux"))


def _watch(parent_pid: int, grace_s: float, signalled: bool, poll_s: float) -> None:
    while os.getppid() == parent_pid:
        time.sleep(poll_s)
    if not signalled:
        os.kill(os.getpid(), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        time.sleep(poll_s)
    log.error("parent %d died %.0f s ago and this process is still stopping: killing it", parent_pid, grace_s)
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
