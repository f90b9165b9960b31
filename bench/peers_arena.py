"""arena-rank's side of bench/peers.py, run under the Python that has arena-rank installed.

Not a test. arena-rank 0.1.1 pins numpy==2.3.3 and jax==0.8.1, so it lives in its own
virtualenv (`python -m venv /tmp/arena-venv && /tmp/arena-venv/bin/pip install arena-rank`) and
bench/peers.py runs this file there: `python bench/peers_arena.py <battles.npz> <rounds>`.
Input: the same battles as the other peers (player codes, names, outcome 1/0/0.5), handed to
arena-rank as the Chatbot Arena DataFrame it reads. Prints one JSON object: seconds per path
(each path warmed up once on the same data first, so JAX's compilation is not counted) and the
point ratings by player.
"""
from __future__ import annotations

import json
import sys
import time

import jax
import numpy as np
import pandas as pd
from arena_rank.models.bradley_terry import BradleyTerry, fit_single_bootstrap_sample
from arena_rank.utils.data_utils import PairDataset


def frame(path: str) -> pd.DataFrame:
    data = np.load(path)
    names = np.array([str(n) for n in data["names"]], dtype=object)
    winner = np.array(["model_b", "model_a", "tie"], dtype=object)[data["code"]]
    return pd.DataFrame({"model_a": names[data["a"]], "model_b": names[data["b"]], "winner": winner})


def fit(df: pd.DataFrame) -> tuple[BradleyTerry, PairDataset]:
    dataset = PairDataset.from_pandas(df)
    model = BradleyTerry(n_competitors=len(dataset.competitors))
    model.fit(dataset)
    return model, dataset


def timed(function, *args):
    function(*args)  # warm-up: compile
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def main() -> None:
    path, rounds = sys.argv[1], int(sys.argv[2])
    df = frame(path)
    fit_seconds, (model, dataset) = timed(fit, df)

    def intervals(df: pd.DataFrame) -> dict:
        model, dataset = fit(df)
        return model.compute_ratings_and_cis(dataset, ci_method="sandwich")

    def bootstrap(df: pd.DataFrame, n: int) -> list:
        # arena-rank's own bootstrap: multinomial counts over the aggregated rows, one refit per
        # round through its `fit_single_bootstrap_sample`, run here in one process: its
        # multiprocessing pool forks after JAX has started threads and hung on this machine.
        model, dataset = fit(df)
        total = float(dataset.counts.sum())
        counts = jax.random.multinomial(jax.random.PRNGKey(1), n=int(total), p=dataset.counts / total,
                                        shape=(n, dataset.counts.shape[0]), dtype=model.dtype)
        return [fit_single_bootstrap_sample(counts[i], model, dataset) for i in range(n)]

    interval_seconds, result = timed(intervals, df)
    one_seconds, _ = timed(bootstrap, df, 1)
    many_seconds, _ = timed(bootstrap, df, rounds)
    ratings = dict(zip([str(c) for c in result["competitors"]], np.asarray(result["ratings"]).tolist()))
    print(json.dumps({
        "fit": fit_seconds, "intervals": interval_seconds,
        "bootstrap_1": one_seconds, "bootstrap_r": many_seconds, "rounds": rounds, "ratings": ratings,
    }))


if __name__ == "__main__":
    main()
