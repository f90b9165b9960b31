"""joust across machines, through faults: worker machines in network namespaces on a private
bridge, Redis and PostgreSQL in a namespace of their own, the fake provider and the API in the
run's own namespace (see bench/namespaces.py). Root only.

    python bench/fleet.py [--machines 4] [--cut 60] [--lease-ttl 5] [--models 12 --questions 16]

The schedule, once the run is judging with calls in flight: kill one machine (SIGKILL of all it
runs; it stays down), cut another off from Redis and the database for `--cut` seconds and heal
it (its leases lapse and its matches are handed out elsewhere while its calls in flight come
home), then restart Redis and then PostgreSQL (each stopped and started again on its address
over its files, as every machine sees it). A clients thread asks the API all along. Afterwards
the checker (tests/fault_history.py) reads the history, the store and the provider's log, and
this prints `lost` and `duplicated` (both must be 0), `paid_twice` and `in_flight_at_faults`
(the first no more than the second, once the failed calls the store charged are taken off:
`unseen_twice`), and each fault's recovery: seconds from the part being back until a match was
judged (aim: at most the lease ttl + 5 s). Exit 1 when a promise is broken.

`run_fleet` is also what tests/test_fleet.py runs, smaller.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from redis import Redis  # noqa: E402

from bench.namespaces import Network, kill_namespace  # noqa: E402
from leaderboard.spec import RunSpec  # noqa: E402
from service.ops.redis_server import find_redis_server, free_port  # noqa: E402
from service.store import NewSubmission, Store  # noqa: E402
from service.store.queue import JobQueue  # noqa: E402
from service.usecases.tournaments import launch  # noqa: E402
from tests.fake_anthropic import FakeAnthropic, prefer  # noqa: E402
from tests.fault_clients import Clients  # noqa: E402
from tests.fault_history import History, Verdict, check, paid_calls, read_state  # noqa: E402
from tests.postgres_fixture import SUPERUSER, PostgresServer, find_binary  # noqa: E402

JUDGE = "anthropic/claude-sonnet-4-5"
REDIS_PORT = 6379
PG_PORT = 5432
STEP_S = 0.05


class NamespacedPostgres(PostgresServer):
    """The throwaway cluster of tests/postgres_fixture.py, run inside a namespace and listening
    on its address there (as the `postgres` user when root, through setpriv: `ip netns exec`
    needs root, so the user is dropped after entering the namespace)."""

    def __init__(self, base_dir: Path, network: Network) -> None:
        super().__init__(base_dir)
        self.network = network
        self.port = PG_PORT

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@{self.network.db_ip}:{self.port}/{database}"

    def start(self) -> NamespacedPostgres:
        initdb = find_binary("initdb")
        self._user = self._server_user()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        if self._user is not None:
            shutil.chown(self.base_dir, user=self._user)
            self.base_dir.chmod(0o700)
        self._run([initdb, "-D", str(self.data_dir), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                   "--locale=C", "--no-sync"])
        (self.data_dir / "pg_hba.conf").write_text("host all all 0.0.0.0/0 trust\nlocal all all trust\n")
        if not self._launch(find_binary("postgres")):
            raise RuntimeError("postgres did not start in its namespace")
        return self

    def _launch(self, postgres: str) -> bool:
        drop = ["setpriv", f"--reuid={self._user}", f"--regid={self._user}", "--clear-groups"] if self._user else []
        argv = self.network.argv(self.network.db_ns, [
            *drop, postgres, "-D", str(self.data_dir), "-p", str(self.port), "-k", str(self.base_dir),
            "-c", f"listen_addresses={self.network.db_ip}", "-c", "fsync=off", "-c", "synchronous_commit=off",
            "-c", "max_connections=300", "-c", "shared_buffers=32MB"])
        with open(self.log_path, "ab") as log:
            proc = subprocess.Popen(argv, cwd=self.base_dir, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True, env={**os.environ, "HOME": str(self.base_dir)})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"postgres exited {proc.returncode}:\n{self._log_tail()}")
            if self._answers():
                self._proc = proc
                return True
            time.sleep(STEP_S)
        proc.kill()
        raise RuntimeError(f"postgres did not answer:\n{self._log_tail()}")

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(host=self.network.db_ip, port=self.port, user=SUPERUSER, dbname="postgres",
                               autocommit=True, connect_timeout=2)


class NamespacedRedis:
    """A redis-server in the db namespace, on its address, AOF on, with a password."""

    def __init__(self, data_dir: Path, network: Network) -> None:
        self.data_dir, self.network = data_dir, network
        self.password = secrets.token_hex(16)
        self.proc: subprocess.Popen[bytes] | None = None
        data_dir.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@{self.network.db_ip}:{REDIS_PORT}/0"

    def start(self) -> NamespacedRedis:
        argv = self.network.argv(self.network.db_ns, [
            find_redis_server(), "--bind", self.network.db_ip, "--port", str(REDIS_PORT), "--requirepass",
            self.password, "--dir", str(self.data_dir), "--appendonly", "yes", "--save", "", "--protected-mode", "no",
            "--logfile", str(self.data_dir / "redis.log")])
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with Redis.from_url(self.url, socket_connect_timeout=1) as client:
                    if client.ping():
                        return self
            except Exception:
                time.sleep(STEP_S)
        raise RuntimeError("redis-server did not answer in its namespace")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class FleetOptions:
    machines: int = 4
    cut_s: float = 60.0
    lease_ttl_s: float = 5.0
    models: int = 12
    questions: int = 16
    latency_s: float = 0.5
    concurrency: int = 4
    timeout_s: float = 600.0
    verbose: bool = False


@dataclass
class FleetResult:
    verdict: Verdict
    history: History
    seconds: float
    logs: dict[str, str]  # each process's output, by machine ("m0", ...) and "api"


def worker_env(options: FleetOptions, redis_url: str, database_url: str, provider_url: str, home: Path) -> dict:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("JOUST_", "ANTHROPIC_", "OPENAI_"))
            and k not in ("REDIS_URL", "DATABASE_URL")}
    return {**keep, "REDIS_URL": redis_url, "DATABASE_URL": database_url, "ANTHROPIC_BASE_URL": provider_url,
            "ANTHROPIC_API_KEY": "fleet", "JOUST_DATA_DIR": str(home), "PYTHONPATH": str(REPO),
            "JOUST_LEASE_TTL": str(options.lease_ttl_s), "JOUST_MATCH_TIMEOUT": "600",
            "JOUST_JUDGE_CONCURRENCY": str(options.concurrency), "JOUST_RETRY_BACKOFF": "0.5",
            "JOUST_DRAIN_TIMEOUT": "1", "PYTHONUNBUFFERED": "1"}


def run_fleet(options: FleetOptions, out: Any = sys.stdout) -> FleetResult:
    """Make the machines, run the tournament through the schedule, check it; always clean up."""
    base = Path(tempfile.mkdtemp(prefix="joust-fleet-", dir="/tmp"))
    base.chmod(0o755)
    history = History()
    history.record(time.monotonic(), "clock", "clock", note=f"offset={time.time() - time.monotonic()}")
    procs: list[subprocess.Popen[bytes]] = []
    clients: Clients | None = None
    began = time.monotonic()

    def say(text: str) -> None:
        if options.verbose:
            print(f"[{time.monotonic() - began:6.1f}s] {text}", file=out, flush=True)

    try:
        with Network(options.machines) as net, \
                FakeAnthropic(prefer([f"m{i}" for i in range(options.models)]), latency_s=options.latency_s,
                              host=net.provider_ip) as fake:
            redis_server = NamespacedRedis(base / "redis", net).start()
            postgres = NamespacedPostgres(base / "pg", net).start()
            try:
                database_url = postgres.url(postgres.create_database())
                store = Store(database_url)
                store.add_submissions([
                    NewSubmission(question_id=f"q{q}", question=f"Question {q}?", model=f"m{m}", scenario="default",
                                  output=f"[m{m}] answer to {q}")
                    for q in range(options.questions) for m in range(options.models)])
                say(f"namespaces {net.tag}-*: redis and postgres at {net.db_ip}, provider at {fake.url}")
                logs = base / "logs"
                logs.mkdir()

                def start_machine(i: int) -> subprocess.Popen[bytes]:
                    home = base / f"m{i}"
                    home.mkdir(exist_ok=True)
                    argv = net.argv(net.machine_ns(i), [sys.executable, "-m", "service.cli", "worker",
                                                       "--name", f"fleet-{i}"])
                    with open(logs / f"m{i}.log", "ab") as log:
                        return subprocess.Popen(argv, cwd=REPO, env=worker_env(options, redis_server.url, database_url,
                                                                               fake.url, home),
                                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)

                procs += [start_machine(i) for i in range(options.machines)]
                key = secrets.token_hex(8)
                port = free_port()
                api_env = {**worker_env(options, redis_server.url, database_url, fake.url, base / "api"),
                           "JOUST_API_KEY": key}
                with open(logs / "api.log", "ab") as log:
                    procs.append(subprocess.Popen([sys.executable, "-m", "service.cli", "api", "--host", "127.0.0.1",
                                                   "--port", str(port)], cwd=REPO, env=api_env, stdout=log,
                                                  stderr=log, start_new_session=True))
                body = [{"question": "Question 0?", "question_id": "q0", "model": "m0", "output": "[m0] answer to 0"}]
                clients = Clients(history, f"http://127.0.0.1:{port}", key, body)
                wait(lambda: clients.ask("GET", "/api/health")[0] == 200, 60, "the API")
                with Redis.from_url(redis_server.url) as redis:
                    launched = launch(store, JobQueue(redis, "joust", 300), "fleet", RunSpec(judge=JUDGE))
                tid = launched.id
                clients.tournament_id = tid
                clients.start()

                def pending() -> int:
                    return store.get_tournament(tid).matches_pending

                def note(part: str, action: str) -> None:
                    history.record(time.monotonic(), part, action, int(fake.stats()["in_flight"]))
                    say(f"{part} {action}: {fake.stats()['in_flight']} calls in flight, {pending()} matches pending")

                total = launched.matches_total
                wait(lambda: total - pending() >= 2 * options.machines and fake.stats()["in_flight"] >= options.machines,
                     120, "the machines to judge")
                # 1. a machine dies, and stays down
                note("machine-0", "kill")
                kill_namespace(net.machine_ns(0))
                # 2. another is cut off from Redis and the database, then healed
                note("machine-1", "cut")
                net.cut(1)
                hold(options.cut_s)
                net.heal(1)
                note("machine-1", "heal")
                # 3. Redis restarted, as every machine sees it
                note("redis", "restart")
                redis_server.stop()
                redis_server.start()
                note("redis", "back")
                # 4. PostgreSQL restarted
                note("postgres", "restart")
                postgres.stop()
                postgres.start_again()
                note("postgres", "back")
                wait(lambda: pending() == 0, options.timeout_s, "the run to finish")
                wait(lambda: fake.stats()["in_flight"] == 0, 60, "the provider's last answers")
                clients.stop()
                verdict = check(history, read_state(store, tid), paid_calls(fake.received))
                store.close()
                say(f"over; logs in {logs}")
                kept = {path.stem: path.read_text(errors="replace") for path in logs.glob("*.log")}
            finally:
                if clients is not None:
                    clients.stop()
                for proc in procs:
                    if proc.poll() is None:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
                redis_server.stop()
                postgres.stop()
    finally:
        if not options.verbose:
            shutil.rmtree(base, ignore_errors=True)
    return FleetResult(verdict, history, time.monotonic() - began, kept)


def wait(condition: Any, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(STEP_S)
    raise RuntimeError(f"timed out after {within:.0f} s waiting for {what}")


def hold(seconds: float) -> None:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        time.sleep(STEP_S)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machines", type=int, default=4)
    parser.add_argument("--cut", type=float, default=60.0, help="seconds machine 1 is cut off (60)")
    parser.add_argument("--lease-ttl", type=float, default=5.0, help="JOUST_LEASE_TTL of the machines (5)")
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--questions", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.5, help="the provider's reply time (0.5 s)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    options = FleetOptions(machines=args.machines, cut_s=args.cut, lease_ttl_s=args.lease_ttl, models=args.models,
                           questions=args.questions, latency_s=args.latency, verbose=not args.quiet)
    result = run_fleet(options)
    v = result.verdict
    print(f"machines {options.machines}, lease ttl {options.lease_ttl_s} s, cut {options.cut_s} s, "
          f"{v.matches} matches, {result.seconds:.1f} s")
    print(f"lost {len(v.lost)}")
    print(f"duplicated {len(v.duplicated)}")
    print(f"paid_twice {v.paid_twice} (charged as failed calls {v.charged}, unseen {v.unseen_twice})")
    print(f"in_flight_at_faults {v.in_flight_at_faults}")
    print(f"uncounted {v.uncounted} (in flight at kills {v.in_flight_at_kills})")
    print(f"api answers {v.answers}, unreachable {v.unreachable}, 5xx without a reason {len(v.bad_answers)}")
    for fault, seconds in v.recovery_s.items():
        print(f"recovery {fault}: {seconds:.2f} s (aim <= {options.lease_ttl_s + 5:.0f})")
    print(json.dumps(v.summary()))
    for problem in v.problems():
        print(f"PROBLEM: {problem}")
    return 1 if v.problems() else 0


if __name__ == "__main__":
    sys.exit(main())
