"""Stale-while-refresh for the pages: serve the latest result at once, refresh it in the background.

Why: a page must answer in milliseconds while a tournament writes judgements, and some of what it
shows (effects, judge health, a tournament's board and roster) takes seconds to recompute from
the judgements. So a page asks `Refreshes.soon`: a current result is served as is; a stale one is
served at once (its `revision` says how old it is) while one background thread per key computes
a newer one (single-flight: a key never has two refreshes running, so requests arriving during a
refresh do not pile up work); before the first result, that first computation is waited for up
to `wait_s`, then None (the page says it is being computed). The API, which promises current
results, does not come here.

A key is refreshed at most once per `gap_s`: a refresh asked for sooner starts when the gap is
over (and counts as running meanwhile). Why: during a tournament every request finds a new
revision, and refreshing a 400-player board at each one would keep a core busy, and hold the
interpreter lock the requests need, for a picture that the pages fetch every few seconds anyway.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import TypeVar

log = logging.getLogger(__name__)

GAP_S = 1.0  # the pages' refreshes: at most one per key per second (they poll every 4 s)

T = TypeVar("T")


class Refreshes:
    """Background refreshes by key, at most one running per key; `started` counts them, so a test
    can tell a served result from a refreshed one."""

    def __init__(self, name: str, *, gap_s: float = 0.0, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.name = name
        self.started = 0
        self.gap_s = gap_s
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._threads: dict[Hashable, threading.Thread] = {}
        self._began: dict[Hashable, float] = {}  # when each key's last refresh began its work

    def start(self, key: Hashable, work: Callable[[], object]) -> threading.Thread:
        """The refresh of `key` running in the background: the one already running, else `work`
        started in a new thread (its errors logged: the page keeps the latest result)."""
        with self._lock:
            thread = self._threads.get(key)
            if thread is None or not thread.is_alive():
                now, began = self._clock(), self._began.get(key)
                delay = 0.0 if began is None else max(began + self.gap_s - now, 0.0)
                self._began[key] = now + delay
                thread = self._threads[key] = threading.Thread(
                    target=self._run, args=(key, work, delay), name=f"joust-{self.name}", daemon=True)
                self.started += 1
                thread.start()
            return thread

    def soon(self, key: Hashable, latest: Callable[[], T | None], current: Callable[[T], bool],
             work: Callable[[], object], wait_s: float = 1.0, *, stale_ok: bool = True) -> T | None:
        """`latest()` when it is `current`; else that stale result at once with `work` started in
        the background to keep a newer one; before any result (or always, without `stale_ok`),
        `work` is waited for up to `wait_s` and `latest()` read again (None if there is none yet)."""
        found = latest()
        if found is not None and current(found):
            return found
        thread = self.start(key, work)
        if found is not None and stale_ok:
            return found
        thread.join(wait_s)
        return latest()

    def join(self, key: Hashable, timeout_s: float | None = None) -> None:
        """Wait for the refresh of `key` if one is running (tests, and callers that must see it)."""
        with self._lock:
            thread = self._threads.get(key)
        if thread is not None:
            thread.join(timeout_s)

    def join_all(self, timeout_s: float | None = None) -> None:
        """Wait for every refresh running now (tests: a page settled behind a loaded machine)."""
        with self._lock:
            threads = list(self._threads.values())
        for thread in threads:
            thread.join(timeout_s)

    def _run(self, key: Hashable, work: Callable[[], object], delay_s: float) -> None:
        try:
            if delay_s > 0:
                self._sleep(delay_s)
            work()
        except Exception:
            log.exception("refreshing %s %r in the background failed", self.name, key)
        finally:
            with self._lock:
                if self._threads.get(key) is threading.current_thread():
                    del self._threads[key]
