"""The judge-health cache on a real store (SQLite and PostgreSQL): refreshes read only what is new
and agree with a computation from scratch; `soon()` serves the latest result at once while one
refresh runs in the background (held here by an Event inside the store's read), waits only for
the very first computation, and concurrent callers share one refresh."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

import pytest

from leaderboard.types import Winner
from service.store import NewSubmission, Store
from service.store.imports import ImportedJudgement
from service.usecases.judge_health_cache import JudgeHealthCache

HOLD_S = 30.0  # the longest a held read waits before it gives up (and the test fails)


class Gate:
    """Holds the cache's reads of judgements (`Store.health_records_since`) until released."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered, self.released = threading.Event(), threading.Event()
        self.released.set()
        self.timed_out = False
        read = store.health_records_since

        def held(*args: Any, **kwargs: Any) -> Any:
            self.entered.set()
            if not self.released.wait(HOLD_S):
                self.timed_out = True
                raise TimeoutError("the gate was never released")
            return read(*args, **kwargs)

        monkeypatch.setattr(store, "health_records_since", held)

    def close(self) -> None:
        self.entered.clear()
        self.released.clear()

    def open(self) -> None:
        self.released.set()


@pytest.fixture
def ids(store: Store) -> list[int]:
    created = store.add_submissions([NewSubmission(question_id="q", question="Q?", model=f"m{i}", scenario="default",
                                                   output="x" * (5 + i)) for i in range(4)])
    return [sid for sid, _ in created]


def judge(store: Store, ids: list[int], key: str, judge: str = "import/llm", winner: Winner = Winner.A,
          pair: tuple[int, int] = (0, 1)) -> None:
    """One judgement of `judge` on two of `ids`, judged in both orders."""
    a, b = ids[pair[0]], ids[pair[1]]
    calls = [{"first": a, "winner": "A" if winner is Winner.A else "B"}, {"first": b, "winner": "B"}]
    store.import_judgements(name=key, source="test", judge=judge, criteria="overall", rows=[
        ImportedJudgement(key=key, a_id=a, b_id=b, outcome=winner, calls=calls[:1] if judge.startswith("human/") else calls)])


def from_scratch(store: Store) -> list[dict]:
    return [asdict(h) for h in store.judge_health()]


def test_records_are_read_on_from_an_id(store: Store, ids: list[int]) -> None:
    for n in range(5):
        judge(store, ids, f"k{n}", pair=(n % 3, 3))
    everything = store.health_records()
    first, upto = store.health_records_since(0, limit=2)
    rest, last = store.health_records_since(upto)
    assert first + rest == everything and len(first) == 2
    assert store.health_records_since(last) == ([], last)


def test_refreshes_read_only_what_is_new_and_agree_with_a_computation_from_scratch(
    store: Store, ids: list[int]
) -> None:
    cache = JudgeHealthCache(store)
    judge(store, ids, "k1")
    judge(store, ids, "k2", judge="import/other", winner=Winner.B, pair=(0, 2))
    assert [asdict(h) for h in cache.current().of()] == from_scratch(store)
    judge(store, ids, "v1", judge="human/ann", winner=Winner.B)  # a vote after the verdicts it is compared with
    health = cache.current()
    assert [asdict(h) for h in health.of()] == from_scratch(store) and health.humans == ("human/ann",)
    assert {h.judge: h.human_votes for h in health.judges}["import/llm"] == 1
    judge(store, ids, "k3", pair=(0, 2))
    assert [asdict(h) for h in cache.current().of()] == from_scratch(store)
    assert cache.current(["human/ann"]).of() == cache.current().of()
    assert cache.computations == 4 and cache.current().revision == store.revision()


def test_the_first_computation_is_waited_for_up_to_wait_s(store: Store, ids: list[int],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    judge(store, ids, "k1")
    cache, gate = JudgeHealthCache(store), Gate(store, monkeypatch)
    gate.close()
    assert cache.soon(wait_s=0) is None  # nothing yet: the page says it is being computed
    assert gate.entered.wait(HOLD_S)
    assert cache.soon(wait_s=0) is None and cache.computations == 1  # the same computation, still running
    gate.open()
    current = cache.current()  # waits for the running computation instead of starting another
    assert cache.computations == 1 and current.revision == store.revision()
    assert cache.soon(wait_s=0) is current
    assert cache.soon(wait_s=HOLD_S) is current and not gate.timed_out


def test_a_stale_result_is_served_at_once_while_one_refresh_runs(store: Store, ids: list[int],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    judge(store, ids, "k1")
    cache, gate = JudgeHealthCache(store), Gate(store, monkeypatch)
    earlier = set(threading.enumerate())
    old = cache.current()
    judge(store, ids, "k2", pair=(1, 2))
    gate.close()
    # wait_s would let it wait for the refresh; with a result to serve it does not (else the held
    # read would time out, failing the test)
    assert cache.soon(wait_s=HOLD_S) is old and old.revision < store.revision()
    assert gate.entered.wait(HOLD_S)
    callers = threading.Barrier(8)

    def ask(_: int) -> object:
        callers.wait()
        return cache.soon(wait_s=HOLD_S)

    with ThreadPoolExecutor(8) as pool:
        served = list(pool.map(ask, range(8)))
    assert all(s is old for s in served) and cache.computations == 2  # one refresh for everyone
    refreshing = [t for t in threading.enumerate() if t.name == "joust-judge-health" and t not in earlier]
    assert len(refreshing) == 1  # in one background thread
    gate.open()
    fresh = cache.current()  # the refresh that was running, picked up: no other
    assert cache.computations == 2 and fresh.revision == store.revision()
    assert cache.soon(wait_s=0) is fresh and [asdict(h) for h in fresh.of()] == from_scratch(store)
    assert fresh.of("import/llm")[0].judgements == old.of("import/llm")[0].judgements + 1
    assert not gate.timed_out
