"""FactSim: how well a summary's facts match its sources' facts, from a similarity matrix.

Pure maths over plain arrays (no encoder, no judge): `workers.criteria.factsim` extracts the
fact tuples, embeds them and hands the cosine similarities here.

With S[i, j] the cosine similarity of source fact i and summary fact j (n source facts, m
summary facts) and a threshold τ, a fact is *matched* when some fact on the other side is at
least τ similar to it:

    coverage    f_V = |{i : max_j S[i, j] ≥ τ}| / n    share of source facts the summary states
    consistency f_N = |{j : max_i S[i, j] ≥ τ}| / m    share of summary facts the sources support
    FactSim         = 2·f_V·f_N / (f_V + f_N)           harmonic mean; 0 when both are 0

Shares of matched facts, not means of best similarities: a summary earns nothing for a fact
that is merely on the same topic, and one invented fact costs the same whatever it says.
No facts on either side (n = 0 or m = 0) gives f_V = f_N = 0: an empty summary covers
nothing, and a summary of sources that state nothing has nothing to be consistent with (the
caller decides whether that is an error).

Sources (`summary_sources`): the texts a summary is scored against are its submission's
`metadata["sources"]` (a list of texts, or one string; blank ones dropped), else its question
text. The worker (`workers.criteria.factsim`) and the dry run (`leaderboard.callplan`) both
read them here, so they agree on which texts a match extracts.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = [
    "FactSimScore", "Match", "best_matches", "factsim", "harmonic_mean", "similarity_matrix", "summary_sources",
]

_TOLERANCE = 1e-6  # cosine similarities of float32 embeddings stray this far outside [-1, 1]


@dataclass(frozen=True)
class FactSimScore:
    """Coverage f_V, consistency f_N and their harmonic mean, each in [0, 1]."""

    coverage: float
    consistency: float
    factsim: float


@dataclass(frozen=True)
class Match:
    """A fact's most similar fact on the other side (`index`), and how similar; index -1 when
    the other side has no fact."""

    index: int
    similarity: float


def summary_sources(question: str, metadata: Mapping[str, object]) -> tuple[str, ...]:
    """The texts a summary of `question` with this `metadata` summarises (see the module
    docstring); ValueError when `metadata["sources"]` is neither a text nor a list of texts."""
    given = metadata.get("sources")
    if isinstance(given, str):
        given = [given]
    if given is not None and not (isinstance(given, list) and all(isinstance(s, str) for s in given)):
        raise ValueError(f"metadata.sources must be a list of texts, not {given!r:.80}")
    texts = tuple(s for s in given or () if s.strip())
    return texts or (question,)


def harmonic_mean(a: float, b: float) -> float:
    """2ab / (a + b), and 0 when a + b is 0 (the FactSim of a summary that matches nothing)."""
    return 0.0 if a + b == 0 else 2.0 * a * b / (a + b)


def factsim(similarity: np.ndarray, *, threshold: float) -> FactSimScore:
    """FactSim of one summary from its (n_source × n_summary) similarity matrix (see the module
    docstring). ValueError for a matrix that is not 2-D or holds values outside [-1, 1] or NaN,
    or a threshold outside [-1, 1]."""
    sim = _checked(similarity)
    if not (np.isfinite(threshold) and -1.0 <= threshold <= 1.0):
        raise ValueError(f"the threshold is a cosine similarity in [-1, 1], not {threshold!r}")
    n_source, n_summary = sim.shape
    if n_source == 0 or n_summary == 0:
        return FactSimScore(0.0, 0.0, 0.0)
    coverage = float(np.mean(sim.max(axis=1) >= threshold))
    consistency = float(np.mean(sim.max(axis=0) >= threshold))
    return FactSimScore(coverage, consistency, harmonic_mean(coverage, consistency))


def best_matches(similarity: np.ndarray) -> tuple[list[Match], list[Match]]:
    """For each source fact its closest summary fact, and for each summary fact its closest
    source fact: what a reader checks to see why a summary scored as it did."""
    sim = _checked(similarity)
    n_source, n_summary = sim.shape
    if n_source == 0 or n_summary == 0:
        return [Match(-1, 0.0)] * n_source, [Match(-1, 0.0)] * n_summary
    rows, cols = sim.argmax(axis=1), sim.argmax(axis=0)
    return (
        [Match(int(j), float(sim[i, j])) for i, j in enumerate(rows)],
        [Match(int(i), float(sim[i, j])) for j, i in enumerate(cols)],
    )


def similarity_matrix(source: np.ndarray, summary: np.ndarray) -> np.ndarray:
    """Cosine similarities (n_source × n_summary) of two stacks of embeddings, one row per fact.
    Rows are normalised here, so an encoder need not; a zero row is similar to nothing (0)."""
    a, b = _rows(source, "source"), _rows(summary, "summary")
    if a.shape[1] != b.shape[1] and a.shape[0] and b.shape[0]:
        raise ValueError(f"embeddings of different sizes: {a.shape[1]} and {b.shape[1]}")
    if a.shape[0] == 0 or b.shape[0] == 0:
        return np.zeros((a.shape[0], b.shape[0]))
    return np.clip(_unit(a) @ _unit(b).T, -1.0, 1.0)  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def _rows(x: np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 1 and arr.size == 0:
        arr = arr.reshape(0, 0)
    if arr.ndim != 2:
        raise ValueError(f"{what} embeddings must be a 2-D array (one row per fact), not shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} embeddings hold NaN or infinite values")
    return arr


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def _checked(similarity: np.ndarray) -> np.ndarray:
    sim = np.asarray(similarity, dtype=np.float64)
    if sim.ndim != 2:
        raise ValueError(f"the similarity matrix must be 2-D (n_source × n_summary), not shape {sim.shape}")
    if sim.size and not (np.all(np.isfinite(sim)) and sim.min() >= -1 - _TOLERANCE and sim.max() <= 1 + _TOLERANCE):
        raise ValueError("similarities must be finite cosine similarities in [-1, 1]")
    return sim
