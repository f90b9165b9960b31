"""What alpha between judges costs judge health's running tally: a cold start, then a refresh.

Not a test: run `python bench/judge_alpha.py [--verdicts N]` (1,000,000 by default; about ten
seconds). Two judges each give a verdict (A, B or TIE at random) on N/2 pairs, added in a random
order to `leaderboard.judge_alpha.SharedPairs` at once (the first report of a tally that reads
every judgement), then 1, 10 and 100 new pairs judged by both (a refresh while a tournament
writes); each figure is the median of 5 runs, with the time to report the figures after it.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboard.judge_alpha import SharedPairs  # noqa: E402

RUNS = 5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.verdicts - args.verdicts % 2
    pairs = np.repeat(np.arange(n // 2, dtype=np.int64) * 2**31 + 1, 2)
    who = np.tile(np.array([0, 1], dtype=np.int32), n // 2)
    codes = rng.integers(0, 3, n).astype(np.int8)
    order = rng.permutation(n)
    pairs, who, codes = pairs[order], who[order], codes[order]
    cold = []
    for _ in range(RUNS):
        shared = SharedPairs()
        began = time.perf_counter()
        shared.add(pairs, who, codes)
        cold.append(time.perf_counter() - began)
    print(f"{n:,} verdicts of 2 judges: cold start {1000 * statistics.median(cold):.0f} ms")
    next_pair = n
    for k in (1, 10, 100):
        adds, reports = [], []
        for _ in range(RUNS):
            fresh = (np.arange(next_pair, next_pair + k, dtype=np.int64)) * 2**31 + 1
            next_pair += k
            began = time.perf_counter()
            shared.add(np.r_[fresh, fresh], np.r_[np.zeros(k, np.int32), np.ones(k, np.int32)],
                       rng.integers(0, 3, 2 * k).astype(np.int8))
            adds.append(time.perf_counter() - began)
            began = time.perf_counter()
            figures = shared.figures(["judge/one", "judge/two"])
            reports.append(time.perf_counter() - began)
        print(f"then {k} new pairs judged by both: add {1000 * statistics.median(adds):.1f} ms, "
              f"figures {1000 * statistics.median(reports):.1f} ms")
    [figure] = figures
    print(f"alpha {figure.alpha:.4f} [{figure.ci_low:.4f}, {figure.ci_high:.4f}] over {figure.pairs:,} pairs "
          "(verdicts at random: about 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
