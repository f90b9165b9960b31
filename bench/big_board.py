"""Big boards: the sparse Bradley-Terry fit against the dense one, then at 10,000 players.

Not a test: run `python bench/big_board.py [--players 10000 --battles 6000000
--judgements 100000000 --degree 60 --seed 0 --side-by-side 500,1000,1500,2000,3000]`.

Data (seeded): players with true ratings around 1000 (sd 200 Elo), each meeting about
`--degree` others drawn at random (a sparse graph, connected in practice); battles between those
pairs drawn uniformly, 20% ties (half a point each way), the rest won by the Bradley-Terry
probability.

1. Side by side, at each `--side-by-side` size (30 battles a pair): dense (`fit_log_strengths`
   and `fisher_variances`, the board's path below `SPARSE_ABOVE`) vs sparse (`fit_sparse` and
   `sparse_variances`), fit plus intervals, best of `--repeat`; prints both times, `ratio`
   (dense/sparse), max |Δ Elo| of the ratings and the widest relative gap of the widths.
2. `--players` and `--battles`: the sparse fit with intervals.
3. A streaming cold rebuild of `--judgements` judgements: generated in chunks of `--chunk`, each
   folded into per-pair sums (won, games) and dropped, then the fit with intervals; prints the
   time and the peak resident memory (ru_maxrss). (Ties here do not depend on strength, so
   the fitted ratings are compressed against the true ones: the correlation is what to read.)
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboard.fit import Pairs, elo_scale, fisher_variances, fit_log_strengths  # noqa: E402
from leaderboard.sparse_fit import SPARSE_ABOVE, fit_sparse, sparse_variances  # noqa: E402

ELO = elo_scale(10.0, 400.0)


def graph(rng: np.random.Generator, players: int, degree: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(truth in natural-log units, i, j): each player draws degree/2 opponents; pairs i < j, once."""
    truth = rng.normal(0.0, 200.0, players) / ELO
    a = np.repeat(np.arange(players), max(degree // 2, 1))
    b = (a + rng.integers(1, players, a.size)) % players
    key = np.unique(np.minimum(a, b) * players + np.maximum(a, b))
    return truth, key // players, key % players


def judge(rng: np.random.Generator, truth: np.ndarray, i: np.ndarray, j: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(pair index, points to the pair's i) for `count` battles drawn uniformly over the pairs."""
    edge = rng.integers(0, i.size, count)
    p = 1.0 / (1.0 + np.exp(truth[j[edge]] - truth[i[edge]]))
    score = np.where(rng.random(count) < 0.2, 0.5, (rng.random(count) < p) * 1.0)
    return edge, score


def fold(rng: np.random.Generator, truth: np.ndarray, i: np.ndarray, j: np.ndarray, total: int, chunk: int) -> Pairs:
    """The pairs' sums of `total` battles, generated and counted `chunk` at a time."""
    won, games = np.zeros(i.size), np.zeros(i.size)
    done = 0
    while done < total:
        size = min(chunk, total - done)
        edge, score = judge(rng, truth, i, j, size)
        won += np.bincount(edge, score, i.size)
        games += np.bincount(edge, minlength=i.size)
        done += size
    return Pairs(len(truth), i, j, games, won)


def best(repeat: int, run):  # type: ignore[no-untyped-def]
    """(best seconds, result of the last run)."""
    times, result = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - began)
    return min(times), result


def dense(pairs: Pairs) -> tuple[np.ndarray, np.ndarray]:
    n = pairs.size
    points = np.zeros((n, n))
    points[pairs.i, pairs.j] = pairs.won
    points[pairs.j, pairs.i] = pairs.games - pairs.won
    theta = fit_log_strengths(points)
    return theta, fisher_variances(points, theta, ridge=0.01)


def sparse(pairs: Pairs) -> tuple[np.ndarray, np.ndarray]:
    theta = fit_sparse(pairs)
    return theta, sparse_variances(pairs, theta, ridge=0.01)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--battles", type=int, default=6_000_000)
    parser.add_argument("--judgements", type=int, default=100_000_000)
    parser.add_argument("--degree", type=int, default=60)
    parser.add_argument("--chunk", type=int, default=2_000_000)
    parser.add_argument("--side-by-side", default="500,1000,1500,2000,3000")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"degree ~{args.degree} opponents a player, 20% ties; SPARSE_ABOVE {SPARSE_ABOVE}")
    for size in [int(s) for s in args.side_by_side.split(",") if s]:
        truth, i, j = graph(rng, size, args.degree)
        pairs = fold(rng, truth, i, j, 30 * i.size, args.chunk)
        dense_s, (theta_d, var_d) = best(args.repeat, lambda pairs=pairs: dense(pairs))
        sparse_s, (theta_s, var_s) = best(args.repeat, lambda pairs=pairs: sparse(pairs))
        diff = float(np.max(np.abs(theta_d - theta_s))) * ELO
        gap = np.sqrt(var_s / var_d) - 1.0
        print(f"players {size} pairs {i.size} battles {int(pairs.games.sum())}: dense {dense_s:.3f} s, sparse {sparse_s:.3f} s, "
              f"ratio {dense_s / sparse_s:.2f}, max_abs_rating_diff_elo {diff:.2e}, "
              f"width gap min {gap.min():+.4f} max {gap.max():+.4f}")
    if args.battles:
        truth, i, j = graph(rng, args.players, args.degree)
        pairs = fold(rng, truth, i, j, args.battles, args.chunk)
        fit_s, (theta, var) = best(args.repeat, lambda: sparse(pairs))
        print(f"players {args.players} pairs {i.size} battles {args.battles}: sparse fit + intervals {fit_s:.2f} s "
              f"(mean 95% half-width {1.96 * ELO * float(np.sqrt(var).mean()):.1f} Elo)")
    if args.judgements:
        began = time.perf_counter()
        truth, i, j = graph(rng, args.players, args.degree)
        pairs = fold(rng, truth, i, j, args.judgements, args.chunk)
        folded = time.perf_counter() - began
        theta, var = sparse(pairs)
        total = time.perf_counter() - began
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        agreement = float(np.corrcoef(theta, truth)[0, 1])
        print(f"cold rebuild: {args.judgements} judgements in chunks of {args.chunk}, players {args.players} pairs {i.size}: "
              f"fold {folded:.1f} s, fit + intervals {total - folded:.2f} s, total {total:.1f} s, "
              f"peak rss {peak:.0f} MiB, correlation with the true strengths {agreement:.4f}")


if __name__ == "__main__":
    main()
