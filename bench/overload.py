"""Provider errors that are not rate limits: a storm of 529s and a dead provider, beside a clean run.

Not a test: run `python bench/overload.py` (about three minutes). To measure an earlier joust,
run this file inside a checkout of it (`git archive <commit> | tar -x -C DIR`, then copy this
file and tests/fake_limits.py, whose 529s can carry no retry-after, into DIR): its workers,
store and schema are then all that checkout's. The code before the circuit breaker and the
adaptive pauses takes some eleven minutes.

Setup, all on loopback and deleted on exit: a private redis-server (no persistence), a SQLite
database in a temporary data dir, the fake Anthropic Messages API (tests.fake_anthropic, in this
process) answering after `--latency` (0.7 s) with no rate limit, and `--workers` (2) worker
processes started as `joust up` starts them, each with `JOUST_JUDGE_CONCURRENCY=--concurrency`
(10), so 20 calls are in flight at most and a clean run of the default round robin (10 models x
10 questions: 450 matches, 900 calls) takes about 31 s. Every other setting is joust's default.
Runs, one after the other, each a round robin of the same submissions under a judge of its own
(so no judgement is reused), after a small warm-up tournament on a clean provider so that the
workers' start-up is not counted:

- clean: no faults;
- storm: a `--storm` (0.2) share of requests answered 529 overloaded *without* retry-after
  (seeded, so every run meets the same faults);
- dead: every request answered 500, until the run stops itself (`failing`), at most
  `--dead-timeout` seconds.

Printed per run: seconds from launch to the run's end, requests (and errors) the provider
received, matches done / failed / cancelled, the run's status and stopped reason, and the
workers' count of pauses of every worker and of openings of the judge's circuit breaker (0 for
code that kept no such count). Then `storm_ratio` (storm's
seconds over clean's) and, for dead, `dead_requests` (requests the provider received before the
run stopped, and by the time the workers went quiet) against the calls the whole run needed (2
per match).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from redis import Redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.throughput import JOB_TIMEOUT_S, Workers, question_id, submissions  # noqa: E402
from leaderboard.spec import RunSpec  # noqa: E402
from service.ops.metrics import parse_call_stats  # noqa: E402
from service.ops.redis_server import RedisServer  # noqa: E402
from service.store import Store  # noqa: E402
from service.store.queue import JobQueue  # noqa: E402
from service.store.tournament_rows import Tournament  # noqa: E402
from service.usecases.tournaments import launch  # noqa: E402
from tests.fake_anthropic import FakeAnthropic, prefer  # noqa: E402

FINISHED = ("done", "failed", "cancelled")
WARMUP_MODELS, WARMUP_QUESTIONS = 3, 2
QUIET_S = 3.0  # the provider saw no request for this long: the workers have gone quiet
SEED = 7


@dataclass
class Run:
    name: str
    seconds: float  # launch to the run's end (or to the timeout)
    finished: bool
    requests_at_end: int
    requests_quiet: int  # once the workers went quiet after the run's end
    statuses: Counter[int]
    view: Tournament
    stats: dict[str, float]  # the workers' call counts of the run's judge (as /metrics reads them)

    def line(self) -> str:
        v = self.view
        errors = sum(n for status, n in self.statuses.items() if status != 200)
        return (f"{self.name:<16} seconds {self.seconds:7.1f}  requests {self.requests_at_end:5d} "
                f"(errors {errors}; {self.requests_quiet} once quiet)  matches done {v.matches_done} "
                f"failed {v.matches_failed} cancelled {v.matches_cancelled} of "
                f"{v.matches_total}  status {v.status}"
                + (f" ({v.stopped_reason})" if v.stopped_reason else "")
                + f"  pauses {self.stats.get('pauses', 0):.0f} circuit_opens {self.stats.get('circuit_opens', 0):.0f}"
                + ("" if self.finished else "  NOT FINISHED"))


class Bench:
    def __init__(self, args: argparse.Namespace, tmp: Path, store: Store, redis_server: RedisServer,
                 fake: FakeAnthropic, models: list[str]) -> None:
        self.args, self.tmp, self.store, self.redis_server, self.fake, self.models = (
            args, tmp, store, redis_server, fake, models)

    def env(self, queue: str) -> dict[str, str]:
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
            "JOUST_JUDGE_CONCURRENCY": str(self.args.concurrency),
        }

    def launch(self, redis: Redis, queue: str, name: str, judge: str, **filters: object) -> int:
        launched = launch(self.store, JobQueue(redis, queue, JOB_TIMEOUT_S), name,
                          RunSpec(judge=judge, **filters))  # type: ignore[arg-type]
        assert launched.queued, "Redis did not take the matches"
        return launched.id

    def wait(self, workers: Workers, tid: int, seconds: float) -> tuple[Tournament, bool]:
        deadline = time.monotonic() + seconds
        while True:
            view = self.store.get_tournament(tid)
            if view.matches_pending == 0 or view.status in FINISHED:
                return view, True
            if time.monotonic() >= deadline:
                return view, False
            workers.check_alive()
            time.sleep(0.1)

    def quiet(self, timeout_s: float = 120.0) -> int:
        """Wait until the provider has seen no request for QUIET_S; the requests by then."""
        deadline = time.monotonic() + timeout_s
        seen, since = self.fake.requests, time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now_seen = self.fake.requests
            if now_seen != seen:
                seen, since = now_seen, time.monotonic()
            elif time.monotonic() - since >= QUIET_S:
                break
        return seen

    def run(self, name: str, faults: dict, timeout_s: float) -> Run:
        queue = f"bench-{name}"
        judge = f"anthropic/bench-{name}"
        workers = Workers(self.args.workers, queue, self.env(queue), self.tmp / "logs" / name)
        workers.start()
        redis = self.redis_server.client()
        try:
            workers.wait_registered(redis)
            self.fake.configure({"fault_rate": 0.0})
            warm = self.launch(redis, queue, f"{name} warm-up", f"{judge}-warmup",
                               models=self.models[:WARMUP_MODELS],
                               questions=[question_id(q) for q in range(WARMUP_QUESTIONS)])
            view, done = self.wait(workers, warm, 120.0)
            if not done or view.matches_done != view.matches_total:
                raise SystemExit(f"{name}: the warm-up did not finish: {view}{workers.tails()}")
            time.sleep(0.5)
            self.fake.reset()
            self.fake.configure({"fault_rate": 0.0, **faults, "fault_seed": SEED})
            began = time.monotonic()
            tid = self.launch(redis, queue, name, judge)
            view, finished = self.wait(workers, tid, timeout_s)
            seconds = time.monotonic() - began
            at_end = self.fake.requests
            quiet = self.quiet()
            statuses = Counter(r.status for r in self.fake.received if r.batch_id is None)
            if not finished:
                self.store.cancel_tournament(tid)
            stats = parse_call_stats(redis.hgetall(f"{queue}:calls")).get(judge, {})
            result = Run(name, seconds, finished, at_end, quiet, statuses, view, stats)
            print(result.line(), flush=True)
            return result
        finally:
            workers.stop()
            redis.flushall()
            redis.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=10, help="JOUST_JUDGE_CONCURRENCY of each worker")
    parser.add_argument("--latency", type=float, default=0.7, help="seconds per reply at the fake provider")
    parser.add_argument("--storm", type=float, default=0.2, help="share of requests answered 529")
    parser.add_argument("--timeout", type=float, default=900.0, help="at most this long for clean and storm")
    parser.add_argument("--dead-timeout", type=float, default=600.0, help="at most this long for dead")
    parser.add_argument("--skip", nargs="*", default=[], choices=["clean", "storm", "dead"],
                        help="runs to leave out")
    args = parser.parse_args()

    def on_sigterm(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    tmp = Path(tempfile.mkdtemp(prefix="joust-bench-overload-"))
    (tmp / "data").mkdir()
    models = [f"model-{m:02d}" for m in range(args.models)]
    store: Store | None = None
    fake = FakeAnthropic(prefer(models), latency_s=args.latency)
    storm = {"fault_rate": args.storm, "fault_kinds": ["529"], "fault_retry_after": None}
    dead = {"fault_rate": 1.0, "fault_kinds": ["500"]}
    try:
        fake.start()
        store = Store(f"sqlite:///{tmp / 'data' / 'joust.db'}")
        store.add_submissions(submissions(models, args.questions))
        pairs = args.models * (args.models - 1) // 2 * args.questions
        print(f"{pairs} matches, {2 * pairs} calls; provider latency {args.latency:g} s, no rate limit; "
              f"{args.workers} workers x {args.concurrency} calls in flight", flush=True)
        runs: dict[str, Run] = {}
        with RedisServer(tmp / "redis", persistence=False) as redis_server:
            bench = Bench(args, tmp, store, redis_server, fake, models)
            plan = [("clean", {}, args.timeout), ("storm", storm, args.timeout), ("dead", dead, args.dead_timeout)]
            for name, faults, timeout_s in plan:
                if name not in args.skip:
                    runs[name] = bench.run(name, faults, timeout_s)
        if "clean" in runs and "storm" in runs:
            print(f"storm_ratio {runs['storm'].seconds / runs['clean'].seconds:.2f}")
        if "dead" in runs:
            run = runs["dead"]
            print(f"dead_requests {run.requests_at_end} by the stop, {run.requests_quiet} once quiet; "
                  f"the run needed {2 * pairs} calls; stopped after {run.seconds:.1f} s")
        return 0
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        fake.stop()
        if store is not None:
            store.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
