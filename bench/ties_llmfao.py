"""Ties on LLMFAO's crowd votes: half a win each way (Bradley-Terry) against Davidson's tie model.

Not a test: run `python bench/ties_llmfao.py [LLMFAO_DIR]` (a second or two). The data is read
in place from ../shared/data/llmfao (never copied); without it the script says so and exits 0.

`crowd-comparisons.csv` (8,931 votes, 39% ties) becomes battles (left, right, winner, prompt),
winner left → A, right → B, tie → TIE, as tests/test_ratings.py reads it. Both boards use the
default ridge and closed-form (Fisher) 95% intervals on the same Elo scale (base 10, scale 400,
mean 1000). Per model: rating and interval width (high - low) under each model, and the width
ratio davidson/half; then the mean ratio, the same ratio on a common scale (Davidson's ratings
stretch: a tie counted as half a win pulls odds towards even, Davidson rates decisive games), the
tie share and ν with its interval.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboard.ties import davidson_intervals, fit_with_ties
from leaderboard.types import Battle, Winner

POSITION = {"left": Winner.A, "right": Winner.B, "tie": Winner.TIE}


def load(path: Path) -> list[Battle]:
    with path.open(newline="", encoding="utf-8") as handle:
        return [Battle(row["left"], row["right"], POSITION[row["winner"]], row["prompt"]) for row in csv.DictReader(handle)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("llmfao", nargs="?", type=Path, default=REPO.parent / "shared" / "data" / "llmfao")
    args = parser.parse_args(argv)
    path = args.llmfao / "crowd-comparisons.csv"
    if not path.exists():
        print(f"skipped: {path} is absent (LLMFAO's crowd votes; see ../shared/data/README.md)")
        return 0
    battles = load(path)
    half = fit_with_ties(battles, "half").ratings
    davidson = davidson_intervals(battles)
    ties = sum(b.winner is Winner.TIE for b in battles)

    print(f"LLMFAO crowd votes: {len(battles)} battles, {len(half)} models, {ties} ties")
    print(f"{'model':<34} {'half':>8} {'width':>7}   {'davidson':>8} {'width':>7}   {'ratio':>5}")
    ratios = []
    for player in sorted(half, key=lambda p: -half[p][0]):
        h, d = half[player], davidson.ratings[player]
        ratio = (d[2] - d[1]) / (h[2] - h[1])
        ratios.append(ratio)
        print(f"{player[:34]:<34} {h[0]:8.1f} {h[2] - h[1]:7.1f}   {d[0]:8.1f} {d[2] - d[1]:7.1f}   {ratio:5.3f}")
    nu, low, high = davidson.tie_parameter
    spread_half = max(v[0] for v in half.values()) - min(v[0] for v in half.values())
    spread_dav = max(v[0] for v in davidson.ratings.values()) - min(v[0] for v in davidson.ratings.values())
    print()
    print(f"mean width ratio davidson/half: {sum(ratios) / len(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
    print(f"mean width: half {sum(v[2] - v[1] for v in half.values()) / len(half):.1f}, "
          f"davidson {sum(v[2] - v[1] for v in davidson.ratings.values()) / len(half):.1f} Elo points")
    print(f"rating spread (top - bottom): half {spread_half:.1f}, davidson {spread_dav:.1f}")
    # The two scales differ: a tie as half a win pulls every pair's odds towards even, Davidson
    # rates decisive games only, so its ratings stretch. Width against the stretch, through the
    # origin: the slope of Davidson's deviations from 1000 on the half board's.
    x = [half[p][0] - 1000.0 for p in half]
    y = [davidson.ratings[p][0] - 1000.0 for p in half]
    stretch = sum(a * b for a, b in zip(x, y)) / sum(a * a for a in x)
    print(f"stretch of the Davidson scale (slope of its deviations on the half board's): {stretch:.3f}")
    print(f"mean width ratio on a common scale (ratio / stretch): {sum(ratios) / len(ratios) / stretch:.3f}")
    print(f"tie share: {ties / len(battles):.3f} ({ties} of {len(battles)})")
    print(f"nu = {nu:.3f}, 95% interval [{low:.3f}, {high:.3f}]; "
          f"P(tie) between equals = nu/(2+nu) = {nu / (2 + nu):.3f}")
    print(f"Davidson log-likelihood: {davidson.log_likelihood:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
