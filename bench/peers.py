"""joust against its peers on the same battles, in one run: evalica, choix, arena-rank, scikit-learn.

Not a test: `python bench/peers.py [--battles 100000,1000000 --players 100,400 --rounds 100]`
(peers: `pip install -e ".[bench]"`; arena-rank pins numpy 2.3.3 and jax, so it runs from its own
virtualenv: `--arena-python /tmp/arena-venv/bin/python`, see bench/peers_arena.py). A peer that is
not installed is named and skipped.

Every peer is timed against joust given the same input: `objects` (joust's `Battle` list; no peer
takes these), `lists` (names and winners as Python lists: evalica's input), `frame` (the Arena
DataFrame: arena-rank's), `arrays` (integer player codes and scores: choix's and scikit-learn's).

Data: random pairs of players with true ratings around 1000 (sd 200), 20% ties, 5,000 question
ids, built before the clock starts. Ties are half a win each way everywhere (arena-rank's
outcome 0.5; scikit-learn as Chatbot Arena's first notebook: every battle twice).

Paths: `fit` the point ratings; `intervals` ratings with closed-form 95% intervals (joust:
Fisher; arena-rank: sandwich); `bootstrap` 100 resampling rounds (joust resamples questions,
the peers battles); `elo` online Elo, k=4, in battle order. A peer's bootstrap that would take
minutes is measured at 1 and `--peer-rounds` rounds and extrapolated linearly (marked `~`).
Each timing is the best of `--repeat` runs, or of more while they take under half a second (this
machine is shared; the best is the least disturbed), except the long bootstrap and scikit-learn
runs, which run once.

The floor, per size: reading the four fields a fit needs once (a list comprehension per field:
players, winner, weight; a question id matters only to the bootstrap), counting them into pair
matrices (one bincount), and one Newton step: no Bradley-Terry fit from Python objects can cost
less. Output: first the BLAS thread setting it ran under (joust's processes
run BLAS single-threaded: run it with OPENBLAS_NUM_THREADS=1 to measure what they see) and the
allocator's (see `settle_malloc`), then one
line per size, path and library (seconds; for a peer `peer/joust`, the speed-up of joust; for
joust `joust/floor`), then `slowest_ratio`: the smallest peer/joust ratio over every path and size.
"""
from __future__ import annotations

import argparse
import ctypes
import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboard.columns import coded_points  # noqa: E402
from leaderboard.fit import _unit_hessian, fit_log_strengths, spd_solve  # noqa: E402
from leaderboard.ratings import (  # noqa: E402
    battle_table,
    bootstrap_intervals,
    bradley_terry,
    bradley_terry_intervals,
    online_elo,
)
from leaderboard.types import Battle, Winner  # noqa: E402

WINNERS = (Winner.B, Winner.A, Winner.TIE)  # code 0 = b won, 1 = a won, 2 = tie
ARENA = np.array(["model_b", "model_a", "tie"], dtype=object)


def optional(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        print(f"# {name} not installed ({exc}): skipped")
        return None


def blas_threads() -> str:
    """Under which BLAS thread setting this run ran: the environment and what the library reports."""
    env = ", ".join(f"{k}={os.environ.get(k, 'unset')}" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"))
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return f"{env}; threadpoolctl not installed: the library's own count not read"
    pools = ", ".join(f"{p['internal_api']} {p['num_threads']} thread(s)" for p in threadpool_info() if p["user_api"] == "blas")
    return f"{env}; in use: {pools or 'no BLAS loaded'}"


def settle_malloc() -> str:
    """Fix glibc's allocation thresholds where a long-running process's heap settles.

    glibc starts by serving blocks over 128 kB with fresh mmaps and raises that threshold only
    as such blocks are freed, so a fresh process pays page faults on every large temporary: in
    one process the same 100k-battle fit took 5.6 ms of CPU for its first 40 calls and 2.4 ms
    after other work had raised the threshold. Fixed here (mmap above 64 MB, trim above 256 MB)
    for joust and the peers alike, which run in this process (arena-rank runs in its own).
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        done = libc.mallopt(-3, 64 << 20) == 1 and libc.mallopt(-1, 256 << 20) == 1  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        done = False
    return "glibc mmap threshold 64 MB, trim threshold 256 MB" if done else "glibc mallopt unavailable: thresholds as they start"


def simulate(rng: np.random.Generator, battles: int, players: int) -> tuple[np.ndarray, ...]:
    truth = 1000.0 + rng.normal(0.0, 200.0, players)
    a = rng.integers(0, players, battles)
    b = (a + rng.integers(1, players, battles)) % players
    p_a = 1.0 / (1.0 + 10.0 ** ((truth[b] - truth[a]) / 400.0))
    code = np.where(rng.random(battles) < 0.2, 2, (rng.random(battles) < p_a).astype(int))
    return a, b, code, rng.integers(0, 5000, battles)


def best(repeat: int, function: Callable[[], object], *, budget: float = 0.5, most: int = 50) -> tuple[float, object]:
    """The fastest of at least `repeat` runs, and of more while they fit in `budget` seconds (at
    most `most`): a path of a few milliseconds gets dozens of tries, as timeit's autorange does,
    so one unlucky moment on a shared machine, or the first allocations of a run, do not decide
    it; joust and every peer are timed alike."""
    times, result = [], None
    while len(times) < repeat or (sum(times) < budget and len(times) < most):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def cpu_best(repeat: int, function: Callable[[], object], *, budget: float = 0.5, most: int = 50) -> float:
    """As `best`, in this process's CPU seconds: what a call costs when nothing else runs."""
    times: list[float] = []
    while len(times) < repeat or (sum(times) < budget and len(times) < most):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return min(times)


def floor_seconds(battles: list[Battle], a: np.ndarray, b: np.ndarray, code: np.ndarray, n: int) -> float:
    """Read the fit's fields once, count once, one Newton step."""
    start = time.perf_counter()
    fields = [[x.a for x in battles], [x.b for x in battles], [x.winner for x in battles], [x.weight for x in battles]]
    score = (code == 1) + 0.5 * (code == 2)
    points = np.bincount(a * n + b, weights=score, minlength=n * n) + np.bincount(b * n + a, weights=1 - score, minlength=n * n)
    points = points.reshape(n, n)
    theta = np.zeros(n)
    hess, prob = _unit_hessian(theta, points + points.T)
    grad = ((points + points.T) * prob).sum(axis=1) - points.sum(axis=1)
    spd_solve(hess + np.eye(n) / n + 0.01 * np.eye(n), grad)
    del fields
    return time.perf_counter() - start


def sklearn_fit(linear_model, sparse, a: np.ndarray, b: np.ndarray, code: np.ndarray, n: int) -> np.ndarray:
    """Chatbot Arena's first notebook: every battle twice, +ln10/-ln10 columns, a tie one win each
    way (sparse rows: a dense design at 1M × 400 would be 6 GB)."""
    m = len(a)
    rows = np.repeat(np.arange(2 * m), 2)
    cols = np.stack([np.concatenate([a, a]), np.concatenate([b, b])], axis=1).ravel()
    vals = np.tile([math.log(10.0), -math.log(10.0)], 2 * m)
    x = sparse.csr_matrix((vals, (rows, cols)), shape=(2 * m, n))
    y = np.concatenate([code != 0, code == 1]).astype(float)
    model = linear_model.LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-6, max_iter=1000)
    model.fit(x, y)
    coef = model.coef_[0]
    return 1000.0 + 400.0 * (coef - coef.mean())


def extrapolated(one: float, some: float, r: int, rounds: int) -> float:
    """Seconds for `rounds` from runs of 1 and r rounds: the fixed cost plus the per-round slope."""
    per_round = max(some - one, 0.0) / max(r - 1, 1)
    return one + per_round * (rounds - 1)


def run_size(args, m: int, n: int, peers: dict, lines: list) -> None:
    rng = np.random.default_rng(args.seed)
    a, b, code, question = simulate(rng, m, n)
    names = [f"model-{i:03d}" for i in range(n)]
    qids = [f"q{q}" for q in range(5000)]
    battles = [Battle(names[i], names[j], WINNERS[c], qids[q])
               for i, j, c, q in zip(a.tolist(), b.tolist(), code.tolist(), question.tolist())]
    frame = pd.DataFrame({"model_a": np.array(names, dtype=object)[a], "model_b": np.array(names, dtype=object)[b],
                          "winner": ARENA[code], "question_id": np.array(qids, dtype=object)[question]})
    size = f"{m // 1000}k×{n}"
    floor = min(floor_seconds(battles, a, b, code, n) for _ in range(args.repeat))
    scores = np.where(code == 2, 0.5, code.astype(float))
    inputs = {  # joust's input in each peer's format, built before the clock starts
        "objects": battles,
        "lists": {"model_a": [names[i] for i in a.tolist()], "model_b": [names[j] for j in b.tolist()],
                  "winner": [WINNERS[c] for c in code.tolist()]},
        "frame": frame,
        "arrays": {"model_a": a, "model_b": b, "winner": scores},
    }
    joust: dict[tuple[str, str], float] = {}
    ours: dict[str, float] = {}

    def record(path: str, library: str, seconds: float, note: str = "", diff: float | None = None, given: str = "objects") -> None:
        if library == "joust":
            joust[path, given] = seconds
            ratio, label = seconds / floor, "joust/floor"
        else:
            if (path, given) not in joust:
                run = {"fit": lambda: bradley_terry(inputs[given]),
                       "intervals": lambda: bradley_terry_intervals(inputs[given]),
                       "elo": lambda: online_elo(inputs[given], k=4.0)}[path]
                record(path, "joust", best(args.repeat, run)[0], given=given)
            ratio, label = seconds / joust[path, given], "peer/joust"
            lines.append(ratio)
        agree = "" if diff is None else f"  max|Δ| vs joust {diff:.3f} Elo"
        print(f"{size:>9} {path:<9} {library:<10} {given:<7} {note:1}{seconds:9.3f} s  {label} {ratio:7.2f}{agree}", flush=True)

    def diff_to(other: dict[str, float]) -> float:
        return max(abs(ours[p] - float(other[str(p)])) for p in ours)

    print(f"{size:>9} floor     (read a fit's fields once + count + 1 Newton step) {floor:9.3f} s", flush=True)
    seconds, result = best(args.repeat, lambda: bradley_terry(battles))
    ours.update(result)
    record("fit", "joust", seconds)
    seconds, _ = best(args.repeat, lambda: bradley_terry_intervals(battles))
    record("intervals", "joust", seconds)
    seconds, _ = best(1, lambda: bootstrap_intervals(battles, np.random.default_rng(1), rounds=args.rounds))
    record("bootstrap", "joust", seconds)
    for given in ("lists", "frame", "arrays"):  # the same bootstrap from the other inputs
        joust["bootstrap", given] = best(1, lambda given=given: bootstrap_intervals(battle_table(inputs[given]), np.random.default_rng(1),
                                                                 rounds=args.rounds))[0]
    seconds, _ = best(args.repeat, lambda: online_elo(battles, k=4.0))
    record("elo", "joust", seconds)
    elo_ours = online_elo(battles, k=4.0)

    if (evalica := peers.get("evalica")) is not None:
        ew = (evalica.Winner.Y, evalica.Winner.X, evalica.Winner.Draw)
        xs, ys, ws = [names[i] for i in a.tolist()], [names[j] for j in b.tolist()], [ew[c] for c in code.tolist()]
        seconds, result = best(args.repeat, lambda: evalica.bradley_terry(xs, ys, ws, tolerance=1e-10))
        scores = result.scores
        theirs = dict(zip(scores.index, 1000.0 + 400.0 * (np.log10(scores.to_numpy()) - np.log10(scores.to_numpy()).mean())))
        record("fit", "evalica", seconds, diff=diff_to(theirs), given="lists")

        def evalica_boot(r: int):
            return evalica.bootstrap(evalica.bradley_terry, xs, ys, ws, n_resamples=r,
                                     bootstrap_method="percentile", random_state=1)
        if m * args.rounds <= args.full_peer_work:
            record("bootstrap", "evalica", best(1, lambda: evalica_boot(args.rounds))[0], given="lists")
        else:
            with warnings.catch_warnings():  # one round: evalica's spread of one sample warns
                warnings.simplefilter("ignore", RuntimeWarning)
                one = best(1, lambda: evalica_boot(1))[0]
            some = best(1, lambda: evalica_boot(args.peer_rounds))[0]
            record("bootstrap", "evalica", extrapolated(one, some, args.peer_rounds, args.rounds), "~", given="lists")
        seconds, result = best(args.repeat, lambda: evalica.elo(xs, ys, ws, k=4.0))
        elo_theirs = dict(zip(result.scores.index, result.scores.to_numpy()))
        record("elo", "evalica", seconds, diff=max(abs(elo_ours[p] - elo_theirs[p]) for p in elo_ours), given="lists")

    if (choix := peers.get("choix")) is not None:
        def choix_fit():
            score = (code == 1) + 0.5 * (code == 2)
            won = np.bincount(a * n + b, weights=score, minlength=n * n) + np.bincount(b * n + a, weights=1 - score, minlength=n * n)
            return choix.ilsr_pairwise_dense(won.reshape(n, n), alpha=0.0, tol=1e-10)
        seconds, params = best(args.repeat, choix_fit)
        theirs = dict(zip(names, 1000.0 + 400.0 / math.log(10.0) * (params - params.mean())))
        record("fit", "choix", seconds, diff=diff_to(theirs), given="arrays")
        _, points = coded_points(inputs["arrays"])
        parts = {"count": lambda: coded_points(inputs["arrays"]), "fit": lambda: fit_log_strengths(points), "choix": choix_fit}
        cpu = {name: cpu_best(args.repeat, run) * 1e3 for name, run in parts.items()}
        print(f"{size:>9} # CPU ms, joust's fit from arrays in parts: count (checks included, no table) "
              f"{cpu['count']:.2f} + fit {cpu['fit']:.2f} = {cpu['count'] + cpu['fit']:.2f}; "
              f"choix (its count included) {cpu['choix']:.2f}", flush=True)

    if args.arena_python:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "battles.npz"
            np.savez(path, a=a, b=b, code=code, names=np.array(names))
            done = subprocess.run([args.arena_python, str(REPO / "bench" / "peers_arena.py"), str(path), str(args.peer_rounds)],
                                  capture_output=True, text=True)
        if done.returncode != 0:
            print(f"# arena-rank failed: {done.stderr.strip().splitlines()[-1:]}")
        else:
            out = json.loads(done.stdout.strip().splitlines()[-1])
            record("fit", "arena-rank", out["fit"], diff=diff_to(out["ratings"]), given="frame")
            record("intervals", "arena-rank", out["intervals"], given="frame")
            record("bootstrap", "arena-rank", extrapolated(out["bootstrap_1"], out["bootstrap_r"], out["rounds"], args.rounds), "~", given="frame")

    if (sk := peers.get("sklearn")) is not None and m * n <= args.sklearn_max_work:
        from scipy import sparse
        start = time.perf_counter()
        base = sklearn_fit(sk, sparse, a, b, code, n)
        fit_seconds = time.perf_counter() - start
        record("fit", "sklearn", fit_seconds, diff=diff_to(dict(zip(names, base))), given="arrays")
        pick = np.random.default_rng(2).integers(0, m, m)
        start = time.perf_counter()
        sklearn_fit(sk, sparse, a[pick], b[pick], code[pick], n)
        per_round = time.perf_counter() - start
        record("bootstrap", "sklearn", fit_seconds + per_round * args.rounds, "~", given="arrays")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", default="100000,1000000")
    parser.add_argument("--players", default="100,400")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--peer-rounds", type=int, default=5, help="rounds actually run by a peer's long bootstrap")
    parser.add_argument("--full-peer-work", type=int, default=10_000_000, help="run a peer's bootstrap in full up to battles×rounds")
    parser.add_argument("--sklearn-max-work", type=int, default=400_000_000, help="skip scikit-learn above battles×players")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--arena-python", default="", help="a Python with arena-rank installed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fresh-malloc", action="store_true", help="leave glibc's allocation thresholds as a new process has them")
    args = parser.parse_args(argv)
    sk = optional("sklearn.linear_model")
    peers = {"evalica": optional("evalica"), "choix": optional("choix"), "sklearn": sk}
    print(f"# BLAS threads: {blas_threads()}", flush=True)
    print(f"# malloc: {settle_malloc() if not args.fresh_malloc else 'thresholds as they start (--fresh-malloc)'}", flush=True)
    if not args.arena_python:
        print("# arena-rank: no --arena-python given: skipped")
    ratios: list[float] = []
    for m in (int(x) for x in args.battles.split(",")):
        for n in (int(x) for x in args.players.split(",")):
            run_size(args, m, n, peers, ratios)
    print(f"slowest_ratio {min(ratios):.2f}" if ratios else "slowest_ratio n/a (no peer ran)")


if __name__ == "__main__":
    main()
