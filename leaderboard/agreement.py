"""Krippendorff's alpha (nominal) between raters of the same pairs, with bootstrap intervals.

Judge health asks how far a judge agrees with the human votes, and judges with each other,
beyond what their verdict frequencies alone would give: alpha = 1 - observed / expected
disagreement, 1 for perfect agreement, 0 for chance, negative for systematic disagreement.
A unit is one pair (one question, two outputs); a rater's value is its verdict (A, B or TIE);
a unit with fewer than two values says nothing about agreement and is left out, so raters need
not have judged the same pairs. Missing values are None.

Computed from the units × categories count matrix N (N[u, c]: how many raters gave unit u value
c; m_u its row sum): observed disagreement Σ_u (m_u² - Σ_c N[u, c]²) / (m_u - 1), expected from
the pooled value counts n_c: (n² - Σ_c n_c²) / (n - 1), n = Σ_c n_c. The bootstrap resamples
units with replacement (a passed-in generator) and takes percentiles; when the resamples never
vary alpha (one unit, or units all alike) there is no interval (`NO_SPREAD`), not a zero-width
one. `alpha_of_types` computes
both from the distinct rows of N and their frequencies, so a running tally can afford them.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

NO_SPREAD = "no_spread"  # Alpha.missing: the resamples never vary alpha, so they cannot measure its spread
NO_WIDTH = 1e-9  # an interval of alpha narrower than this has no width


@dataclass(frozen=True)
class Alpha:
    """Krippendorff's alpha with a percentile bootstrap interval (nan when not bootstrapped).
    `missing` is NO_SPREAD when alpha is a number and the bootstrap gave no interval of any
    width: every resample of the units gives the same alpha (one pair, or pairs all alike), a
    zero-width interval the data cannot support, so the bounds are nan."""

    alpha: float
    low: float
    high: float
    units: int
    values: int
    missing: str | None = None


def _percentiles(point: float, samples: np.ndarray, confidence: float) -> tuple[float, float, str | None]:
    """(low, high, missing) of the bootstrap `samples` (nan ones left out); see `Alpha`."""
    samples = samples[~np.isnan(samples)]
    if samples.size:
        tail = (1.0 - confidence) / 2.0
        low, high = (float(v) for v in np.quantile(samples, [tail, 1.0 - tail]))
        if high - low > NO_WIDTH:
            return low, high, None
    return float("nan"), float("nan"), None if np.isnan(point) else NO_SPREAD


def value_counts(ratings: Sequence[Sequence[Hashable | None]]) -> np.ndarray:
    """Units × categories counts from one row per rater and one column per unit (None missing);
    only units with at least two values are kept."""
    rows = [list(r) for r in ratings]
    if len({len(r) for r in rows}) > 1:
        raise ValueError("every rater needs one value (or None) per unit")
    categories: dict[Hashable, int] = {}
    units = len(rows[0]) if rows else 0
    counts = np.zeros((units, 0))
    cells: list[tuple[int, int]] = []
    for row in rows:
        for u, value in enumerate(row):
            if value is not None:
                cells.append((u, categories.setdefault(value, len(categories))))
    counts = np.zeros((units, len(categories)))
    if cells:
        np.add.at(counts, tuple(np.array(cells).T), 1.0)
    return counts[counts.sum(axis=1) >= 2]  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def alpha_of(counts: np.ndarray) -> float:
    """Nominal alpha from a units × categories count matrix (units with >= 2 values)."""
    m = counts.sum(axis=1)
    n_c = counts.sum(axis=0)
    n = float(n_c.sum())
    expected = n * n - float(n_c @ n_c)
    if n < 2 or expected == 0:
        return float("nan")  # one category only: agreement is not measurable
    observed = float(np.sum((m * m - (counts * counts).sum(axis=1)) / (m - 1)))
    return 1.0 - (n - 1.0) * observed / expected


def krippendorff_alpha(
    ratings: Sequence[Sequence[Hashable | None]],
    rng: np.random.Generator | None = None,
    *,
    rounds: int = 1000,
    confidence: float = 0.95,
) -> Alpha:
    """Nominal Krippendorff's alpha of raters (rows) over units (columns), with a bootstrap
    interval over units when `rng` is given."""
    counts = value_counts(ratings)
    point = alpha_of(counts)
    low = high = float("nan")
    missing = None
    if rng is not None and len(counts):
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        picks = rng.integers(0, len(counts), (rounds, len(counts)))
        low, high, missing = _percentiles(point, np.array([alpha_of(counts[p]) for p in picks]), confidence)
    return Alpha(point, low, high, len(counts), int(counts.sum()), missing)


def unit_types(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a units × categories count matrix and how many units have each.

    Alpha depends on the units only through these: a judge and a reference with one value each
    on two or three categories give at most a handful of types, however many pairs they share.
    """
    if not len(counts):
        return np.zeros((0, counts.shape[1] if counts.ndim == 2 else 0)), np.zeros(0, dtype=np.int64)
    types, frequencies = np.unique(counts, axis=0, return_counts=True)
    return types.astype(float), frequencies.astype(np.int64)


def alpha_of_types(
    types: np.ndarray,
    frequencies: np.ndarray,
    rng: np.random.Generator | None = None,
    *,
    rounds: int = 1000,
    confidence: float = 0.95,
    mirror: Sequence[int] | None = None,
) -> Alpha:
    """`krippendorff_alpha` from `unit_types`: the same point estimate, and the same bootstrap
    over units (resampling n units with replacement draws the count of each type from a
    multinomial over the types' shares), at a cost in types rather than units, so a running
    tally can afford it on every refresh. Not the same random draws as `krippendorff_alpha`.

    `mirror`, a permutation of the categories: each unit counts twice, as is and with its
    categories permuted (resampled together), for units whose orientation is arbitrary, such as
    a pair's "first side wins" and "second side wins": alpha then does not depend on it.
    """
    types = np.asarray(types, dtype=float)
    frequencies = np.asarray(frequencies, dtype=np.int64)
    units = int(frequencies.sum())
    values = int(frequencies @ types.sum(axis=1)) if units else 0
    if not units:
        return Alpha(float("nan"), float("nan"), float("nan"), 0, 0)
    m = types.sum(axis=1)
    disagreement = (m * m - (types * types).sum(axis=1)) / (m - 1)  # each type's observed term
    if mirror is not None:
        types, disagreement = types + types[:, list(mirror)], 2.0 * disagreement

    def alphas(weights: np.ndarray) -> np.ndarray:
        n_c = weights @ types
        n = n_c.sum(axis=-1)
        expected = n * n - (n_c * n_c).sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            found = 1.0 - (n - 1.0) * (weights @ disagreement) / expected
        return np.where((n >= 2) & (expected > 0), found, np.nan)

    point = float(alphas(frequencies.astype(float)))
    low = high = float("nan")
    missing = None
    if rng is not None:
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        samples = alphas(rng.multinomial(units, frequencies / units, size=rounds).astype(float))
        low, high, missing = _percentiles(point, samples, confidence)
    return Alpha(point, low, high, units, values, missing)
