"""arena-rank's side of tests/test_style_arena.py, run under the Python that has arena-rank.

Not a test and not imported by one: arena-rank 0.1.1 pins numpy==2.3.3 and jax==0.8.1, so it
lives in its own virtualenv and the test runs this file there:
`python tests/arena_style.py <battles.npz> <reg>`. Input: player names, the a/b player codes,
a's score (1, 0.5, 0) and the raw style features per battle (the normalised differences
(a - b)/(a + b + 1) before standardising). They go to arena-rank as the Chatbot Arena DataFrame
its `ContextualPairDataset.from_pandas` reads, which standardises the features itself; no
inverse-propensity reweighting (joust weighs every battle alike). Prints one JSON object: the
ratings by player (Elo scale, mean 1000) and the coefficients in natural-log units per sd.
"""
from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
from arena_rank.utils.data_utils import ContextualPairDataset


def main() -> None:
    data = np.load(sys.argv[1])
    reg = float(sys.argv[2])
    names = np.array([str(n) for n in data["names"]], dtype=object)
    winner = np.where(data["score"] == 1.0, "model_a", np.where(data["score"] == 0.0, "model_b", "tie"))
    features = data["features"]
    columns = [f"feature_{k}" for k in range(features.shape[1])]
    frame = pd.DataFrame({"model_a": names[data["a"]], "model_b": names[data["b"]], "winner": winner})
    frame[columns] = features
    dataset = ContextualPairDataset.from_pandas(frame, columns, reweighted=False, normalize_features=True)
    model = ContextualBradleyTerry(len(dataset.competitors), len(columns), reg=reg)
    model.fit(dataset)
    result = model.compute_ratings_and_cis(dataset, ci_method="sandwich")
    print(json.dumps({
        "ratings": dict(zip([str(c) for c in result["competitors"]], np.asarray(result["ratings"]).tolist())),
        "coefficients": np.asarray(result["coeffs"]).tolist(),
    }))


if __name__ == "__main__":
    main()
