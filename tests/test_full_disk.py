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
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from service.app import create_app
from service.config import Settings
from service.store import Store
from tests.fake_anthropic import FakeAnthropic
from tests.joust_up import start_joust, stop_joust

POLL_S = 0.05
BOUND_S = 60  # a bound for a state to come, not a measure
KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
DISK = "16m"  # the data dir at start, a run's writes, and room to fill


def wait_for(condition: Callable[[], object], within: float, what: str) -> float:
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > within:
            raise AssertionError(f"{what}: not within {within} s")
        time.sleep(POLL_S)
    return time.monotonic() - began


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of the test's own, unmounted at the end."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (root only): {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


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
        store: Store = client.app.state.store  # type: ignore[attr-defined]
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
    `joust up` restarted its own into the same refusal). Prints the resume time. Over 20 s: the
    matches in flight when Redis began refusing writes could not give their leases back, so
    they come home through the scheduler's lost-job sweep (about a minute), which the test waits
    for to show that nothing is lost."""
    data = disk / "data"
    with FakeAnthropic(latency_s=0.2) as fake:
        joust = start_joust(data, fake, workers=2)
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
                assert joust.call("GET", "/api/health")[0] == 200
                stored = joust.call("POST", "/api/submissions", new)
                assert stored[0] == 201 and stored[1]["submissions"][0]["created"], stored  # the refused one was not
                assert sorted(joust.worker_pids()) == workers  # no worker died meanwhile
                assert not [line for line in joust.lines if " exited with " in line]
                wait_for(lambda: "takes writes again" in said.read_text(), BOUND_S, "the new worker never resumed")
                assert extra.poll() is None, said.read_text()
                extra.send_signal(signal.SIGTERM)
                assert extra.wait(timeout=BOUND_S) == 0, said.read_text()
            finally:
                if extra.poll() is None:
                    extra.kill()
                    extra.wait()
        finally:
            stop_joust(joust)
