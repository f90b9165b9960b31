"""The batch tables of the store, on SQLite and PostgreSQL: every transition of a request is a
compare-and-set, so a request is stored once, submitted once and answered once, whoever races."""
from __future__ import annotations

import threading

from leaderboard.spec import RunSpec
from leaderboard.types import Pair
from service.store import (
    BatchCounts,
    BatchResult,
    BatchStatus,
    NeededRequest,
    NewSubmission,
    RequestStatus,
    Store,
)
from service.store.tournament_rows import RequestTally

SPEC = RunSpec(judge="anthropic/m", delivery="batch")


def run(store: Store, spec: RunSpec = SPEC, models: str = "abc") -> tuple[int, list[int]]:
    """A tournament over one question answered by `models`; its id and its match ids."""
    added = store.add_submissions([NewSubmission("q1", "Q?", m, "default", f"{m} says") for m in models])
    ids = [sid for sid, _ in added]
    pairs = [Pair(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]]
    tid = store.create_tournament("t", spec, pairs)
    return tid, store.pending_matches(tid)


def need(custom_id: str, reserved: float | None = None, tid: int | None = None) -> NeededRequest:
    return NeededRequest(custom_id, "anthropic/m", "m", '{"model": "m"}', 20, tid, reserved)


def succeeded(custom_id: str) -> BatchResult:
    return BatchResult(custom_id, RequestStatus.SUCCEEDED, '{"winner": "A"}', 10, 3)


def test_twins_share_one_request_and_a_match_is_ready_once_its_requests_ended(store: Store) -> None:
    tid, (m1, m2, m3) = run(store)
    assert store.ready_batch_matches() == [m1, m2, m3]  # nothing asked yet
    assert store.wait_on_requests(m1, [need("x", 0.5, tid), need("y", 0.5, tid)]) == {"x", "y"}
    assert store.wait_on_requests(m2, [need("x", 0.5, tid)]) == frozenset()  # a twin: stored already
    assert store.ready_batch_matches() == [m3]
    assert store.get_tournament(tid).status == "running"
    assert [r.custom_id for r in store.pending_requests()] == ["x", "y"]
    opened = store.open_batch("m", ["x", "y"])
    assert opened is not None and [r.custom_id for r in opened.requests] == ["x", "y"]
    assert opened.requests[0].params == '{"model": "m"}'
    assert store.batch_created(opened.id, "msgbatch_1", BatchStatus.IN_PROGRESS, BatchCounts(processing=2), 1.0)
    assert not store.batch_created(opened.id, "msgbatch_2", BatchStatus.IN_PROGRESS, BatchCounts(), 1.0)
    settled = store.store_results(opened.id, [succeeded("x")], give_up_after=3)
    assert [(s.custom_id, s.reserved_usd, s.tournament_id) for s in settled] == [("x", 0.5, tid)]
    assert store.ready_batch_matches() == [m2, m3]  # m1 still waits on y
    found = store.batch_request("x")
    assert found is not None and (found.status, found.text, found.input_tokens) == (RequestStatus.SUCCEEDED,
                                                                                     '{"winner": "A"}', 10)
    view = store.get_tournament(tid)
    assert view.requests == RequestTally(pending=0, submitted=1, done=1, failed=0)
    assert [(b.id, b.status, b.requests) for b in view.batches] == [("msgbatch_1", "in_progress", 2)]


def test_a_request_is_submitted_once_and_answered_once(store: Store) -> None:
    tid, (m1, *_) = run(store)
    store.wait_on_requests(m1, [need("x")])
    opened = store.open_batch("m", ["x"])
    assert opened is not None
    assert store.open_batch("m", ["x"]) is None  # it is submitted: not again
    assert store.store_results(opened.id + 1, [succeeded("x")], 3) == []  # not a result of its batch
    assert len(store.store_results(opened.id, [succeeded("x")], 3)) == 1
    assert store.store_results(opened.id, [succeeded("x")], 3) == []  # results streamed again after a crash
    assert store.close_batch(opened.id, BatchStatus.ENDED, 3, counts=BatchCounts(succeeded=1)) == []
    assert store.batch_request("x").attempts == 1  # type: ignore[union-attr]


def test_two_drivers_racing_never_submit_one_request_twice(store: Store) -> None:
    tid, (m1, *_) = run(store)
    names = [f"r{i}" for i in range(40)]
    store.wait_on_requests(m1, [need(n) for n in names])
    other = Store(store.url)
    got: list[object] = []
    go = threading.Barrier(2)

    def take(st: Store) -> None:
        go.wait()
        got.append(st.open_batch("m", names))

    threads = [threading.Thread(target=take, args=(st,)) for st in (store, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    other.close()
    opened = [o for o in got if o is not None]
    assert len(opened) == 1 and len(opened[0].requests) == 40  # type: ignore[attr-defined]


def test_transient_failures_go_back_to_pending_until_given_up(store: Store) -> None:
    tid, (m1, m2, _) = run(store)
    store.wait_on_requests(m1, [need("x", 0.25, tid)])
    store.wait_on_requests(m2, [need("x")])
    for _ in (1, 2):
        opened = store.open_batch("m", ["x"])
        assert opened is not None
        failed = BatchResult("x", RequestStatus.ERRORED, error="api_error: boom", retry=True)
        assert store.store_results(opened.id, [failed], give_up_after=3) == []
        assert store.batch_request("x").status is RequestStatus.PENDING  # type: ignore[union-attr]
    opened = store.open_batch("m", ["x"])
    assert opened is not None
    [gave_up] = store.close_batch(opened.id, BatchStatus.ENDED, 3, counts=BatchCounts(expired=1))  # no line came
    assert (gave_up.gave_up, gave_up.attempts, gave_up.waiting, gave_up.reserved_usd) == (True, 3, (m1, m2), 0.25)
    given = store.batch_request("x")
    assert given is not None and given.status is RequestStatus.EXPIRED and given.reopenable
    # asked for again (a retry), it is opened again with fresh attempts
    assert store.wait_on_requests(m1, [need("x", 0.25, tid)]) == {"x"}
    assert store.batch_request("x").attempts == 0  # type: ignore[union-attr]


def test_a_permanent_error_is_final(store: Store) -> None:
    tid, (m1, *_) = run(store)
    store.wait_on_requests(m1, [need("x")])
    opened = store.open_batch("m", ["x"])
    assert opened is not None
    invalid = BatchResult("x", RequestStatus.ERRORED, error="invalid_request_error: no", retry=False)
    [settled] = store.store_results(opened.id, [invalid], 3)
    assert not settled.gave_up
    found = store.batch_request("x")
    assert found is not None and found.permanent and not found.reopenable
    assert store.wait_on_requests(m1, [need("x")]) == frozenset()  # not opened again
    assert m1 in store.ready_batch_matches()  # its replay fails it with the error


def test_requests_nobody_waits_on_are_dropped_and_their_batches_idle(store: Store) -> None:
    tid, (m1, m2, _) = run(store)
    store.wait_on_requests(m1, [need("x", 0.5, tid)])
    store.wait_on_requests(m2, [need("y", 0.5, tid)])
    opened = store.open_batch("m", ["y"])
    assert opened is not None
    store.batch_created(opened.id, "b1", BatchStatus.IN_PROGRESS, BatchCounts(processing=1), 1.0)
    assert store.idle_batches() == set()
    store.cancel_tournament(tid)
    assert store.wait_on_requests(m1, [need("z")]) is None  # a cancelled match stores nothing
    assert [(s.custom_id, s.reserved_usd) for s in store.drop_orphan_requests()] == [("x", 0.5)]
    assert store.batch_request("x") is None and store.batch_request("z") is None
    assert store.idle_batches() == {opened.id}  # its results would help no one: cancel it
    assert store.batch_work_left()  # ... and collect it
    store.close_batch(opened.id, BatchStatus.ENDED, 3, counts=BatchCounts(canceled=1))
    store.drop_orphan_requests()  # y went back to pending, nobody waits on it
    assert not store.batch_work_left()


def test_live_runs_are_never_ready_for_the_batch_driver(store: Store) -> None:
    run(store, SPEC.with_(delivery="live"))
    assert store.ready_batch_matches() == [] and not store.batch_work_left()
