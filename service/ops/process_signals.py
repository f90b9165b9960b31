"""Two process helpers of the embedded Redis that joust's other children use too: a preexec_fn
that has the kernel SIGTERM a child when its parent dies, and whether a pid still runs.

Apart from `redis_server` because they are not Redis's: `joust up` starts its roles with
`die_with_parent` (`service.ops.processes`), and the benches and the tests' servers use both.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def pid_alive(pid: int) -> bool:
    """Whether a process runs under this pid; a zombie counts as gone (its redis is dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust kill(0)
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that makes the child get SIGTERM when its parent dies (Linux only).

    Pass it with `start_new_session=True`, from a long-lived thread: the signal follows the
    thread that forked. None where the platform has no such signal.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved before fork, not in the child
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    sigterm = int(signal.SIGTERM)

    def set_parent_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, sigterm, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return set_parent_death_signal
