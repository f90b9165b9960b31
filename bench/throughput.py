"""Judge calls per second against a rate-limited provider: joust's workers vs the naive design.

Not a test: run `python bench/throughput.py` (about two and a half minutes; `--questions 6
--naive-seconds 15` for a quick look). Options: `--questions N` and `--models M` (the round
robin: M*(M-1)/2 pairs per question, each judged in both orders, so the default 34 x 10 makes
1,530 matches and 3,060 calls), `--workers`, `--latency`, `--rpm`, `--burst`, `--naive-seconds`,
`--timeout`, `--timeline S` (the joust run's provider-side rate per S seconds), `--logs DIR`
(keep the workers' logs).

Setup, all on loopback and deleted on exit: a private redis-server (no persistence) on a free
port, a SQLite database in a temporary data dir, and the fake Anthropic Messages API
(tests.fake_anthropic, in this process, on its own threads) answering with the `prefer` policy
after `--latency` (1 s) per reply, with a limit of `--rpm` (3,000) requests per minute over
`--burst` (1 s) intervals, as Anthropic enforces its per-minute limits over short spans: a
request above it gets an immediate 429 with `retry-after`. Then two runs, one after the other,
each with `--workers` (2) worker processes started exactly as `joust up` starts them
(`python -m service.cli worker --name ...`, with REDIS_URL, DATABASE_URL, JOUST_DATA_DIR,
ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY set, and JOUST_JUDGE_RPM=<rpm>: the account's limit,
as the README tells users to set it), each on a round-robin tournament of the same submissions
(created with `service.usecases.tournaments.launch`, order "both"):

- naive: JOUST_WORKER_MATCHES=1, one match at a time per process (its two orders in flight
  together), which is what a worker did before the engine; judge "anthropic/bench-naive".
  Its ceiling is workers x 2 calls / latency = 4 calls/s, so the full round robin would take
  some 13 minutes: the run is bounded by `--naive-seconds` (60) and stopped there (or when done,
  whichever comes first). A steady rate needs no more than a minute to measure.
- joust: the default JOUST_JUDGE_CONCURRENCY (64 calls in flight per judge and process, as
  many matches held), judge "anthropic/bench-joust" (another judge, so no judgement of the naive
  run is reused), run until every match is done (`--timeout` bounds it).

Each run has its own RQ queue and workers; Redis is emptied between runs. Before a run is
measured, its workers judge a small warm-up tournament (6 matches, a judge of its own), so that
start-up (imports, the engine, the SDK's client) is not counted; then the fake is reset (its
request log cleared, its buckets full). Measured from the provider's side (the fake's log):

- calls_per_s: replies (status 200) per second between the first and the last request of the
  run (for naive: the requests that arrived before it was stopped);
- share_of_limit: joust's calls_per_s / (rpm / 60). It cannot exceed about 1: the provider
  refuses what is above its limit, and joust's shared limiter paces at it. A short run reads a
  little above 1 (the first half second of backlog joust's limiter allows, and the last
  requests' replies, are counted over a span that ends at their arrival); naive reads a little
  above its ceiling for the same reason. The aim is at least 0.95;
- rate_limited_share: requests answered 429 over all requests of the joust run (aim: < 0.02);
- ratio: joust's calls_per_s / naive's.

And the cost of many calls in flight: peak_rss_mb is the largest VmHWM of a worker process
(read just before stopping them); cpu_s_per_1k_calls is the user+system CPU of the worker
processes and their children (RQ's scheduler is a forked child of one worker) from the end of
the warm-up to the end of the run, per 1,000 calls. A `detail` line per run adds the wall time
from launch to the last match, requests and 429s, the most requests in flight at the provider,
the CPU of redis and of this process (the fake server and the polling), and how busy the
machine's cores were (other jobs included): enough to tell whether a short run was bound by CPU.
The last line is `ratio <joust/naive>`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from redis import Redis
from rq import Queue, Worker

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboard.spec import RunSpec
from service.ops.processes import stop_groups
from service.ops.redis_server import RedisServer, die_with_parent
from service.store import NewSubmission, Store
from service.store.queue import JobQueue
from service.store.tournament_rows import Tournament
from service.usecases.tournaments import launch
from tests.fake_anthropic import FakeAnthropic, ReceivedTimes, prefer
from tests.fake_wire import Received

TICK = os.sysconf("SC_CLK_TCK")
JOB_TIMEOUT_S = 150  # the API's: half the default JOUST_MATCH_TIMEOUT
WARMUP_MODELS, WARMUP_QUESTIONS = 3, 2  # 3 pairs x 2 questions = 6 warm-up matches
FINISHED = ("done", "failed", "cancelled")


# ---- the processes' counters (/proc) -----------------------------------------------------------


def proc_stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (field 3, state, is [0])."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.rindex(")") + 2:].split()


def cpu_s(pid: int, *, reaped: bool = True) -> float:
    """utime + stime of a process (+ cutime + cstime: its children already waited for)."""
    try:
        f = proc_stat(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    ticks = int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if reaped else 0)
    return ticks / TICK


def descendants(pid: int) -> list[int]:
    """Live descendants of `pid` (RQ's forked scheduler), from /proc/<pid>/task/*/children."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                continue
            found.extend(kids)
            todo.extend(kids)
    return found


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process, its reaped children and its live descendants."""
    return cpu_s(pid) + sum(cpu_s(kid) for kid in descendants(pid))


def peak_rss_mb(pid: int) -> float:
    """VmHWM (peak resident set) of a process, in MiB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except FileNotFoundError:
        pass
    return 0.0


def machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies over all cores, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])  # without guest time, already counted in user
    return total - idle, total


# ---- workers -------------------------------------------------------------------------------------


@dataclass
class Workers:
    """`count` worker processes on one queue, started as `joust up` starts them."""

    count: int
    queue: str
    env: dict[str, str]
    logs: Path
    procs: list[subprocess.Popen] = field(default_factory=list)

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        for i in range(self.count):
            with open(self.logs / f"worker-{i + 1}.log", "wb") as out:
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-m", "service.cli", "--log-level", "warning", "worker",
                     "--name", f"{self.queue}-{i + 1}"],
                    cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                    # die_with_parent only calls prctl, resolved before the fork: safe beside the fake's threads
                    preexec_fn=die_with_parent(), start_new_session=True,  # noqa: PLW1509
                ))

    def wait_registered(self, redis: Redis, timeout_s: float = 60.0) -> list[Worker]:
        """Wait until every worker has registered with RQ (imports done, listening)."""
        deadline = time.monotonic() + timeout_s
        queue = Queue(self.queue, connection=redis)
        while time.monotonic() < deadline:
            self.check_alive()
            found = Worker.all(queue=queue)
            if len(found) >= self.count:
                return found
            time.sleep(0.2)
        raise SystemExit(f"the workers of {self.queue} did not register within {timeout_s:.0f} s{self.tails()}")

    def check_alive(self) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                raise SystemExit(f"a worker exited ({proc.returncode}){self.tails()}")

    def cpu_s(self) -> float:
        return sum(tree_cpu_s(p.pid) for p in self.procs)

    def peak_rss_mb(self) -> float:
        return max((peak_rss_mb(p.pid) for p in self.procs), default=0.0)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM each worker's group (RQ finishes its job, the engine drains), then SIGKILL."""
        stop_groups(self.procs, timeout_s)
        for proc in self.procs:  # the forked scheduler, if its worker left it behind
            _signal_group(proc, signal.SIGKILL)
        self.procs.clear()

    def tails(self) -> str:
        parts = []
        for path in sorted(self.logs.glob("*.log")):
            text = path.read_text(errors="replace")[-2500:]
            parts.append(f"\n--- {path.name} (end) ---\n{text}")
        return "".join(parts)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# ---- one run -------------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    window: ReceivedTimes  # the provider's log of the run's requests
    matches_total: int
    matches_done: int
    matches_failed: int
    wall_s: float  # launch to the last match finished (or to the stop)
    finished: bool
    cpu_s: float  # worker processes and their children
    peak_rss_mb: float
    redis_cpu_s: float
    self_cpu_s: float  # this process: the fake server's threads, the polling
    machine_busy: float  # share of all cores busy during the run (every job on the machine)
    max_in_flight: int
    records: list[Received]

    @property
    def calls(self) -> int:
        return self.window.replies

    @property
    def calls_per_s(self) -> float:
        return self.window.replies_per_s or 0.0

    @property
    def requests(self) -> int:
        return len(self.window.statuses)

    @property
    def rate_limited(self) -> int:
        return self.window.statuses.count(429)

    @property
    def cpu_per_1k(self) -> float:
        return self.cpu_s / (self.calls / 1000.0) if self.calls else float("nan")

    def line(self) -> str:
        return (f"{self.name:<7} calls {self.calls:<5} seconds {self.window.span_s:<6.1f} calls_per_s "
                f"{self.calls_per_s:<6.2f} peak_rss_mb {self.peak_rss_mb:<4.0f} "
                f"cpu_s_per_1k_calls {self.cpu_per_1k:.1f}")

    def detail(self) -> str:
        statuses = Counter(self.window.statuses)
        other = sum(n for s, n in statuses.items() if s not in (200, 429))
        return (f"{self.name:<7} detail: matches {self.matches_done}/{self.matches_total} done "
                f"({self.matches_failed} failed{'' if self.finished else ', stopped'}) in {self.wall_s:.1f} s "
                f"from launch; requests {self.requests} (429: {self.rate_limited}, other errors: {other}); "
                f"max in flight at the provider {self.max_in_flight}; cpu_s workers {self.cpu_s:.1f} "
                f"redis {self.redis_cpu_s:.1f} bench+fake {self.self_cpu_s:.1f}; "
                f"machine cores busy {self.machine_busy:.0%}")


@dataclass
class Bench:
    args: argparse.Namespace
    tmp: Path
    store: Store
    redis_server: RedisServer
    fake: FakeAnthropic
    models: list[str]

    def env(self, queue: str, extra: dict[str, str]) -> dict[str, str]:
        data_dir = self.tmp / "data"
        return {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            "JOUST_DATA_DIR": str(data_dir),
            "DATABASE_URL": f"sqlite:///{data_dir / 'joust.db'}",
            "REDIS_URL": self.redis_server.url,
            "JOUST_QUEUE": queue,
            "JOUST_API_KEY": "bench-key",
            "ANTHROPIC_BASE_URL": self.fake.url,
            "ANTHROPIC_API_KEY": "x",
            "JOUST_JUDGE_RPM": f"{self.args.rpm:g}",
            **extra,
        }

    def launch(self, redis: Redis, queue: str, name: str, judge: str, **filters: object) -> int:
        spec = RunSpec(judge=judge, **filters)  # type: ignore[arg-type]
        launched = launch(self.store, JobQueue(redis, queue, JOB_TIMEOUT_S), name, spec)
        assert launched.queued, "Redis did not take the matches"
        return launched.id

    def wait(self, workers: Workers, tid: int, seconds: float, label: str) -> tuple[Tournament, bool]:
        """Poll the tournament until its matches are all finished or `seconds` pass."""
        began = time.monotonic()
        deadline, report = began + seconds, began + 10.0
        while True:
            view = self.store.get_tournament(tid)
            if view.matches_pending == 0 or view.status in FINISHED:
                return view, True
            now = time.monotonic()
            if now >= deadline:
                return view, False
            if now >= report:
                print(f"  {label}: {view.matches_done}/{view.matches_total} matches done after "
                      f"{now - began:.0f} s", flush=True)
                report += 10.0
            workers.check_alive()
            time.sleep(0.25)

    def run(self, name: str, judge: str, seconds: float, extra_env: dict[str, str]) -> Result:
        """Start the workers, warm them up, then measure one tournament; stop everything."""
        queue = f"bench-{name}"
        workers = Workers(self.args.workers, queue, self.env(queue, extra_env), self.tmp / "logs" / name)
        redis = self.redis_server.client()
        try:
            workers.start()
            workers.wait_registered(redis)
            warm = self.launch(redis, queue, f"{name} warm-up", f"{judge}-warmup",
                               models=self.models[:WARMUP_MODELS],
                               questions=[question_id(q) for q in range(WARMUP_QUESTIONS)])
            view, done = self.wait(workers, warm, 120.0, f"{name} warm-up")
            if not done or view.matches_done != view.matches_total:
                raise SystemExit(f"{name}: the warm-up did not finish: {view}{workers.tails()}")
            idle = [w.name for w in Worker.all(queue=Queue(queue, connection=redis)) if not w.successful_job_count]
            if idle:
                print(f"  {name}: warm-up: {idle} took no job (its start-up counts in its CPU)", flush=True)
            time.sleep(0.5)  # the warm-up's last writes and heartbeats settle
            self.fake.reset()
            cpu0, redis0, self0, machine0 = workers.cpu_s(), cpu_s(self.redis_server.pid), _self_cpu(), machine_ticks()
            began = time.monotonic()
            tid = self.launch(redis, queue, name, judge)
            print(f"{name}: launched {self.store.get_tournament(tid).matches_total} matches", flush=True)
            view, finished = self.wait(workers, tid, seconds, name)
            stop_at = time.monotonic()
            cpu1, redis1, self1, machine1 = workers.cpu_s(), cpu_s(self.redis_server.pid), _self_cpu(), machine_ticks()
            peak = workers.peak_rss_mb()
            max_in_flight = self.fake.max_in_flight
            workers.stop()
            if not finished:
                self.store.cancel_tournament(tid)
            records = [r for r in self.fake.received if r.batch_id is None and r.at <= stop_at]
            busy, total = machine1[0] - machine0[0], machine1[1] - machine0[1]
            return Result(
                name=name, window=ReceivedTimes.of(records), matches_total=view.matches_total,
                matches_done=view.matches_done, matches_failed=view.matches_failed,
                wall_s=stop_at - began, finished=finished, cpu_s=cpu1 - cpu0, peak_rss_mb=peak,
                redis_cpu_s=redis1 - redis0, self_cpu_s=self1 - self0,
                machine_busy=busy / total if total else 0.0, max_in_flight=max_in_flight, records=records,
            )
        finally:
            workers.stop()
            redis.flushall()  # the next run starts with an empty queue, no leases, no limiter state
            redis.close()


def _self_cpu() -> float:
    t = os.times()
    return t.user + t.system


def question_id(q: int) -> str:
    return f"bench-q{q:03d}"


def submissions(models: list[str], questions: int) -> list[NewSubmission]:
    """One output per model and question, carrying the `[model]` marker `prefer` reads."""
    return [
        NewSubmission(question_id=question_id(q), question=f"Benchmark question {q}: explain topic {q}.",
                      model=m, scenario="default", output=f"[{m}] An answer to question {q} by {m}.")
        for q in range(questions) for m in models
    ]


def timeline(result: Result, step_s: float) -> list[str]:
    """Provider-side requests per `step_s`: replies (200) and 429s, by arrival time."""
    if not result.records:
        return []
    t0 = min(r.at for r in result.records)
    buckets: dict[int, Counter[int]] = {}
    for r in result.records:
        buckets.setdefault(int((r.at - t0) // step_s), Counter())[r.status] += 1
    return [f"  t={k * step_s:>5.0f}s  calls/s {c[200] / step_s:6.1f}  429/s {c[429] / step_s:5.1f}"
            for k, c in sorted(buckets.items())]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=34)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per reply at the fake provider")
    parser.add_argument("--rpm", type=float, default=3000.0, help="the provider's limit, also JOUST_JUDGE_RPM")
    parser.add_argument("--burst", type=float, default=1.0, help="seconds of rate the provider's bucket holds")
    parser.add_argument("--naive-seconds", type=float, default=60.0, help="how long the naive run goes")
    parser.add_argument("--timeout", type=float, default=900.0, help="at most this long for the joust run")
    parser.add_argument("--timeline", type=float, default=0.0, metavar="SECONDS",
                        help="print the joust run's provider-side rate per this many seconds")
    parser.add_argument("--logs", type=Path, default=None, metavar="DIR",
                        help="keep the worker processes' logs there (else they go with the temp dir)")
    args = parser.parse_args()
    if args.models < 2 or args.questions < WARMUP_QUESTIONS or args.models < WARMUP_MODELS:
        parser.error(f"need at least {WARMUP_MODELS} models and {WARMUP_QUESTIONS} questions")

    def on_sigterm(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # clean up as on Ctrl-C

    signal.signal(signal.SIGTERM, on_sigterm)
    tmp = Path(tempfile.mkdtemp(prefix="joust-bench-throughput-"))
    (tmp / "data").mkdir()
    models = [f"model-{m:02d}" for m in range(args.models)]
    store: Store | None = None
    fake = FakeAnthropic(prefer(models), latency_s=args.latency, rpm=args.rpm, burst_s=args.burst)
    try:
        fake.start()
        store = Store(f"sqlite:///{tmp / 'data' / 'joust.db'}")
        store.add_submissions(submissions(models, args.questions))
        pairs = args.models * (args.models - 1) // 2 * args.questions
        print(f"{args.models} models x {args.questions} questions: {pairs} matches, {2 * pairs} calls; provider "
              f"latency {args.latency:g} s, limit {args.rpm:g} rpm (burst {args.burst:g} s); "
              f"{args.workers} worker processes", flush=True)
        with RedisServer(tmp / "redis", persistence=False) as redis_server:
            bench = Bench(args, tmp, store, redis_server, fake, models)
            naive = bench.run("naive", "anthropic/bench-naive", args.naive_seconds, {"JOUST_WORKER_MATCHES": "1"})
            joust = bench.run("joust", "anthropic/bench-joust", args.timeout, {})
        if not joust.finished:
            print(f"joust: not done within --timeout {args.timeout:g} s; measured what was judged", flush=True)
        if args.timeline:
            print(f"joust at the provider, per {args.timeline:g} s:")
            print("\n".join(timeline(joust, args.timeline)))
        print(naive.detail())
        print(joust.detail())
        print(naive.line())
        print(joust.line())
        limit_per_s = args.rpm / 60.0
        print(f"share_of_limit {joust.calls_per_s / limit_per_s:.2f}")
        print(f"rate_limited_share {joust.window.rate_limited_share or 0.0:.3f}")
        print(f"ratio {joust.calls_per_s / naive.calls_per_s:.1f}" if naive.calls_per_s else "ratio nan")
        return 0
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        fake.stop()
        if store is not None:
            store.close()
        if args.logs is not None and (tmp / "logs").exists():
            shutil.copytree(tmp / "logs", args.logs, dirs_exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
