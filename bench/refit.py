"""The live board's refit after one new judgement, in one process: kept state against a cold fit.

Not a test: run `python bench/refit.py [--battles 1000000 --players 400 --steps 200]` (about half
a minute; run it with OPENBLAS_NUM_THREADS=1, as joust's processes run BLAS).

A `Tally` (leaderboard/tally.py) holds `--battles` random battles over `--players` players (20%
ties). Each step adds one battle and times what `GET /api/leaderboard` does for a new revision:
the counts and the board (`live`: warm-started from the last fit, interval widths kept while
little changed, `leaderboard/widths.py`). The baseline, on the same counts at the same step, is
the board built cold (`board_from_counts` with no start and no kept widths): what a refit costs
without the kept state. It prints p50 and p95 in ms for both, how often the widths were
recomputed, the widest relative gap of a kept width to a recomputed one, and last
`ratio <baseline p50 / live p50>`.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.harness import percentiles  # noqa: E402
from leaderboard.tally import Tally, board_from_counts  # noqa: E402
from leaderboard.types import Battle, Winner  # noqa: E402

WINNERS = (Winner.B, Winner.A, Winner.TIE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=400)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    n, m = args.players, args.battles
    names = [f"model-{i:03d} + scenario-{i % 4}" for i in range(n)]
    strength = rng.normal(0.0, 1.0, n)

    def battles(count: int) -> list[Battle]:
        a = rng.integers(0, n, count)
        b = (a + rng.integers(1, n, count)) % n
        p = 1.0 / (1.0 + np.exp(strength[b] - strength[a]))
        code = np.where(rng.random(count) < 0.2, 2, (rng.random(count) < p).astype(int))
        return [Battle(names[i], names[j], WINNERS[c]) for i, j, c in zip(a.tolist(), b.tolist(), code.tolist())]

    tally = Tally()
    tally.add(battles(m))
    tally.board()
    live, cold, worst = [], [], 0.0
    renewed = tally._widths.computed
    for battle in battles(args.steps):
        tally.add([battle])
        began = time.perf_counter()
        rows = tally.board(tally.counts())
        live.append(time.perf_counter() - began)
        counts = tally.counts()
        began = time.perf_counter()
        fresh = board_from_counts(counts, tally.elo())
        cold.append(time.perf_counter() - began)
        exact = {r.player: r.ci_high - r.ci_low for r in fresh}
        worst = max(worst, max(abs((r.ci_high - r.ci_low) / exact[r.player] - 1.0) for r in rows))
    renewed = tally._widths.computed - renewed
    (l50, l95, _), (c50, c95, _) = percentiles(live), percentiles(cold)
    print(f"{m:,} battles, {n} players, {args.steps} new judgements one at a time")
    print(f"live (kept state)   p50 {l50:7.2f} ms  p95 {l95:7.2f} ms")
    print(f"cold (from counts)  p50 {c50:7.2f} ms  p95 {c95:7.2f} ms")
    print(f"interval widths recomputed at {renewed} of {args.steps} steps; widest kept-width gap {worst:.4%}")
    print(f"ratio {c50 / l50:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
