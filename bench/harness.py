"""What the benches of a real `joust api` share: a store filled fast, a writer resolving
judgements as a worker does, the server started and stopped, and percentiles.

Not a test; used by bench/leaderboard.py and bench/pages.py.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

from leaderboard.keys import content_hash
from leaderboard.spec import RunSpec
from leaderboard.types import Pair, Winner
from service.ops.redis_server import RedisServer, free_port
from service.store import NewJudgement, NewSubmission, Store
from service.store import schema as s

REPO = Path(__file__).resolve().parents[1]

KEY = "bench-key"
JUDGE = "bench/judge"
CHUNK = 250_000  # rows per insert transaction


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    """p50, p95, p99 in milliseconds."""
    p50, p95, p99 = np.percentile(np.asarray(samples) * 1000.0, [50, 95, 99])
    return float(p50), float(p95), float(p99)


def populate(store: Store, judgements: int, models: int, scenarios: int, questions: int, seed: int) -> None:
    """Bulk-insert submissions, judgements (judged in both orders: two calls each, as a worker
    records them) and their resolved, counted matches."""
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
                     "calls": both_orders(int(a[i]), int(b[i]), outcome[i]), "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "created_at": now}
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


# The positional winners of the two calls (a shown first, then b) behind each outcome relative to a.
CALL_WINNERS = {"A": ("A", "B"), "B": ("B", "A"), "TIE": ("TIE", "TIE")}


def both_orders(a: int, b: int, outcome: str) -> str:
    """The calls JSON of a both-order judgement with this outcome (formatted directly: a million
    json.dumps calls would double the build)."""
    first, second = CALL_WINNERS[outcome]
    return (f'[{{"first": {a}, "winner": "{first}", "reminded": false}}, '
            f'{{"first": {b}, "winner": "{second}", "reminded": false}}]')


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
                b_id=ctx.b.id, a_hash=content_hash(ctx.a.output), outcome=winner, consistent=True,
                calls=json.loads(both_orders(ctx.a.id, ctx.b.id, winner.value))))
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


@dataclass(frozen=True)
class Served:
    """A real `joust api` over a filled store: the store (for in-process baselines and writers),
    its URL, and a client of the server."""

    store: Store
    url: str
    client: httpx.Client


@contextmanager
def served(judgements: int, models: int, scenarios: int, questions: int, seed: int, blas_threads: int | None,
           timeout_s: float = 600.0) -> Iterator[Served]:
    """A temporary data dir filled with `judgements` judgements (`populate`), a redis-server and
    `joust api` on free loopback ports, ready; all stopped and deleted on exit."""
    tmp = Path(tempfile.mkdtemp(prefix="joust-bench-"))
    data_dir = tmp / "data"
    data_dir.mkdir()
    url = f"sqlite:///{data_dir / 'joust.db'}"
    proc: subprocess.Popen | None = None
    store = Store(url)
    try:
        began = time.perf_counter()
        populate(store, judgements, models, scenarios, questions, seed)
        print(f"built the data in {time.perf_counter() - began:.1f} s", flush=True)
        with RedisServer(tmp / "redis", persistence=False) as redis:
            port, log = free_port(), tmp / "api.log"
            proc = start_server(data_dir, redis.url, port, log, blas_threads)
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=timeout_s) as client:
                wait_ready(client, proc, log, timeout_s=60)
                try:
                    yield Served(store, url, client)
                finally:
                    stop_server(proc)
    finally:
        if proc is not None:
            stop_server(proc)
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)
