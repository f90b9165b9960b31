"""The pages and what they poll, from a real `joust api` with a million judgements stored, idle and
while a tournament writes judgements.

Not a test: run `python bench/pages.py` (about ten minutes at the default million judgements,
building the data and the baseline take most of it; `--judgements 50000` for a quick look).

It builds a temporary data dir holding `--judgements` judgements (bench/harness.py: 100 models x
4 scenarios, many questions, both-order calls; bulk-inserted, the `resolved` counter set), starts a
redis-server and `joust api` on free loopback ports, asks every path once and waits for the work
they start (the boards, judge health, the effects fit), asks the pages again until none is
pending (a tournament's first board is built behind its page; the cold start is printed), then
times sequential GETs of every path in PATHS, in turn, `--requests` times each:

- `idle`: nothing is being written;
- `writing`: a background writer resolves a new judgement every `--every` seconds through the
  store, as a worker does, so every request finds a new revision.

Requests accept gzip, as browsers do. The baseline, in the same run, is what GET /api/judges and
the page paid for judge health on every new revision before it was kept as a running tally:
`Store.judge_health()` from scratch, in-process. It prints one line per path (p50 and p95, idle
and writing), the baseline, `ratio <baseline / GET /api/judges p95 while writing>`, and last
`worst p95 <ms>: GET <path> <idle|writing>`. Everything is bounded, listens on 127.0.0.1 only,
and is stopped and deleted on exit.
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

from bench.harness import JUDGE, Writer, percentiles, served

# The paths timed, in turn: every page (the vote page as a voter sees it before signing in) and
# what the pages poll.
JUDGES = "/api/judges"  # the path the baseline is compared with
PATHS = ["/", "/?by=system", "/judges", "/tournaments", "/tournaments/1", "/vote", "/api/revision", JUDGES,
         "/api/leaderboard"]
# Asked once before timing, so the work a first request starts is done: judge health and the
# effects fit a page serves (the effects route fits them in the request).
WARM = ["/api/judges", f"/api/leaderboard/effects?judge={JUDGE}"]
Latencies = dict[str, list[float]]


def timed(client: httpx.Client, paths: list[str], rounds: int) -> Latencies:
    """Seconds per request of each path, `rounds` sequential requests each, the paths in turn."""
    found: Latencies = {path: [] for path in paths}
    for _ in range(rounds):
        for path in paths:
            began = time.perf_counter()
            response = client.get(path)
            found[path].append(time.perf_counter() - began)
            if response.status_code != 200:
                raise SystemExit(f"GET {path} answered {response.status_code}: {response.text[:300]}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgements", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--scenarios", type=int, default=4)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--requests", type=int, default=100, help="requests per path and scenario")
    parser.add_argument("--baseline-runs", type=int, default=1)
    parser.add_argument("--every", type=float, default=0.05, help="seconds between the writer's resolves")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="OPENBLAS/OMP/MKL_NUM_THREADS for the server (as `joust up` runs it)")
    args = parser.parse_args()

    writer: Writer | None = None
    with served(args.judgements, args.models, args.scenarios, args.questions, args.seed, args.blas_threads) as server:
        client, store = server.client, server.store
        began = time.perf_counter()
        timed(client, [*PATHS, *WARM], 1)
        print(f"warm-up (cold caches: every judgement read) {time.perf_counter() - began:.1f} s", flush=True)
        print(f"until every page was current (first boards of a tournament built behind the page) "
              f"{settle(client, time.perf_counter() - began):.1f} s", flush=True)
        idle = timed(client, PATHS, args.requests)
        writer = Writer(server.url, args.models, args.scenarios, args.every, limit=100_000)
        writer.start()
        try:
            writing = timed(client, PATHS, args.requests)
        finally:
            writer.stop.set()
            writer.join(timeout=30)
        print(f"the writer resolved {writer.resolved} judgements while the paths were timed")
        baseline = []
        for _ in range(args.baseline_runs):
            began = time.perf_counter()
            store.judge_health()
            baseline.append(time.perf_counter() - began)
    print(f"{'path':<24}{'idle p50':>10}{'idle p95':>10}{'write p50':>11}{'write p95':>11}   (ms)")
    worst = (0.0, "", "")
    for path in PATHS:
        (i50, i95, _), (w50, w95, _) = percentiles(idle[path]), percentiles(writing[path])
        print(f"{path:<24}{i50:>10.1f}{i95:>10.1f}{w50:>11.1f}{w95:>11.1f}")
        worst = max(worst, (i95, path, "idle"), (w95, path, "writing"))
    base = statistics.median(baseline) * 1000.0
    print(f"baseline: judge health from scratch {base:.0f} ms ({len(baseline)} runs: what {JUDGES} and the "
          "page paid per new revision)")
    if JUDGES in PATHS:
        print(f"ratio {base / percentiles(writing[JUDGES])[1]:.0f}")
    print(f"worst p95 {worst[0]:.1f} ms: GET {worst[1]} {worst[2]}")
    return 0


def settle(client: httpx.Client, spent_s: float, timeout_s: float = 900.0) -> float:
    """Ask the pages again until none is pending (a part still computing in the background: no
    ETag, a mark ending "~pending"); the seconds since the warm-up began. The timing measures the
    steady state; this is the cold start."""
    began = time.perf_counter()
    while time.perf_counter() - began < timeout_s:
        pending = [path for path in PATHS if not path.startswith("/api/") and "~pending" in client.get(path).text]
        if not pending:
            return spent_s + time.perf_counter() - began
        time.sleep(1.0)
    raise SystemExit(f"pages still pending after {timeout_s:.0f} s: {pending}")

if __name__ == "__main__":
    sys.exit(main())
