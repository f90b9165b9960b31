"""A worker stops when asked, without waiting out its pubsub poll.

RQ's worker listens for commands on a pubsub channel, read by redis-py's thread with a 60 s
poll. RQ's own `unsubscribe` sends UNSUBSCRIBE and only then stops that thread; the thread may
already have read the reply and gone back to its 60 s wait, and from redis-py 8.2 `stop()` joins
it. Every `joust worker` shutdown (and every burst of the test fixtures) then took up to a
minute. `JoustWorker.unsubscribe` clears the thread's flag first, so the reply ends it.

The bound below is a hang guard (10 s against a 60 s poll), not a speed test.
"""
from __future__ import annotations

import threading

import pytest
from redis import Redis

from service.store.queue import job_queue
from workers.rq_worker import JoustWorker

HANG_GUARD_S = 10.0


def finishes(action: object) -> bool:
    """Whether `action()` returns within HANG_GUARD_S (run on a thread, so a hang is seen)."""
    done = threading.Event()

    def run() -> None:
        action()  # type: ignore[operator]
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(HANG_GUARD_S)


@pytest.mark.parametrize("attempt", range(20))  # the wait was a race: try it several times
def test_unsubscribe_ends_the_pubsub_thread_at_once(redis_url: str, attempt: int) -> None:
    redis = Redis.from_url(redis_url)
    worker = JoustWorker([job_queue(redis, "joust")], connection=redis)
    worker.subscribe()
    thread = worker.pubsub_thread
    assert thread is not None and thread.is_alive()
    pubsub = worker.pubsub
    assert pubsub is not None
    assert finishes(worker.unsubscribe), "unsubscribe waited for the pubsub thread's 60 s poll"
    assert not thread.is_alive()
    redis.close()


@pytest.mark.timeout(HANG_GUARD_S, method="signal")  # work() sets signal handlers: main thread only
def test_a_burst_over_an_empty_queue_returns_at_once(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    worker = JoustWorker([job_queue(redis, "joust")], connection=redis)
    assert worker.work(burst=True, with_scheduler=True) is False  # nothing to do, and back
    assert worker.pubsub_thread is not None and not worker.pubsub_thread.is_alive()
    redis.close()
