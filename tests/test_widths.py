"""Kept interval widths: a growing board reuses its Fisher variances only while little changed."""
from __future__ import annotations

import numpy as np
import pytest

from leaderboard.battles import pair_counts
from leaderboard.fit import DEFAULT_RIDGE, fisher_variances, fit_log_strengths
from leaderboard.ratings import bradley_terry_intervals
from leaderboard.tally import Tally
from leaderboard.types import Battle, Winner
from leaderboard.widths import DRIFT, WIDEST_GAP, KeptWidths

WINNERS = (Winner.B, Winner.A, Winner.TIE)


def battles(rng: np.random.Generator, count: int, players: int) -> list[Battle]:
    strength = rng.normal(0.0, 1.0, players)
    a = rng.integers(0, players, count)
    b = (a + rng.integers(1, players, count)) % players
    p = 1.0 / (1.0 + np.exp(strength[b] - strength[a]))
    code = np.where(rng.random(count) < 0.2, 2, (rng.random(count) < p).astype(int))
    return [Battle(f"p{i:02d}", f"p{j:02d}", WINNERS[c]) for i, j, c in zip(a.tolist(), b.tolist(), code.tolist())]


def widths_of(rows) -> dict[str, float]:
    return {r.player: r.ci_high - r.ci_low for r in rows}


@pytest.mark.parametrize(("players", "count"), [(40, 40_000), (10, 20_000)])
def test_a_growing_board_keeps_its_widths_close_and_its_ratings_exact(players: int, count: int) -> None:
    rng = np.random.default_rng(3)
    tally = Tally()
    tally.add(battles(rng, count, players))  # 2,000-4,000 judgements a player: DRIFT is 1-2 of them
    tally.board()
    before = tally._widths.computed
    worst, steps = 0.0, 400
    for battle in battles(rng, steps, players):
        tally.add([battle])
        rows = tally.board()
        exact = bradley_terry_intervals(tally.counts(), confidence=0.95)  # from scratch
        for row in rows:
            rating, low, high = exact[row.player]
            assert row.rating == pytest.approx(rating, abs=1e-9)  # ratings refitted every time
            worst = max(worst, abs((row.ci_high - row.ci_low) / (high - low) - 1.0))
    renewed = tally._widths.computed - before
    assert 1 <= renewed < 0.8 * steps, renewed  # kept often, renewed as play grew
    assert worst < WIDEST_GAP, worst  # a kept width is within 0.2% of the one a refit gives


def test_widths_are_renewed_for_new_players_and_after_drift() -> None:
    rng = np.random.default_rng(4)
    counts = pair_counts(battles(rng, 5_000, 10))
    beta = fit_log_strengths(counts.points)
    kept = KeptWidths()
    first = kept.variances_for(counts.players, counts.points, beta, ridge=DEFAULT_RIDGE)
    np.testing.assert_allclose(first, fisher_variances(counts.points, beta, ridge=DEFAULT_RIDGE))
    assert kept.variances_for(counts.players, counts.points, beta, ridge=DEFAULT_RIDGE) is first  # unchanged: kept
    grown = counts.points * (1.0 + 2 * DRIFT)
    assert kept.variances_for(counts.players, grown, beta, ridge=DEFAULT_RIDGE) is not first
    assert kept.computed == 2
    others = [*counts.players[:-1], "newcomer"]
    kept.variances_for(others, grown, beta, ridge=DEFAULT_RIDGE)
    assert kept.computed == 3
    shrunk = grown * 0.5  # never happens on a tally, but a smaller board is not the same board
    kept.variances_for(others, shrunk, beta, ridge=DEFAULT_RIDGE)
    assert kept.computed == 4


def test_a_forked_tally_keeps_its_own_widths() -> None:
    rng = np.random.default_rng(5)
    tally = Tally()
    tally.add(battles(rng, 3_000, 8))
    tally.board()
    fork = tally.copy()
    fork.add(battles(rng, 3_000, 8))  # doubles the play: the fork renews, the original keeps
    fork.board()
    assert fork._widths.computed == tally._widths.computed + 1
    assert tally._widths.played.sum() < fork._widths.played.sum()
