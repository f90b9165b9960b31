"""FactSim's maths on hand-made similarity matrices: coverage, consistency, their harmonic
mean, the threshold's edge, and summaries or sources with no facts."""
from __future__ import annotations

import numpy as np
import pytest

from leaderboard.factsim import FactSimScore, Match, best_matches, factsim, harmonic_mean, similarity_matrix

T = 0.75


def test_a_summary_stating_every_source_fact_and_nothing_else_scores_one() -> None:
    sim = np.array([[0.95, 0.10], [0.20, 0.80]])
    assert factsim(sim, threshold=T) == FactSimScore(1.0, 1.0, 1.0)


def test_coverage_counts_source_facts_and_consistency_counts_summary_facts() -> None:
    # 4 source facts (rows), 3 summary facts (columns). Source facts 0 and 2 are stated (by
    # summary facts 0 and 1); summary fact 2 is invented (no source fact near it).
    sim = np.array([
        [0.90, 0.10, 0.30],
        [0.60, 0.20, 0.10],
        [0.05, 0.76, 0.70],
        [0.10, 0.30, 0.74],
    ])  # fmt: skip
    score = factsim(sim, threshold=T)
    assert score.coverage == pytest.approx(2 / 4)
    assert score.consistency == pytest.approx(2 / 3)
    assert score.factsim == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))  # 4/7
    assert score.factsim == pytest.approx(4 / 7)


def test_one_summary_fact_may_cover_several_source_facts() -> None:
    sim = np.array([[0.9], [0.8], [0.1]])  # the one summary fact states two of three source facts
    score = factsim(sim, threshold=T)
    assert (score.coverage, score.consistency) == (pytest.approx(2 / 3), 1.0)
    assert score.factsim == pytest.approx(0.8)


def test_a_similarity_equal_to_the_threshold_matches() -> None:
    assert factsim(np.array([[0.75]]), threshold=0.75).factsim == 1.0
    assert factsim(np.array([[np.nextafter(0.75, 0)]]), threshold=0.75).factsim == 0.0


def test_the_threshold_decides_what_matches() -> None:
    sim = np.array([[0.9, 0.5], [0.5, 0.6]])
    assert factsim(sim, threshold=0.95) == FactSimScore(0.0, 0.0, 0.0)
    assert factsim(sim, threshold=0.55) == FactSimScore(1.0, 1.0, 1.0)
    assert factsim(sim, threshold=0.7) == FactSimScore(0.5, 0.5, 0.5)


def test_nothing_matched_is_zero_not_nan() -> None:
    score = factsim(np.array([[0.1, -0.2], [0.0, 0.3]]), threshold=T)
    assert score == FactSimScore(0.0, 0.0, 0.0)
    assert harmonic_mean(0.0, 0.0) == 0.0 and harmonic_mean(1.0, 0.5) == pytest.approx(2 / 3)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
def test_no_facts_on_either_side_scores_zero(shape: tuple[int, int]) -> None:
    assert factsim(np.zeros(shape), threshold=T) == FactSimScore(0.0, 0.0, 0.0)
    sources, summaries = best_matches(np.zeros(shape))
    assert sources == [Match(-1, 0.0)] * shape[0] and summaries == [Match(-1, 0.0)] * shape[1]


def test_best_matches_name_the_closest_fact_on_the_other_side() -> None:
    sim = np.array([[0.9, 0.2, 0.3], [0.1, 0.4, 0.8]])
    sources, summaries = best_matches(sim)
    assert sources == [Match(0, 0.9), Match(2, 0.8)]
    assert summaries == [Match(0, 0.9), Match(1, 0.4), Match(1, 0.8)]


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros((2, 2, 2)), np.array([[np.nan]]), np.array([[1.5]])])
def test_a_malformed_matrix_is_refused(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        factsim(bad, threshold=T)


@pytest.mark.parametrize("threshold", [1.5, -2.0, float("nan")])
def test_a_threshold_outside_the_cosine_range_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        factsim(np.array([[0.5]]), threshold=threshold)


def test_similarity_matrix_is_the_cosine_of_rows_whatever_their_length() -> None:
    source = np.array([[3.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    summary = np.array([[1.0, 1.0], [-5.0, 0.0]])
    sim = similarity_matrix(source, summary)
    assert sim.shape == (3, 2)
    np.testing.assert_allclose(sim, [[np.sqrt(0.5), -1.0], [np.sqrt(0.5), 0.0], [0.0, 0.0]], atol=1e-12)
    assert similarity_matrix(np.zeros((0, 4)), summary[:, :1].repeat(4, axis=1)).shape == (0, 2)
    assert similarity_matrix(source, np.zeros((0, 2))).shape == (3, 0)
    with pytest.raises(ValueError, match="different sizes"):
        similarity_matrix(source, np.ones((1, 3)))
