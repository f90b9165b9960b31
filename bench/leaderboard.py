"""GET /api/leaderboard with a million judgements stored, from a real `joust api` server.

Not a test: run `python bench/leaderboard.py` (three to four minutes: building the data and the
from-scratch baseline take most of it; `--judgements 20000` for a quick look).

It builds a temporary data dir holding `--judgements` judgements (100 models x 4 scenarios, many
questions; bulk-inserted through SQLAlchemy on the store's own tables, seq and counted stamped,
the `resolved` counter set), starts a redis-server and `joust api` on free loopback ports, warms
the board cache, then times sequential requests:

- `idle`: nothing is being judged, so every request is the revision read plus a memoised board;
- `writing`: a background writer resolves a new judgement every ~50 ms through the store (as a
  worker does), so requests take the incremental path; each response is checked never to be
  older than the revision read just before the request was sent. At the system level (400
  players) that path is one Bradley-Terry refit per new judgement; `--blas-threads 1` runs the
  server with single-threaded BLAS, which a few-hundred-player fit on a small machine prefers.

The baseline, in the same run, is the old from-scratch path in-process (store.side_rows,
battles_at_level, build_board), a few repetitions. The last line prints
`ratio <baseline p50 / our idle by=model p95>`. Everything is bounded in count and time, listens on
127.0.0.1 only, and is stopped and deleted on exit.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboard.board import build_board
from leaderboard.keys import content_hash
from leaderboard.players import battles_at_level
from leaderboard.spec import RunSpec
from leaderboard.types import Level, Pair, Winner
from service.redis_server import RedisServer, free_port
from service.store import NewJudgement, NewSubmission, Store
from service.store import schema as s

KEY = "bench-key"
JUDGE = "bench/judge"
CHUNK = 250_000  # rows per insert transaction


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    """p50, p95, p99 in milliseconds."""
    p50, p95, p99 = np.percentile(np.asarray(samples) * 1000.0, [50, 95, 99])
    return float(p50), float(p95), float(p99)


def populate(store: Store, judgements: int, models: int, scenarios: int, questions: int, seed: int) -> None:
    """Bulk-insert submissions, judgements and their resolved, counted matches."""
    rng = np.random.default_rng(seed)
    systems = [(f"model-{m:03d}", f"scenario-{c}") for m in range(models) for c in range(scenarios)]
    strength = rng.normal(0, 1.0, size=models).repeat(scenarios) + np.tile(np.linspace(0, 0.5, scenarios), models)
    now = time.time()
    sub_rows = [
        {"question_id": f"bq{q}", "question": f"bench question {q}", "model": m, "scenario": c,
         "output": f"{m}/{c}/{q}", "output_hash": "-", "question_hash": "-", "metadata": "{}", "created_at": now}
        for q in range(questions) for m, c in systems
    ]
    per_question = -(-judgements // questions)
    first, second = np.triu_indices(len(systems), 1)
    a_idx, b_idx = [], []
    for q in range(questions):
        pick = rng.choice(first.size, size=per_question, replace=False)
        a_idx.append(q * len(systems) + first[pick])
        b_idx.append(q * len(systems) + second[pick])
    a = np.concatenate(a_idx)[:judgements] + 1  # submission ids start at 1 in a fresh table
    b = np.concatenate(b_idx)[:judgements] + 1
    order = rng.permutation(judgements)  # judgements arrive in no particular order
    a, b = a[order], b[order]
    gap = strength[(a - 1) % len(systems)] - strength[(b - 1) % len(systems)]
    draw = rng.random(judgements)
    p_a = 1.0 / (1.0 + np.exp(-gap))
    outcome = np.where(draw < 0.1, "TIE", np.where(draw < 0.1 + 0.9 * p_a, "A", "B"))
    tid = store.create_tournament("bench bulk", RunSpec(judge=JUDGE), [])
    with store.engine.connect() as conn:
        for start in range(0, len(sub_rows), CHUNK):
            with conn.begin():
                conn.execute(s.submissions.insert(), sub_rows[start:start + CHUNK])
        for start in range(0, judgements, CHUNK):
            part = range(start, min(start + CHUNK, judgements))
            with conn.begin():
                conn.execute(s.judgements.insert(), [
                    {"id": i + 1, "key": f"bench-{i}", "judge": JUDGE, "criteria": "overall", "template_version": "b",
                     "a_id": int(a[i]), "b_id": int(b[i]), "a_hash": "-", "outcome": outcome[i], "consistent": True,
                     "calls": "[]", "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "created_at": now}
                    for i in part
                ])
                conn.execute(s.matches.insert(), [
                    {"tournament_id": tid, "a_id": int(a[i]), "b_id": int(b[i]), "status": "done", "attempts": 1,
                     "judgement_id": i + 1, "outcome": outcome[i], "consistent": True, "finished_at": now,
                     "seq": i + 1, "counted": True}
                    for i in part
                ])
        with conn.begin():
            conn.execute(s.counters.update().where(s.counters.c.name == "resolved").values(value=judgements))
    print(f"stored {len(sub_rows)} submissions, {judgements} judgements ({models} models x {scenarios} scenarios, "
          f"{questions} questions)", flush=True)


class Writer(threading.Thread):
    """Resolves one new judgement every `every_s` seconds through the store, as a worker does."""

    def __init__(self, url: str, models: int, scenarios: int, every_s: float, limit: int) -> None:
        super().__init__(name="bench-writer", daemon=True)
        self.store = Store(url)
        self.every_s = every_s
        self.stop = threading.Event()
        self.resolved = 0
        batch = [NewSubmission(question_id="live", question="live question", model=f"model-{m:03d}",
                               scenario=f"scenario-{c}", output=f"live {m}/{c}")
                 for m in range(models) for c in range(scenarios)]
        ids = [sid for sid, _ in self.store.add_submissions(batch)]
        rng = np.random.default_rng(1)
        pairs = {tuple(sorted(rng.choice(len(ids), 2, replace=False))) for _ in range(limit * 2)}
        plan = [Pair(ids[i], ids[j]) for i, j in sorted(pairs)][:limit]
        self.matches = self.store.pending_matches(self.store.create_tournament("bench live", RunSpec(judge=JUDGE), plan))

    def run(self) -> None:
        for n, match_id in enumerate(self.matches):
            if self.stop.wait(self.every_s):
                break
            ctx = self.store.match_context(match_id)
            self.store.start_match(match_id)
            winner = (Winner.A, Winner.B, Winner.TIE)[n % 3]
            jid, _ = self.store.save_judgement(NewJudgement(
                key=f"live-{match_id}", judge=JUDGE, criteria="overall", template_version="b", a_id=ctx.a.id,
                b_id=ctx.b.id, a_hash=content_hash(ctx.a.output), outcome=winner, consistent=True, calls=[]))
            self.store.resolve_match(match_id, jid, winner, True)
            self.resolved += 1
        self.store.close()


def start_server(data_dir: Path, redis_url: str, port: int, log: Path, blas_threads: int | None) -> subprocess.Popen:
    """`joust api` on 127.0.0.1:port, in its own process group."""
    joust = shutil.which("joust")
    command = [joust] if joust else [sys.executable, "-m", "service.cli"]
    env = {**os.environ, "REDIS_URL": redis_url, "JOUST_API_KEY": KEY, "PYTHONPATH": str(REPO)}
    if blas_threads is not None:
        env.update(OPENBLAS_NUM_THREADS=str(blas_threads), OMP_NUM_THREADS=str(blas_threads),
                   MKL_NUM_THREADS=str(blas_threads))
    with open(log, "wb") as out:
        return subprocess.Popen(
            [*command, "--log-level", "warning", "api", "--host", "127.0.0.1", "--port", str(port),
             "--data-dir", str(data_dir)],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


def wait_ready(client: httpx.Client, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"joust api exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if client.get("/api/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"joust api did not answer within {timeout_s:.0f} s")


def timed(client: httpx.Client, store: Store, by: str, n: int, check_fresh: bool) -> tuple[list[float], set[int]]:
    """n sequential requests: latencies (s) and the revisions served; fails on a stale board."""
    latencies, revisions = [], set()
    for _ in range(n):
        floor = store.revision() if check_fresh else 0
        began = time.perf_counter()
        response = client.get("/api/leaderboard", params={"by": by})
        latencies.append(time.perf_counter() - began)
        response.raise_for_status()
        revision = response.json()["revision"]
        if revision < floor:
            raise SystemExit(f"stale board: revision {revision} served after {floor} was resolved")
        revisions.add(revision)
    return latencies, revisions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgements", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--scenarios", type=int, default=4)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--baseline-runs", type=int, default=3)
    parser.add_argument("--every", type=float, default=0.05, help="seconds between the writer's resolves")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="OPENBLAS/OMP/MKL_NUM_THREADS for the server (default: inherited)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="joust-bench-"))
    data_dir = tmp / "data"
    data_dir.mkdir()
    url = f"sqlite:///{data_dir / 'joust.db'}"
    proc: subprocess.Popen | None = None
    writer: Writer | None = None
    try:
        began = time.perf_counter()
        store = Store(url)
        populate(store, args.judgements, args.models, args.scenarios, args.questions, args.seed)
        print(f"built the data in {time.perf_counter() - began:.1f} s", flush=True)
        with RedisServer(tmp / "redis", persistence=False) as redis:
            port, log = free_port(), tmp / "api.log"
            proc = start_server(data_dir, redis.url, port, log, args.blas_threads)
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300.0) as client:
                wait_ready(client, proc, log, timeout_s=60)
                began = time.perf_counter()
                for by in ("model", "scenario", "model+scenario"):  # the first may build the cache
                    client.get("/api/leaderboard", params={"by": by}).raise_for_status()
                print(f"warm-up (cold cache: read and tally every judgement) {time.perf_counter() - began:.1f} s; "
                      f"server BLAS threads: {args.blas_threads or 'inherited'}")
                body = client.get("/api/leaderboard", params={"by": "model"}).json()
                assert body["revision"] == args.judgements and len(body["rows"]) == args.models, body["revision"]
                results: dict[str, tuple[float, float, float]] = {}
                for by in ("model", "model+scenario"):
                    latencies, _ = timed(client, store, by, args.requests, check_fresh=False)
                    results[f"idle    by={by}"] = percentiles(latencies)
                writer = Writer(url, args.models, args.scenarios, args.every, limit=5000)
                writer.start()
                for by in ("model", "model+scenario"):
                    latencies, revisions = timed(client, store, by, args.requests, check_fresh=True)
                    results[f"writing by={by}"] = percentiles(latencies)
                    print(f"writing by={by}: {len(revisions)} distinct revisions served, none stale")
                writer.stop.set()
                writer.join(timeout=30)
                print(f"the writer resolved {writer.resolved} judgements during the run")
            stop_server(proc)
        baseline = []
        for _ in range(args.baseline_runs):
            began = time.perf_counter()
            rows = store.side_rows()
            board = build_board(battles_at_level(rows, Level.MODEL), k=32.0)
            baseline.append(time.perf_counter() - began)
        assert len(board) == args.models
        store.close()
        print(f"{'scenario':<28}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
        for name, (p50, p95, p99) in results.items():
            print(f"{name:<28}{p50:>10.2f}{p95:>10.2f}{p99:>10.2f}")
        base50 = statistics.median(baseline) * 1000.0
        print(f"{'baseline by=model (scratch)':<28}{base50:>10.1f}   ({len(baseline)} runs: side_rows + build_board)")
        print(f"ratio {base50 / results['idle    by=model'][1]:.1f}")
        return 0
    finally:
        if writer is not None:
            writer.stop.set()
        if proc is not None:
            stop_server(proc)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
