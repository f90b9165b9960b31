"""Adaptive rounds: the next pairs to judge, where a verdict would most settle the ranking.

Round robin grows with the square of the entrants and spends most of its calls on pairs whose
order nobody doubts. An adaptive tournament runs in rounds: fit Bradley-Terry on what has been
judged, `plan_round` picks the pairs whose verdicts would most shrink the uncertainty of the
order, the caller judges them, and `stop_reason` says when the board is settled.

How a round is picked (natural-log strengths, the fit's Fisher covariance C):
- judging i against j adds information w = p(1-p) along u = e_i - e_j, which shrinks the variance
  of every rating difference d_kl by w·(u_klᵀCu)² / (1 + w·uᵀCu) (a rank-one update);
- a difference counts by how much removing its variance lowers the expected number of pairs the
  final board puts in the wrong order (`precision_value`): neighbours whose intervals overlap
  count most, well-separated pairs barely, and players with few matches (large σ, so a verdict
  removes a lot of variance) gain most;
- the round is greedy: after each pick C is updated as if that pair had been judged, so the
  round spreads over the board instead of piling onto one pair.
Connectivity comes first: while the battle graph has several components among the players that
can still be paired, only pairs joining two components are picked. A player with no battles is
a component of its own, so newcomers are paired before anyone else.

Stop reasons, the vocabulary of a finished adaptive tournament (`StopReason`): "separated" (no
two adjacent players' intervals overlap: the default target), "ci_width" (every interval is at
most the target width), "max_calls" and "budget" (the caller's call and money limits),
"exhausted" (no uncached pair is left: `plan_round` returned []).
"""
from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from enum import Enum
from typing import cast

import numpy as np

from .battles import PairCounts, pair_counts
from .fit import DEFAULT_RIDGE, covariance, fit_log_strengths
from .players import player_of
from .ranks import rank_intervals
from .ratings import Battles, bradley_terry_intervals
from .types import Level, Pair, Submission

Option = tuple[str, int, int]
"""(question id, a, b): one concrete, uncached pair of submissions, a < b."""
Key = tuple[str, str]
"""Two players in name order."""


SHORTLIST = 64
"""A pick weighs in full the SHORTLIST + 4·players candidates best by their own difference."""


class StopReason(str, Enum):
    """Why an adaptive tournament stopped (stored as its plain string)."""

    SEPARATED = "separated"
    CI_WIDTH = "ci_width"
    MAX_CALLS = "max_calls"
    BUDGET = "budget"
    EXHAUSTED = "exhausted"


# ---------------------------------------------------------------- candidates


def ordered(a: int, b: int) -> tuple[int, int]:
    """A submission pair as the cache keys it: lower id first."""
    return (a, b) if a < b else (b, a)


def candidate_pairs(
    submissions: Iterable[Submission], level: Level | str, judged: Collection[tuple[int, int]]
) -> dict[Key, list[Option]]:
    """Every uncached submission pair on a shared question, grouped by the two players it pits.

    Pairs within one player at `level` say nothing about the ranking and are left out; lists
    are sorted, so the result does not depend on the input order.
    """
    level = Level(level)
    seen = {ordered(a, b) for a, b in judged}
    by_question: dict[str, dict[int, str]] = defaultdict(dict)
    for s in submissions:
        by_question[s.question_id][s.id] = player_of(s.model, s.scenario, level)
    options: dict[Key, list[Option]] = defaultdict(list)
    for question in sorted(by_question):
        members = sorted(by_question[question].items())
        for x, (a, pa) in enumerate(members):
            for b, pb in members[x + 1:]:
                if pa != pb and (a, b) not in seen:
                    options[(pa, pb) if pa < pb else (pb, pa)].append((question, a, b))
    return {key: options[key] for key in sorted(options)}


# ---------------------------------------------------------------- the fit


def padded(counts: PairCounts, players: list[str]) -> PairCounts:
    """The same counts over a larger player list (name order), players without battles at zero."""
    position = {p: x for x, p in enumerate(players)}
    index = [position[p] for p in counts.players]
    n = len(players)

    def grow(matrix: np.ndarray) -> np.ndarray:
        out = np.zeros((n, n), dtype=matrix.dtype)
        out[np.ix_(index, index)] = matrix
        return out

    return PairCounts(
        players, grow(counts.points), grow(counts.w2), grow(counts.w2s), grow(counts.w2ss),
        grow(counts.wins), grow(counts.ties),
    )


def posterior(counts: PairCounts, ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """(θ, C): log-strengths and their Fisher covariance, unrated players included.

    A player without battles sits at the mean with variance ≈ 1/ridge: the prior, maximal doubt.
    """
    theta = fit_log_strengths(counts.points, ridge=ridge)
    return theta, covariance(counts, theta, ridge=ridge)


def components(games: np.ndarray) -> np.ndarray:
    """A component label per player of the graph whose edges are pairs with games > 0."""
    n = len(games)
    label = np.full(n, -1)
    for root in range(n):
        if label[root] >= 0:
            continue
        label[root] = root
        frontier = [root]
        while frontier:
            node = frontier.pop()
            for other in np.flatnonzero((games[node] > 0) & (label < 0)):
                label[other] = root
                frontier.append(int(other))
    return label


# ---------------------------------------------------------------- information


def erf(x: np.ndarray) -> np.ndarray:
    """erf for x >= 0, vectorised (Abramowitz-Stegun 7.1.26, |error| < 1.5e-7): numpy has none."""
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return 1.0 - poly * np.exp(-x * x)  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def precision_value(delta: np.ndarray, var: np.ndarray) -> np.ndarray:
    """How much the expected number of misordered pairs drops per unit of variance removed.

    For a pair whose difference is believed N(Δ, V): the final board misorders it with
    probability E[Φ(-|g|/√V')] over the true gap g ~ N(Δ, V), V' the variance left when the
    tournament ends; this is -d/dV' of that at V' = V, in closed form:
    exp(-Δ²/4V)·E|N(Δ/2, V/2)| / (4√π·V^1.5). It peaks for overlapping pairs and fades
    slowly (pairs 2σ apart still count two thirds), unlike the current chance of misorder, which
    would pour everything into near-ties that no budget can settle.
    """
    v = np.maximum(var, 1e-12)
    gap = np.abs(delta)
    spread = np.exp(-gap * gap / (4.0 * v))
    mean_abs = np.sqrt(v / math.pi) * spread + 0.5 * gap * erf(gap / (2.0 * np.sqrt(v)))
    return spread * mean_abs / (4.0 * math.sqrt(math.pi) * v**1.5)  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def gains(theta: np.ndarray, cov: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Per candidate (i[e], j[e]): the expected drop in misordered pairs if it were judged once.

    First order: Σ over player pairs k < l of `precision_value`·(drop of Var(θk - θl)), so it
    counts what the verdict teaches about every difference, not only i - j (C couples them).
    With s = C·u_e that sum is w·sᵀLs / (1 + w·u_eᵀs), L the Laplacian of the pair weights:
    one n×n by n×candidates product, no (pairs × candidates) array.
    """
    delta = theta[:, None] - theta[None, :]
    var = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2.0 * cov
    weight = precision_value(delta, var)
    np.fill_diagonal(weight, 0.0)
    laplacian = np.diag(weight.sum(axis=1)) - weight
    p = 1.0 / (1.0 + np.exp(theta[j] - theta[i]))
    info = p * (1.0 - p)
    shift = cov[:, i] - cov[:, j]  # C u_e, one column per candidate
    columns = np.arange(i.size)
    var_e = shift[i, columns] - shift[j, columns]
    return info * np.einsum("ne,ne->e", shift, laplacian @ shift) / (1.0 + info * var_e)  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def own_gains(theta: np.ndarray, cov: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The part of `gains` from each candidate's own difference only: O(1) per candidate."""
    var_e = cov[i, i] + cov[j, j] - 2.0 * cov[i, j]
    p = 1.0 / (1.0 + np.exp(theta[j] - theta[i]))
    info = p * (1.0 - p)
    return precision_value(theta[i] - theta[j], var_e) * info * var_e**2 / (1.0 + info * var_e)  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def shortlist(scores: np.ndarray, size: int, rng: random.Random) -> np.ndarray:
    """Indices of the `size` highest finite scores, ties in an `rng` order (all if fewer)."""
    finite = np.flatnonzero(np.isfinite(scores))
    if finite.size <= size:
        return finite
    shuffled = finite[np.array(rng.sample(range(finite.size), finite.size))]
    return np.sort(shuffled[np.argsort(-scores[shuffled], kind="stable")[:size]])


def judged_as_if(theta: np.ndarray, cov: np.ndarray, i: int, j: int) -> np.ndarray:
    """C after one more verdict between i and j (its expected information, rank-one update)."""
    p = 1.0 / (1.0 + math.exp(theta[j] - theta[i]))
    info = p * (1.0 - p)
    shift = cov[:, i] - cov[:, j]
    return cov - (info / (1.0 + info * (shift[i] - shift[j]))) * np.outer(shift, shift)  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def best(scores: np.ndarray, rng: random.Random) -> int:
    """Index of the highest score; exact ties (within float noise) broken by `rng`."""
    top = float(scores.max())
    ties = np.flatnonzero(scores >= top - 1e-9 * abs(top))
    return int(ties[rng.randrange(ties.size)]) if ties.size > 1 else int(ties[0])


def choose_player_pairs(
    counts: PairCounts, keys: list[Key], supply: list[int], budget: int, rng: random.Random, ridge: float
) -> list[int]:
    """Indices into `keys` (repeats allowed, at most supply[e] times each), best first.

    Pairs that join two components of the battle graph come first, the two smallest components
    first (so a fresh field gets a balanced spanning tree, not a star); then the greedy
    information rule. Each pick weighs in full only a shortlist (the best by `own_gains`), so a
    pick costs O(players³) however many pairs are left. Stops early when no pick is worth anything.
    """
    theta, cov = posterior(counts, ridge)
    index = {p: x for x, p in enumerate(counts.players)}
    i = np.array([index[a] for a, _ in keys])
    j = np.array([index[b] for _, b in keys])
    left = np.array(supply)
    label = components(counts.games)
    picks: list[int] = []
    while len(picks) < budget and (left > 0).any():
        cross = (left > 0) & (label[i] != label[j])
        allowed = left > 0
        if cross.any():  # join the two smallest components first: a balanced tree, not a star
            size = np.bincount(label, minlength=len(label))
            merged = np.where(cross, size[label[i]] + size[label[j]], np.iinfo(np.int64).max)
            allowed = merged == merged.min()
        short = shortlist(np.where(allowed, own_gains(theta, cov, i, j), -np.inf), SHORTLIST + 4 * len(theta), rng)
        scores = gains(theta, cov, i[short], j[short])
        e = int(short[best(scores, rng)])
        if not scores.max() > 0:
            break
        picks.append(e)
        left[e] -= 1
        cov = judged_as_if(theta, cov, int(i[e]), int(j[e]))
        label[label == label[j[e]]] = label[i[e]]
    return picks


# ---------------------------------------------------------------- from players to submissions


def concrete(
    picks: Sequence[Key],
    options: dict[Key, list[Option]],
    judged: Collection[tuple[int, int]],
    sides: dict[int, tuple[str, str]],
    rng: random.Random,
) -> list[Pair]:
    """One uncached submission pair per picked player pair, questions spread out.

    `sides`: submission id → (question id, player). Prefers, in order: a question this player
    pair has met least (judged or planned), a question least used in this round, submissions
    least used in this round; ties broken by `rng`. Spread matters because verdicts on one
    question share its quirks.
    """
    met: Counter[tuple[Key, str]] = Counter()
    for a, b in judged:
        if a in sides and b in sides and sides[a][1] != sides[b][1]:
            met[(cast(Key, tuple(sorted((sides[a][1], sides[b][1])))), sides[a][0])] += 1  # sorted() of a pair: still a pair
    pool: dict[Key, list[Option]] = {}
    per_question: Counter[str] = Counter()
    per_submission: Counter[int] = Counter()
    plan: list[Pair] = []
    for key in picks:
        if key not in pool:
            pool[key] = list(options[key])
            rng.shuffle(pool[key])
        question, a, b = min(
            pool[key],
            key=lambda o: (met[(key, o[0])], per_question[o[0]], per_submission[o[1]] + per_submission[o[2]]),
        )
        pool[key].remove((question, a, b))
        met[(key, question)] += 1
        per_question[question] += 1
        per_submission[a] += 1
        per_submission[b] += 1
        plan.append(Pair(a=a, b=b))
    return plan


# ---------------------------------------------------------------- the API


def plan_round(
    submissions: Sequence[Submission],
    battles: Battles,
    level: Level | str,
    *,
    budget: int,
    judged: Collection[tuple[int, int]],
    rng: random.Random,
    ridge: float = DEFAULT_RIDGE,
) -> list[Pair]:
    """At most `budget` new pairs (same question, a < b), the most informative first.

    `battles` are the verdicts so far at `level` (battles, a `BattleTable` or a `PairCounts`,
    e.g. a `Tally`'s counts); `judged` are submission pairs already judged or planned, never
    paid for again. [] when no uncached pair between two different players is left (or none
    would teach anything). Same inputs and seed, same plan, whatever the submissions' order.
    Cost: listing the uncached pairs, then one fit and O(players³) per pick (30 players: ~15 ms
    for 20 picks; 100 players: ~0.2 s for 50).
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    level = Level(level)
    options = candidate_pairs(submissions, level, judged)
    if budget == 0 or not options:
        return []
    counts = pair_counts(battles)
    players = sorted({p for key in options for p in key} | set(counts.players))
    keys = list(options)
    picks = choose_player_pairs(padded(counts, players), keys, [len(options[k]) for k in keys], budget, rng, ridge)
    sides = {s.id: (s.question_id, player_of(s.model, s.scenario, level)) for s in submissions}
    return concrete([keys[e] for e in picks], options, judged, sides, rng)


def stop_reason(
    battles: Battles,
    level: Level | str,
    *,
    target_ci_width: float | None = None,
    submissions: Iterable[Submission] = (),
    ridge: float = DEFAULT_RIDGE,
    confidence: float = 0.95,
) -> StopReason | None:
    """Whether the board at `level` has met its target: a `StopReason` (a str), or None to go on.

    Default target: "separated", no two players' `confidence` intervals overlap (touching
    counts as overlapping, as in `leaderboard.ranks`), so every rank is certain. With
    `target_ci_width` (Elo points), instead "ci_width": every interval (high - low) is at most
    that wide. A player of `submissions` (at `level`) without battles has no interval, so the
    target is not met; nor is it without any battle (a field with nothing to pair ends
    "exhausted" instead). Budget reasons ("max_calls", "budget", "exhausted") are the caller's.
    """
    level = Level(level)
    if target_ci_width is not None and not target_ci_width > 0:
        raise ValueError(f"target_ci_width must be > 0, got {target_ci_width}")
    fitted = bradley_terry_intervals(battles, ridge=ridge, confidence=confidence)
    if not fitted or {player_of(s.model, s.scenario, level) for s in submissions} - set(fitted):
        return None
    if target_ci_width is not None:
        wide = any(high - low > target_ci_width for _, low, high in fitted.values())
        return None if wide else StopReason.CI_WIDTH
    ranks = rank_intervals({p: (low, high) for p, (_, low, high) in fitted.items()})
    return StopReason.SEPARATED if all(lo == hi for lo, hi in ranks.values()) else None
