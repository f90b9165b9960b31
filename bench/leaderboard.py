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
import statistics
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.harness import Writer, percentiles, served
from leaderboard.board import build_board
from leaderboard.players import battles_at_level
from leaderboard.types import Level
from service.store import Store


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

    writer: Writer | None = None
    with served(args.judgements, args.models, args.scenarios, args.questions, args.seed, args.blas_threads,
                timeout_s=300.0) as server:
        client, store = server.client, server.store
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
        writer = Writer(server.url, args.models, args.scenarios, args.every, limit=5000)
        writer.start()
        try:
            for by in ("model", "model+scenario"):
                latencies, revisions = timed(client, store, by, args.requests, check_fresh=True)
                results[f"writing by={by}"] = percentiles(latencies)
                print(f"writing by={by}: {len(revisions)} distinct revisions served, none stale")
        finally:
            writer.stop.set()
            writer.join(timeout=30)
        print(f"the writer resolved {writer.resolved} judgements during the run")
        baseline = []
        for _ in range(args.baseline_runs):
            began = time.perf_counter()
            rows = store.side_rows()
            board = build_board(battles_at_level(rows, Level.MODEL), k=32.0)
            baseline.append(time.perf_counter() - began)
        assert len(board) == args.models
    print(f"{'scenario':<28}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
    for name, (p50, p95, p99) in results.items():
        print(f"{name:<28}{p50:>10.2f}{p95:>10.2f}{p99:>10.2f}")
    base50 = statistics.median(baseline) * 1000.0
    print(f"{'baseline by=model (scratch)':<28}{base50:>10.1f}   ({len(baseline)} runs: side_rows + build_board)")
    print(f"ratio {base50 / results['idle    by=model'][1]:.1f}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
