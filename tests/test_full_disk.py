"""A full disk is said, not suffered: writes are refused with 507 naming the part, where and why
(nothing stored), health and `joust healthcheck` name what is out of space, workers wait instead
of dying and being restarted into the same refusal, and judging resumes once space is freed.

Before: with the data dir full, POST /api/submissions answered 201 (or 503 "the database is
unavailable"), workers crash-looped on Redis's MISCONF, health said "redis: down", and judging
resumed 30 s after space was freed.

The disk is a real one: a small tmpfs mounted for the test (root only) and filled by a file;
SQLite's own "database or disk is full" is met by capping the file's pages (max_page_count).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from service.config import Settings
from service.ops.redis_server import RedisServer
from service.store import Store
from service.store.queue import job_queue
from service.web.app import create_app
from tests.api_fixtures import app_state_of
from tests.fake_anthropic import FakeAnthropic
from tests.joust_up import start_joust, stop_joust
from workers.engine import JUDGE_MATCH
from workers.redis_full import refusal, wait_until_writable

POLL_S = 0.05
BOUND_S = 60  # a bound for a state to come, not a measure
KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
DISK = "16m"  # the data dir at start, a run's writes, and room to fill
LEASE_TTL_S = 2.0  # matches stranded by the full disk come home a lease ttl after it is freed


def wait_for(condition: Callable[[], object], within: float, what: str) -> float:
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > within:
            raise AssertionError(f"{what}: not within {within} s")
        time.sleep(POLL_S)
    return time.monotonic() - began


def mount_tmpfs(mount: Path, size: str) -> str | None:
    """Mount a tmpfs of `size` ("16m") at `mount` (made if missing): None once mounted, else why
    it cannot be (root only). `unmount` it at the end. tests/test_fault_schedule.py uses it too."""
    mount.mkdir(parents=True, exist_ok=True)
    try:
        made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                              capture_output=True, text=True)
    except OSError as exc:
        return f"cannot mount a tmpfs: {exc}"
    return None if made.returncode == 0 else f"cannot mount a tmpfs (root only): {made.stderr.strip()}"


def unmount(mount: Path) -> None:
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of the test's own, unmounted at the end."""
    mount = tmp_path / "disk"
    why = mount_tmpfs(mount, DISK)
    if why is not None:
        pytest.skip(why)
    try:
        yield mount
    finally:
        unmount(mount)


def fill(disk: Path) -> Path:
    """Fill the disk to its last byte with one file; remove the file to free it."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1 << 9, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def test_sqlites_own_disk_full_error_is_a_507_that_stored_nothing(tmp_path: Path, redis_url: str) -> None:
    """SQLITE_FULL ("database or disk is full", here from a page cap) was a 503 "the database is
    unavailable (down or restarting)", which it is not."""
    settings = Settings(data_dir=tmp_path / "data", redis_url=redis_url, api_key=KEY)
    with TestClient(create_app(settings)) as client:
        store: Store = app_state_of(client).store
        pages = store.engine.connect().exec_driver_sql("PRAGMA page_count").scalar()

        @event.listens_for(store.engine, "connect")
        def cap(dbapi_conn: object, _record: object) -> None:
            dbapi_conn.execute(f"PRAGMA max_page_count = {pages}")  # type: ignore[attr-defined]

        store.engine.dispose()  # every connection from now on is capped
        big = [{"question": f"Q{i}?", "model": "m", "output": "x" * 4000} for i in range(40)]
        answer = client.post("/api/submissions", json=big, headers=AUTH)
        assert answer.status_code == 507, answer.text
        body = answer.json()
        assert (body["part"], body["reason"]) == ("database", "OperationalError: database or disk is full"), body
        assert body["where"] == str((tmp_path / "data" / "joust.db").resolve()) and answer.headers["Retry-After"]
        event.remove(store.engine, "connect", cap)
        store.engine.dispose()
        again = client.post("/api/submissions", json=big, headers=AUTH)
        assert again.status_code == 201 and all(s["created"] for s in again.json()["submissions"]), again.text


@pytest.mark.slow
def test_a_full_data_dir_is_named_waited_out_and_judging_resumes_once_space_is_freed(
        disk: Path, tmp_path: Path) -> None:
    """`joust up` with its data dir (SQLite, Redis) on a tmpfs, mid-run; the disk is filled.
    A worker started meanwhile meets a Redis that refuses writes: it used to exit at once (and
    `joust up` restarted its own into the same refusal). Prints the resume time.

    The matches in flight when Redis began refusing writes could neither give their leases back
    nor release their claims: both lapse after the lease ttl, and a reaper hands the matches out
    again once Redis takes writes. Leases of LEASE_TTL_S (the default is 15 s) and the
    scheduler's lost-job sweep kept out of it (JOUST_MATCH_TIMEOUT=600) show that the workers'
    own recovery brings them home: judging resumes about 0.4 s after space is freed and the rest
    of the run (36 matches at 0.2 s a call) is done about 11 s later. Over 20 s (about 30 s in
    all): `joust up` starting, the run before and after the fill, and a second worker process
    started into the refusal; it was 30 s more, waiting on the sweep and on claims of the
    default ttl."""
    data = disk / "data"
    with FakeAnthropic(latency_s=0.2) as fake:
        joust = start_joust(data, fake, workers=2, JOUST_LEASE_TTL=str(LEASE_TTL_S), JOUST_MATCH_TIMEOUT="600")
        try:
            subs = [{"question": f"q{i}", "model": m, "output": f"{m} says {i}"} for i in range(6) for m in "abcd"]
            assert joust.call("POST", "/api/submissions", subs)[0] == 201
            status, run = joust.call("POST", "/api/tournaments", {"name": "t", "judge": "anthropic/judge-1"})
            assert status == 202, run

            def done() -> int:
                return joust.call("GET", f"/api/tournaments/{run['id']}")[1]["matches_done"]

            wait_for(lambda: done() >= 3, BOUND_S, "the run never started")
            filler = fill(disk)

            new = [{"question": "late", "model": "a", "output": "stored once space is back"}]
            refused = joust.call("POST", "/api/submissions", new)
            assert refused[0] == 507, refused
            assert refused[1]["part"] == "database" and refused[1]["where"] == str(data.resolve() / "joust.db")
            assert "bytes free" in refused[1]["reason"]

            # Redis refuses writes from its next one (the scheduler's beat, every 0.5 s)
            wait_for(lambda: joust.call("GET", "/api/health")[1]["redis"] == "full", BOUND_S, "redis never full")
            code, health = joust.call("GET", "/api/health")
            assert code == 503 and (health["database"], health["redis"]) == ("full", "full"), health
            where = {short["part"]: short for short in health["out_of_space"]}
            assert where["database"]["where"] == str(data.resolve() / "joust.db")
            assert where["redis"]["where"].startswith(str(data.resolve() / "redis"))
            assert where["redis"]["reason"].startswith("MISCONF"), where

            env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL", "JOUST_API_KEY")}
            env.update(JOUST_DATA_DIR=str(data),
                       REDIS_URL=f"redis://:{(data / 'redis_password').read_text().strip()}@127.0.0.1:"
                                 f"{where['redis']['where'].rsplit(':', 1)[1].rstrip(')')}/0")
            check = subprocess.run([sys.executable, "-m", "service.cli", "healthcheck", "worker"], env=env,
                                   capture_output=True, text=True, timeout=BOUND_S)
            assert check.returncode == 1 and "redis is out of space at" in check.stderr, check.stderr
            assert "database is out of space at" in check.stderr, check.stderr

            # a worker started now meets the refusal at its start; it used to exit, and be restarted into it
            env.update(ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY="test", PYTHONUNBUFFERED="1")
            said = tmp_path / "extra-worker.log"
            with open(said, "wb") as out:
                extra = subprocess.Popen([sys.executable, "-m", "service.cli", "worker", "--name", "extra"],
                                         env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                wait_for(lambda: "Redis refuses writes" in said.read_text() or extra.poll() is not None, BOUND_S,
                         "the new worker never said it waits")
                assert extra.poll() is None, said.read_text()
                workers = sorted(joust.worker_pids())
                before = done()

                filler.unlink()
                freed = time.monotonic()
                wait_for(lambda: done() > before, BOUND_S, "judging never resumed")
                resumed = time.monotonic() - freed
                view = joust.wait_done(run["id"])
                print(f"\nspace freed to judging again: {resumed:.2f} s; to the run done: {time.monotonic() - freed:.2f} s")
                assert (view["status"], view["matches_done"]) == ("done", view["matches_total"]), view
                # what Redis's refusal stranded came home through the leases, not the sweep (kept out above)
                stranded = any("judging it failed" in line for line in joust.lines)
                # (the reaper's warning, or the job it enqueued, named "(its worker stopped)": the
                # warning is written after the jobs, and may not have reached the log yet)
                leased = any("handed out again" in line or "(its worker stopped)" in line for line in joust.lines)
                assert not stranded or leased, joust.lines[-40:]
                assert joust.call("GET", "/api/health")[0] == 200
                stored = joust.call("POST", "/api/submissions", new)
                assert stored[0] == 201 and stored[1]["submissions"][0]["created"], stored  # the refused one was not
                assert sorted(joust.worker_pids()) == workers  # no worker died meanwhile
                assert not [line for line in joust.lines if " exited with " in line]
                wait_for(lambda: "takes writes again" in said.read_text(), BOUND_S, "the new worker never resumed")
                assert extra.poll() is None, said.read_text()
                extra.send_signal(signal.SIGTERM)
                try:
                    code = extra.wait(timeout=BOUND_S)
                except subprocess.TimeoutExpired:
                    pytest.fail(f"the extra worker did not stop on SIGTERM:\n{said.read_text()[-4000:]}")
                assert code == 0, said.read_text()
            finally:
                if extra.poll() is None:
                    extra.kill()
                    extra.wait()
        finally:
            stop_joust(joust)


def test_a_job_taken_as_redis_began_refusing_writes_goes_back_on_its_queue(
        disk: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault schedule: RQ takes a job by moving it to its queue's intermediate list,
    registers an execution, then starts it with a third write; Redis refused that one, and the
    job sat in the intermediate list, still "queued" (its match waited for the scheduler's
    lost-job sweep). Now the worker that waits for Redis puts it back at the front of its queue
    once Redis takes writes, and drops its execution; a job that did start is left alone."""
    with RedisServer(disk / "redis", persistence=True) as server:
        redis = server.client()
        queue = job_queue(redis, "full")
        stranded, started, waiting = (queue.enqueue(JUDGE_MATCH, i) for i in (1, 2, 3))
        for job in (stranded, started):  # RQ's dequeue (BLMOVE) and its execution, for two jobs
            redis.lmove(queue.key, queue.intermediate_queue_key)
            redis.zadd(queue.started_job_registry.key, {f"{job.id}:run": time.time() + 60})
        redis.hset(started.key, "status", "started")  # this one's start went through
        filler = fill(disk)
        wait_for(lambda: refusal(redis) is not None, BOUND_S, "Redis never refused a write")
        stop, result = threading.Event(), []
        waiter = threading.Thread(target=lambda: result.append(
            wait_until_writable(redis, refusal(redis) or "", stop, poll_s=POLL_S)))
        waiter.start()
        try:
            wait_for(lambda: any("refuses writes" in r.getMessage() for r in caplog.records), BOUND_S,
                     "the worker never began to wait")
            assert queue.job_ids == [waiting.id]  # nothing moves while Redis refuses writes
            filler.unlink()
            waiter.join(BOUND_S)
        finally:
            stop.set()
            waiter.join()
        assert result == [True]
        assert queue.job_ids == [stranded.id, waiting.id]
        assert redis.lrange(queue.intermediate_queue_key, 0, -1) == [started.id.encode()]
        assert redis.zrange(queue.started_job_registry.key, 0, -1) == [f"{started.id}:run".encode()]
        redis.close()
