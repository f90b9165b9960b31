"""The pages' background refreshes: one at a time per key, at most one per gap, never lost."""
from __future__ import annotations

import threading

from service.usecases.refreshes import Refreshes


class Clock:
    """Time that moves only when told, and records the sleeps asked of it (moving by them)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_refresh_asked_within_the_gap_waits_for_it_and_still_runs() -> None:
    clock = Clock()
    refreshes = Refreshes("test", gap_s=1.0, clock=clock, sleep=clock.sleep)
    ran: list[int] = []
    refreshes.start("k", lambda: ran.append(1)).join(5)
    assert ran == [1] and clock.slept == []  # the first runs at once
    clock.now += 0.25
    refreshes.start("k", lambda: ran.append(2)).join(5)
    assert ran == [1, 2] and clock.slept == [0.75]  # asked 0.25 s later: runs when the gap is over
    clock.now += 3.0
    refreshes.start("k", lambda: ran.append(3)).join(5)
    assert ran == [1, 2, 3] and clock.slept == [0.75]  # past the gap: at once
    refreshes.start("other", lambda: ran.append(4)).join(5)
    assert ran[-1] == 4 and clock.slept == [0.75]  # the gap is per key
    assert refreshes.started == 4


def test_requests_during_a_refresh_share_it() -> None:
    refreshes = Refreshes("test", gap_s=0.0)
    release, ran = threading.Event(), []

    def work() -> None:
        release.wait(5)
        ran.append(1)

    first = refreshes.start("k", work)
    assert refreshes.start("k", work) is first and refreshes.started == 1
    release.set()
    first.join(5)
    assert ran == [1]


def test_join_all_waits_for_every_key_running() -> None:
    refreshes = Refreshes("test", gap_s=0.0)
    release, ran = threading.Event(), []

    def work(key: str) -> None:
        release.wait(5)
        ran.append(key)

    for key in ("a", "b"):
        refreshes.start(key, lambda key=key: work(key))
    refreshes.join_all(0.01)
    assert ran == []  # both still held
    release.set()
    refreshes.join_all(5)
    assert sorted(ran) == ["a", "b"]
