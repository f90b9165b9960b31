"""Bradley-Terry plus 95% bootstrap intervals on a million battles: joust vs the per-battle baseline.

Not a test: run `python bench/ratings.py [--battles 1000000 --players 100 --rounds 100 --seed 0]`
(about a minute on 2 cores; needs the `bench` extra: scikit-learn).

Data: `--battles` battles between random pairs of `--players` players whose true ratings are
drawn around 1000 (sd 200 Elo points), 20% ties, `--questions` question ids.

Baseline: Chatbot Arena's first `compute_mle_elo` (FastChat elo_analysis, spring 2023): one row
per battle in a dense design matrix (+ln 10 / -ln 10), every battle duplicated, a win counting as
two wins, a tie as one win each way (so a tie is half a win each way, as in joust), and
scikit-learn LogisticRegression(fit_intercept=False, no penalty, tol=1e-6); its bootstrap
resamples battles and refits `--rounds` times, rebuilding the rows each round as the original
did. The baseline gets its input as integer arrays already (its conversion is not timed). A full
baseline bootstrap takes about as long as `--rounds` point fits, so unless `--baseline-rounds`
equals `--rounds` it times that many rounds and extrapolates linearly (printed as such).

Ours: from the list of `Battle` objects (the conversion is timed), `bradley_terry` (default ridge)
and `bootstrap_intervals` with the same number of rounds, resampling questions.

The rating difference compares point estimates on the same data with ties treated the same way
(half each way in both); ours keeps its default ridge, which moves nobody by more than ~0.01
point at this size. Environment variables are left as they are (BLAS threads included).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sklearn.linear_model import LogisticRegression  # noqa: E402

from leaderboard.ratings import battle_table, bootstrap_intervals, bradley_terry  # noqa: E402
from leaderboard.types import Battle, Winner  # noqa: E402

WINNERS = (Winner.B, Winner.A, Winner.TIE)  # code 0, 1, 2


def simulate(rng: np.random.Generator, battles: int, players: int, questions: int, tie_rate: float) -> tuple[np.ndarray, ...]:
    """(truth, a, b, code, question) arrays: code 1 = a won, 0 = b won, 2 = tie."""
    truth = 1000.0 + rng.normal(0.0, 200.0, players)
    a = rng.integers(0, players, battles)
    b = (a + rng.integers(1, players, battles)) % players
    p_a = 1.0 / (1.0 + 10.0 ** ((truth[b] - truth[a]) / 400.0))
    code = np.where(rng.random(battles) < tie_rate, 2, (rng.random(battles) < p_a).astype(int))
    question = rng.integers(0, questions, battles)
    return truth, a, b, code, question


def as_battles(names: list[str], a: np.ndarray, b: np.ndarray, code: np.ndarray, question: np.ndarray) -> list[Battle]:
    """What a service would hand to the rating code: Battle objects with question ids."""
    qids = [f"q{q}" for q in range(int(question.max()) + 1)]
    return [Battle(names[i], names[j], WINNERS[c], qids[q]) for i, j, c, q in zip(a.tolist(), b.tolist(), code.tolist(), question.tolist())]


def baseline_fit(a: np.ndarray, b: np.ndarray, code: np.ndarray, players: int) -> np.ndarray:
    """Chatbot Arena's first MLE Elo: duplicated per-battle rows, logistic regression."""
    n = len(a)
    rows = np.arange(2 * n)
    x = np.zeros((2 * n, players))
    x[rows, np.concatenate([a, a])] = math.log(10.0)
    x[rows, np.concatenate([b, b])] = -math.log(10.0)
    y = np.zeros(2 * n)
    y[:n][code != 0] = 1.0  # first copy: a win or a tie is an a win
    y[n:][code == 1] = 1.0  # second copy: only a real win; a tie is a b win
    model = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-6, max_iter=1000)
    model.fit(x, y)
    return 1000.0 + 400.0 * model.coef_[0]


def baseline_bootstrap(rng: np.random.Generator, a: np.ndarray, b: np.ndarray, code: np.ndarray, players: int, rounds: int) -> np.ndarray:
    """Refit on battles resampled with replacement, `rounds` times: rounds × players ratings."""
    n = len(a)
    samples = []
    for _ in range(rounds):
        pick = rng.integers(0, n, n)
        samples.append(baseline_fit(a[pick], b[pick], code[pick], players))
    return np.array(samples)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--questions", type=int, default=5_000)
    parser.add_argument("--tie-rate", type=float, default=0.2)
    parser.add_argument("--baseline-rounds", type=int, default=5, help="baseline bootstrap rounds actually run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    _, a, b, code, question = simulate(rng, args.battles, args.players, args.questions, args.tie_rate)
    names = [f"model-{i:03d}" for i in range(args.players)]
    battles = as_battles(names, a, b, code, question)
    print(f"battles {len(battles)} players {args.players} questions {args.questions} ties {np.mean(code == 2):.3f} rounds {args.rounds}")

    start = time.perf_counter()
    table = battle_table(battles)  # the conversion from Battle objects, once for both views
    converted = time.perf_counter() - start
    ours = bradley_terry(table)
    ours_intervals = bootstrap_intervals(table, np.random.default_rng(args.seed + 1), rounds=args.rounds)
    ours_seconds = time.perf_counter() - start
    print(f"ours: conversion {converted:.2f} s, then fit + {args.rounds} bootstrap rounds (question resampling), {ours_seconds:.2f} s in all")

    start = time.perf_counter()
    base = baseline_fit(a, b, code, args.players)
    fit_seconds = time.perf_counter() - start
    run = min(args.baseline_rounds, args.rounds)
    start = time.perf_counter()
    base_samples = baseline_bootstrap(np.random.default_rng(args.seed + 2), a, b, code, args.players, run)
    boot_seconds = time.perf_counter() - start
    baseline_seconds = fit_seconds + boot_seconds * args.rounds / max(run, 1)
    if run < args.rounds:
        print(
            f"baseline: fit {fit_seconds:.2f} s; bootstrap EXTRAPOLATED linearly from {run} of {args.rounds} "
            f"rounds ({boot_seconds / max(run, 1):.2f} s per round)"
        )
    else:
        print(f"baseline: fit {fit_seconds:.2f} s; {run} bootstrap rounds {boot_seconds:.2f} s (measured)")

    diff = max(abs(ours[name] - base[i]) for i, name in enumerate(names))
    width_ours = np.mean([high - low for low, high in ours_intervals.values()])
    print(f"ours: mean 95% interval width {width_ours:.1f} Elo; baseline rounds run: {len(base_samples)}")
    print(f"baseline_seconds {baseline_seconds:.2f}")
    print(f"ours_seconds {ours_seconds:.2f}")
    print(f"max_abs_rating_diff_elo {diff:.4f}")
    print(f"ratio {baseline_seconds / ours_seconds:.1f}")


if __name__ == "__main__":
    main()
