"""A fault-injection schedule in the style of Jepsen, on one machine: a tournament runs under
`joust up` (embedded Redis, two workers) on a PostgreSQL cluster of this module's own, while a
schedule kills and freezes Redis, PostgreSQL, the workers and the supervisor, fills the disk of
joust's data dir (where the embedded Redis writes: a small tmpfs the test mounts) and frees it,
and makes the fake provider fail (500s), shed load (429/529 storms) and hang; a clients thread
asks the API all along. Afterwards `tests.fault_history.check` judges the whole history: every
match judged exactly once, nothing lost, calls paid twice unseen no more than the calls in
flight at the faults (and every paid call counted, but the replies that died with a killed
process), no answer 5xx but a 503 with its reason, or a 507 with its reason while the disk was
full; and the recovery of each fault is printed.

Timers are shortened through settings so the schedule fits in under a minute: leases of 2 s,
calls given up after 1.5 s, short backoffs and breaker times, a provider answering in 0.4 s
(0.05 s once the last fault is over: what is left of the run is judged quickly).

The tmpfs needs root (CI runs as root): elsewhere the schedule runs without its full disk, and
the test then says so by skipping, after its checks of the rest have passed.
"""
from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from redis import Redis

from service.config import Settings
from service.store import Store
from service.store.queue import job_queue
from tests.fake_anthropic import FakeAnthropic, prefer
from tests.fault_clients import Clients
from tests.fault_history import DISK, History, check, paid_calls, read_state
from tests.joust_up import Joust, _cmdline, start_joust, stop_joust
from tests.postgres_fixture import PostgresServer, PostgresUnavailable
from tests.required import skip_required
from tests.test_full_disk import fill, mount_tmpfs, unmount
from workers import jobs
from workers.engine import JUDGE_MATCH, OVERDUE_S

MODELS = [f"m{i}" for i in range(8)]
QUESTIONS = 5  # 8 models, 5 questions: 140 matches, 280 calls (enough to outlast the schedule)
JUDGE = "anthropic/claude-sonnet-4-5"
LEASE_TTL_S = 2.0
POLL_S = 0.02
SETTINGS = {
    "JOUST_LEASE_TTL": str(LEASE_TTL_S),
    "JOUST_MATCH_TIMEOUT": "600",  # the scheduler's sweep stays out of it: the workers recover alone
    "JOUST_JUDGE_CONCURRENCY": "3",
    "JOUST_JUDGE_TIMEOUT": "1.5",  # a hanging provider's calls are given up after this
    "JOUST_JOB_RETRIES": "30",  # a storm delays a match; it should not fail it
    "JOUST_STOP_AFTER_FAILURES": "1000",
    "JOUST_RETRY_BACKOFF": "0.2",
    "JOUST_CALL_BACKOFF": "0.05",
    "JOUST_OVERLOAD_PAUSE": "0.1",
    "JOUST_BREAKER_OPEN": "0.3",
    "JOUST_BREAKER_PROBES": "1000",  # never "down": the storm ends
    "JOUST_DRAIN_TIMEOUT": "1",
}
DATA_DISK = "32m"  # joust's data dir: the embedded Redis's files over the run (a few MB), and room to fill
FINAL_LATENCY_S = 0.05  # the provider's reply time once the schedule is over


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    base = Path(tempfile.mkdtemp(prefix="joust-pg-faults-", dir="/tmp" if os.geteuid() == 0 else None))
    server = PostgresServer(base)
    try:
        try:
            server.start()
        except PostgresUnavailable as why:
            skip_required(why.part, f"PostgreSQL tests skipped: {why}")
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def poll(condition: Callable[[], object], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(POLL_S)
    raise AssertionError(f"timed out after {within:.0f} s waiting for {what}")


def hold(seconds: float, done: Callable[[], bool] = lambda: False) -> None:
    """Keep a fault on for `seconds` (its length is the schedule's choice), ending early once
    `done()` (the run is over: nothing left to hurt)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until and not done():
        time.sleep(POLL_S)


class Schedule:
    """The faults, in order, against one `joust up`, its PostgreSQL and the fake provider."""

    def __init__(self, joust: Joust, postgres: PostgresServer, fake: FakeAnthropic, history: History,
                 clients: Clients, tid: int, store: Store, disk: Path | None) -> None:
        self.joust, self.postgres, self.fake, self.history = joust, postgres, fake, history
        self.clients, self.tid, self.store = clients, tid, store
        self.disk = disk  # the tmpfs under joust's data dir; None where none could be mounted
        self.database_away = False

    def note(self, part: str, action: str, note: str = "") -> None:
        self.history.record(time.monotonic(), part, action, int(self.fake.stats()["in_flight"]), note)

    def over(self) -> bool:
        """Whether the run is over (not asked while the database is away: False then)."""
        if self.database_away:
            return False
        return self.store.get_tournament(self.tid).matches_pending == 0

    def done(self) -> int:
        return self.store.get_tournament(self.tid).matches_done

    def settle(self, within: float = 30) -> None:
        """After a fault is healed: wait until a match is judged again (or the run is over), so
        that each fault's recovery is its own, not the next fault's. The checker measures it."""
        before = self.done()
        poll(lambda: self.over() or self.done() > before, within, "a match judged after the fault")

    def healthy(self) -> bool:
        return self.clients.ask("GET", "/api/health")[0] == 200

    def redis_said_full(self) -> bool:
        body = self.clients.ask("GET", "/api/health")[1]
        return isinstance(body, dict) and body.get("redis") == "full"

    # provider faults --------------------------------------------------------------------------

    def storm(self, kinds: list[str], rate: float, faulty: int, extra: dict | None = None) -> None:
        before = sum(r.fault in kinds for r in self.fake.received)
        self.fake.configure({"fault_rate": rate, "fault_kinds": kinds, "fault_seed": 7, **(extra or {})})
        self.note("provider", "storm", "+".join(kinds))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not self.over():
            if sum(r.fault in kinds for r in self.fake.received) - before >= faulty:
                break
            time.sleep(POLL_S)
        self.fake.configure({"fault_rate": 0.0})
        self.note("provider", "calm")

    # process faults ---------------------------------------------------------------------------

    def kill_worker(self, index: int) -> None:
        pid = sorted(self.joust.worker_pids())[index]
        self.note(f"worker-{index}", "kill")
        os.killpg(pid, signal.SIGKILL)  # the worker and the RQ scheduler it forked
        poll(lambda: len(self.joust.worker_pids()) == 2 and pid not in self.joust.worker_pids(), 30,
             "the supervisor to start the killed worker again")
        self.note(f"worker-{index}", "back")

    def freeze_worker(self, index: int) -> None:
        """Frozen past its leases: the reapers hand its matches out while it holds their
        replies; thawed, it finds its leases and claims lost."""
        pid = sorted(self.joust.worker_pids())[index]
        self.note(f"worker-{index}", "freeze")
        os.killpg(pid, signal.SIGSTOP)
        try:
            hold(2.5 * LEASE_TTL_S, self.over)
        finally:
            os.killpg(pid, signal.SIGCONT)
        self.note(f"worker-{index}", "thaw")

    def kill_redis(self) -> None:
        pid = redis_pid(self.joust)
        self.note("redis", "kill")
        os.kill(pid, signal.SIGKILL)
        poll(lambda: redis_pid(self.joust) not in (None, pid) and self.healthy(), 30, "Redis back")
        self.note("redis", "back")

    def freeze_redis(self) -> None:
        pid = redis_pid(self.joust)
        self.note("redis", "freeze")
        os.kill(pid, signal.SIGSTOP)
        try:
            hold(1.5, self.over)
        finally:
            os.kill(pid, signal.SIGCONT)
        self.note("redis", "thaw")

    def full_disk(self) -> None:
        """The disk of joust's data dir fills up (one file to its last byte): the embedded Redis
        refuses writes (MISCONF), health names it, what needs a Redis write waits or answers 507;
        held a second past health saying so, then the file is removed."""
        if self.disk is None:
            return
        self.note(DISK, "fill")
        filler = fill(self.disk)
        try:
            poll(self.redis_said_full, 10, "health to say Redis is out of space")
            hold(1.0, self.over)
        finally:
            filler.unlink()
        self.note(DISK, "free")

    def kill_postgres(self) -> None:
        """An immediate shutdown (SIGQUIT: no checkpoint, crash recovery at the next start), as a
        crash does; then started again over the same data."""
        proc = self.postgres._proc
        assert proc is not None
        self.note("postgres", "kill")
        self.database_away = True
        proc.send_signal(signal.SIGQUIT)
        proc.wait(timeout=30)
        self.postgres._proc = None
        poll(lambda: self.clients.ask("GET", "/api/health")[0] == 503, 10, "health to say the database is down")
        hold(1.0, self.over)
        self.postgres.start_again()
        self.database_away = False
        self.note("postgres", "back")

    def freeze_postgres(self) -> None:
        proc = self.postgres._proc
        assert proc is not None
        self.note("postgres", "freeze")
        self.database_away = True
        os.killpg(proc.pid, signal.SIGSTOP)  # the postmaster and its backends
        try:
            hold(1.5, self.over)
        finally:
            os.killpg(proc.pid, signal.SIGCONT)
            self.database_away = False
        self.note("postgres", "thaw")

    def freeze_supervisor(self) -> None:
        """Frozen while a worker dies: the worker comes back once the supervisor is thawed."""
        self.note("supervisor", "freeze")
        self.joust.proc.send_signal(signal.SIGSTOP)
        try:
            pid = sorted(self.joust.worker_pids())[0]
            self.note("worker-0", "kill")
            os.killpg(pid, signal.SIGKILL)
            hold(1.0, self.over)
        finally:
            self.joust.proc.send_signal(signal.SIGCONT)
        self.note("supervisor", "thaw")
        poll(lambda: len(self.joust.worker_pids()) == 2, 30, "the thawed supervisor to restart its worker")
        self.note("worker-0", "back")

    def kill_supervisor(self, start_again: Callable[[], Joust]) -> Joust:
        """SIGKILL of `joust up`: its children die with it; a new `joust up` on the same data dir
        (its Redis files, the run's leases and queue) takes over."""
        children = self.joust.children()
        in_flight, sent = int(self.fake.stats()["in_flight"]), self.fake.requests
        at = time.monotonic()
        self.joust.proc.kill()
        self.joust.proc.wait()
        poll(lambda: not any(alive(pid) for pid in children), 30, "the children to die with the supervisor")
        # The workers die with it gracefully: a match in flight may send its other call while
        # they drain, and die with Redis before it is charged. Those count as in flight too.
        self.history.record(at, "supervisor", "kill", in_flight + self.fake.requests - sent)
        self.old_lines = self.joust.lines
        self.joust = start_again()
        self.clients.url = self.joust.url
        self.note("supervisor", "back")
        return self.joust


def stuck(joust: Joust, store: Store, tid: int) -> str:
    """What holds the matches still pending: their rows, leases, jobs and log lines."""
    from sqlalchemy import select

    from service.store import schema as s
    from workers.leases import LEASES, REAPING

    with store.engine.connect() as conn:
        rows = conn.execute(select(s.matches).where(s.matches.c.tournament_id == tid,
                                                    s.matches.c.status.in_(["pending", "queued", "running"]))).all()
    env = Path(f"/proc/{sorted(joust.worker_pids())[0]}/environ").read_bytes().split(b"\0")
    url = next(e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"REDIS_URL="))
    lines = []
    with Redis.from_url(url) as redis:
        lines.append(f"leases {redis.zrange(LEASES, 0, -1, withscores=True)} reaping "
                     f"{redis.zrange(REAPING, 0, -1, withscores=True)} time {redis.time()}")
        for row in rows:
            job = redis.hgetall(f"rq:job:{row.job_id}")
            lines.append(f"match {dict(row._mapping)}\n  job {({k: v[:200] for k, v in job.items()})}")
            lines += [f"  {line.rstrip()}" for line in joust.lines if f"match {row.id}" in line][-8:]
        lines.append(f"intermediate {redis.lrange('rq:queue:joust:intermediate', 0, -1)} started "
                     f"{redis.zrange('rq:wip:joust', 0, -1, withscores=True)} queued {redis.llen('rq:queue:joust')}")
        lines.append(f"keys {sorted(k.decode() for k in redis.keys('rq:*'))[:40]}")
    return "\n".join(lines)


def redis_pid(joust: Joust) -> int | None:
    # a child may end between the listing and the read (Redis killed by the schedule): "" then
    found = [pid for pid in joust.children() if b"redis-server" in _cmdline(pid)]
    return found[0] if found else None


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def data_disk(tmp_path: Path) -> Iterator[tuple[Path, str | None]]:
    """joust's data dir on a tmpfs of its own, and None; or a plain folder, and why no tmpfs."""
    data_dir = tmp_path / "data"
    why = mount_tmpfs(data_dir, DATA_DISK)
    try:
        yield data_dir, why
    finally:
        if why is None:
            unmount(data_dir)


@pytest.mark.slow
def test_a_schedule_of_faults_loses_nothing_duplicates_nothing_and_answers_no_unreasoned_5xx(
    data_disk: tuple[Path, str | None], postgres: PostgresServer
) -> None:
    """About 40 s (over 20 s): two `joust up` starts, PostgreSQL's crash recovery, and a dozen
    faults one after the other, each held long enough to matter (a frozen worker 2.5 lease ttls,
    so its leases lapse; the others a second or two, or until the provider has answered enough
    faulty requests, or until health says the disk is full)."""
    data_dir, no_tmpfs = data_disk
    took = {"began": time.monotonic()}  # where the time goes, printed at the end
    postgres.start_again()
    database = postgres.create_database()
    # The cluster trades durability for speed (synchronous_commit off: a commit is acknowledged
    # before its WAL is written), so a crash loses the last commits joust was told were made: a
    # match resolved, then gone with its judgement. No database owes that; this one must not.
    postgres._admin(f'ALTER DATABASE "{database}" SET synchronous_commit = on')
    url = postgres.url(database)
    history = History()
    history.record(time.monotonic(), "clock", "clock", note=f"offset={time.time() - time.monotonic()}")
    with FakeAnthropic(prefer(MODELS), latency_s=0.4) as fake:
        fake.configure({"fault_retry_after": 0.5, "fault_timeout_s": 3.0})

        def start() -> Joust:
            return start_joust(data_dir, fake, DATABASE_URL=url, **SETTINGS)

        joust = start()
        store = Store(url)
        clients = None
        try:
            body = [{"question": f"Question {q}?", "question_id": f"q{q}", "model": m, "output": f"[{m}] answer {q}"}
                    for q in range(QUESTIONS) for m in MODELS]
            assert joust.call("POST", "/api/submissions", body)[0] == 201
            clients = Clients(history, joust.url, joust.key, body[:2]).start()
            status, created = joust.call("POST", "/api/tournaments", {"name": "faults", "judge": JUDGE})
            assert status == 202
            tid, matches = created["id"], created["matches_total"]
            clients.tournament_id = tid
            poll(lambda: fake.replies >= 6 and fake.stats()["in_flight"] >= 3, 60, "calls in flight")
            plan = Schedule(joust, postgres, fake, history, clients, tid, store, None if no_tmpfs else data_dir)
            took["judging"] = time.monotonic()
            steps: list[Callable[[], object]] = [
                lambda: plan.storm(["500"], 0.5, faulty=15),
                lambda: plan.kill_worker(0),
                lambda: plan.storm(["429", "529"], 0.5, faulty=10),
                lambda: plan.freeze_worker(1),
                lambda: plan.kill_redis(),
                lambda: plan.storm(["timeout"], 1.0, faulty=6),  # the provider hangs: calls given up
                lambda: plan.freeze_redis(),
                lambda: plan.full_disk(),
                lambda: plan.kill_postgres(),
                lambda: plan.freeze_postgres(),
                lambda: plan.freeze_supervisor(),
                lambda: plan.kill_supervisor(start),
            ]
            for step in steps:
                if plan.over():
                    break
                step()
                plan.settle()
            joust = plan.joust
            done_steps = len([e for e in history.faults() if e.part != "clock"])
            fake.configure({"latency_s": FINAL_LATENCY_S})  # nothing left to hurt: judge the rest quickly
            took["faults over"] = time.monotonic()
            try:
                joust.wait_done(tid, timeout_s=60)
            except AssertionError:
                print(stuck(joust, store, tid))
                off = time.time() - time.monotonic()
                for e in history.events:
                    print("EVENT", time.strftime("%H:%M:%S", time.localtime(e.at + off)) + ("%.3f" % ((e.at + off) % 1))[1:], e.part, e.action, e.in_flight)
                print("".join(joust.lines[-60:]))  # the last lines of joust up's log
                raise
            poll(lambda: fake.stats()["in_flight"] == 0, 30, "the provider's last answers")
            took["run done"] = time.monotonic()
        finally:
            if clients is not None:
                clients.stop()
            stop_joust(joust)
        state = read_state(store, tid)
        store.close()
        verdict = check(history, state, paid_calls(fake.received))
    postgres.drop_database(database)
    took["checked"] = time.monotonic()
    print(f"\n{verdict.summary()}\nfaults injected: {done_steps}; recovery (s after the part was back until "
          f"a match was judged): {verdict.recovery_s}\ntime (s) until: " +
          ", ".join(f"{k} {v - took['began']:.1f}" for k, v in took.items() if k != "began"))
    assert verdict.matches == matches
    assert done_steps >= 10, "the run ended before most of the schedule: make it longer"
    bad = Counter((a.method, a.path.split("/")[2] if a.path.count("/") > 1 else a.path, a.status, str(a.body)[:160])
                  for a in verdict.bad_answers)
    assert verdict.problems() == [], bad.most_common(5)
    assert verdict.answers > 50 and verdict.done >= matches - 2
    if no_tmpfs:
        pytest.skip(f"the schedule ran without its full disk (the rest of it passed): {no_tmpfs}")
    assert any(e.part == DISK for e in history.faults()), "the run ended before the full disk"


@pytest.mark.parametrize("env_vars", [{"JOUST_LEASE_TTL": "1"}])
def test_a_delayed_job_no_scheduler_moves_is_put_on_the_queue_by_a_reaper(env: Settings) -> None:
    """Found by the schedule: after a worker was killed, a match waiting on its twin (a delayed
    job) sat scheduled for over a minute. RQ's scheduler runs in one worker process, under a lock
    that outlives a killed holder by a minute and is retaken only at RQ's maintenance interval
    (ten minutes). Now every worker's reaper moves a delayed job overdue by `OVERDUE_S`. No RQ
    scheduler runs here: only the reaper can move it."""
    redis = Redis.from_url(env.redis_url)
    queue = job_queue(redis, env.queue_name)
    now = datetime.now(timezone.utc)
    overdue = queue.enqueue_at(now - timedelta(seconds=OVERDUE_S + 30), JUDGE_MATCH, 1)
    later = queue.enqueue_at(now + timedelta(seconds=600), JUDGE_MATCH, 2)
    assert queue.job_ids == []
    jobs.engine()  # a worker: its reaper turns every half ttl
    poll(lambda: queue.job_ids, 10, "the overdue job on the queue")
    assert queue.job_ids == [overdue.id]
    assert queue.scheduled_job_registry.get_job_ids() == [later.id]
    redis.close()
