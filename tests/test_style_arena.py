"""Style control checked against arena-rank's contextual Bradley-Terry (lmarena/arena-rank).

arena-rank pins numpy 2.3.3 and jax, which cannot sit beside joust's environment, so it runs
in its own Python, named by `JOUST_ARENA_PYTHON` (`python -m venv /tmp/arena-venv &&
/tmp/arena-venv/bin/pip install arena-rank`, then `JOUST_ARENA_PYTHON=/tmp/arena-venv/bin/python
pytest tests/test_style_arena.py`); without one the test skips saying so. Both fit the same
battles and the same style features: joust through `leaderboard.style` (`covariates`, then
`style_control` as the board serves it), arena-rank from the raw normalised differences, which
it standardises itself. Its L2 penalty is on the mean log-likelihood and on the coefficients
only, so `reg = ridge / battles` matches joust's penalty on the coefficients; joust's ridge on
the ratings (0.01 nats², against thousands of battles) is left as it serves it.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from leaderboard.columns import from_columns
from leaderboard.fit import DEFAULT_RIDGE
from leaderboard.style import FEATURES, Style, covariates, style_control

ARENA_SCRIPT = Path(__file__).resolve().parent / "arena_style.py"


def arena_python() -> str:
    """The Python that has arena-rank, or a skip saying why there is none."""
    python = os.environ.get("JOUST_ARENA_PYTHON", "")
    if not python:
        pytest.skip("JOUST_ARENA_PYTHON is not set: name a Python with arena-rank installed "
                    "(it pins numpy 2.3.3 and jax, so it needs its own virtualenv) to run this check")
    probe = subprocess.run([python, "-c", "import arena_rank"], check=False, capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"JOUST_ARENA_PYTHON={python} cannot import arena_rank: "
                    f"{(probe.stderr.strip().splitlines() or ['not runnable'])[-1]}")
    return python


def styled_battles(seed: int, battles: int) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, list[Style], list[Style]]:
    """Eight models with their own habits of length, headers, lists and bold; a judge that
    rewards length and lists on top of quality; 15% ties."""
    rng = np.random.default_rng(seed)
    players = 8
    quality = rng.normal(0.0, 0.6, players)
    length, headers, lists, bold = (rng.uniform(lo, hi, players) for lo, hi in ((200, 1500), (0, 3), (0, 8), (0, 5)))
    a = rng.integers(0, players, battles)
    b = (a + rng.integers(1, players, battles)) % players

    def style(side: np.ndarray) -> list[Style]:
        return [Style(float(rng.gamma(6.0, length[k] / 6.0)), int(rng.poisson(headers[k])),
                      int(rng.poisson(lists[k])), int(rng.poisson(bold[k]))) for k in side.tolist()]

    styles_a, styles_b = style(a), style(b)
    x = covariates(styles_a, styles_b)
    logit = quality[a] - quality[b] + 0.5 * x[:, 0] + 0.2 * x[:, 2]
    score = (rng.random(battles) < 1.0 / (1.0 + np.exp(-logit))).astype(float)
    score[rng.random(battles) < 0.15] = 0.5
    return [f"model-{k}" for k in range(players)], a, b, score, styles_a, styles_b


def test_style_control_matches_arena_rank_within_one_elo(tmp_path: Path) -> None:
    python = arena_python()
    names, a, b, score, styles_a, styles_b = styled_battles(seed=11, battles=5000)
    named = np.array(names, dtype=object)
    board = style_control(from_columns(named[a], named[b], score), covariates(styles_a, styles_b))

    va = np.array([s.vector() for s in styles_a])
    vb = np.array([s.vector() for s in styles_b])
    path = tmp_path / "battles.npz"
    np.savez(path, names=np.array(names), a=a, b=b, score=score, features=(va - vb) / (va + vb + 1.0))
    done = subprocess.run([python, str(ARENA_SCRIPT), str(path), repr(DEFAULT_RIDGE / len(a))],
                          check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    arena = json.loads(done.stdout.strip().splitlines()[-1])

    ratings = {r.player: r.rating for r in board.ratings}
    assert sorted(arena["ratings"]) == sorted(ratings)
    gaps = {p: abs(ratings[p] - arena["ratings"][p]) for p in ratings}
    elo = 400.0 / math.log(10.0)
    coefficient_gaps = [abs(c.value - arena_value * elo) for c, arena_value in zip(board.coefficients, arena["coefficients"])]
    print(f"largest rating difference to arena-rank: {max(gaps.values()):.4f} Elo; "
          f"coefficients: {max(coefficient_gaps):.4f} Elo per sd")
    assert [c.name for c in board.coefficients] == list(FEATURES)
    assert max(gaps.values()) < 1.0, gaps
    assert max(coefficient_gaps) < 1.0, coefficient_gaps
    spread = max(ratings.values()) - min(ratings.values())
    assert spread > 100.0  # the check compares ratings that differ, not a field of equals
    plain_gap = max(abs(r.plain - arena["ratings"][r.player]) for r in board.ratings)
    assert plain_gap > 10.0  # and the style effect is large enough that ignoring it would fail
