"""The one engine of a worker process (`workers.engine.Engine`), built on first use.

RQ calls jobs as plain functions, so a job asks for the process's engine; it is built from the
environment the process was started with, and built again when that environment changes (a
test pointing the process elsewhere) or after a fork.
"""
from __future__ import annotations

import os

from service.config import Settings, env_fingerprint

from .engine import Engine

_engine: Engine | None = None
_pid = 0
_fingerprint: tuple[tuple[str, str], ...] = ()


def engine() -> Engine:
    """The engine of this process (see the module docstring). The settings, and the files they
    name, are parsed again only when the environment changed, not on every job."""
    global _engine, _pid, _fingerprint
    fingerprint = env_fingerprint()
    if _engine is None or _pid != os.getpid() or fingerprint != _fingerprint:
        if _engine is not None and _pid == os.getpid():
            _engine.close(drain_s=0)
        _engine, _pid, _fingerprint = Engine(Settings.from_env()), os.getpid(), fingerprint
    return _engine


def shutdown(drain_s: float | None = None) -> list[int]:
    """Drain and close this process's engine, if it has one; the matches it gave back."""
    global _engine
    if _engine is None or _pid != os.getpid():
        _engine = None
        return []
    found, _engine = _engine, None
    left = found.drain(drain_s)
    found.close(drain_s=0)
    return left
