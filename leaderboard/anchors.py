"""Anchored mode: new entrants meet anchor players whose ratings are held fixed.

A plain Bradley-Terry fit is defined only up to a shift (joust pins the field's mean at 1000),
so a night that adds three strong entrants lowers everybody else's number, though nobody else
was re-judged. Holding a set of anchor players at fixed ratings and fitting only the others
against them pins the scale instead: 1150 tonight means what 1150 meant last night, and boards
stay comparable night to night. `plan_anchored` gives every entrant a few anchors to meet;
`anchored_ratings` (and `anchored_intervals`) fit the entrants with the anchors held fixed.

Exceptions: `ConvergenceError` (from `leaderboard.fit`) when the entrants' fit has no finite
maximum (ridge=0 and an entrant that never lost, or one with no path to an anchor) or does not
converge; ValueError for bad arguments.
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from statistics import NormalDist

import numpy as np

from .battles import pair_counts
from .fit import DEFAULT_RIDGE, ConvergenceError, elo_scale, strongly_connected
from .newton import minimize, spd_solve
from .players import player_of
from .ratings import Battles
from .types import Level, Pair, Submission

Option = tuple[str, int, int]
"""(question id, entrant's submission, anchor's submission)."""


# ---------------------------------------------------------------- planning


def anchor_options(
    submissions: Sequence[Submission], anchors: Collection[str], level: Level | str
) -> dict[str, dict[str, list[Option]]]:
    """entrant → anchor → every pair of their submissions on a shared question, sorted."""
    level = Level(level)
    by_question: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for s in sorted(submissions, key=lambda s: s.id):
        by_question[s.question_id].append((s.id, player_of(s.model, s.scenario, level)))
    options: dict[str, dict[str, list[Option]]] = defaultdict(lambda: defaultdict(list))
    for question in sorted(by_question):
        members = by_question[question]
        for own, entrant in members:
            if entrant in anchors:
                continue
            mine = options[entrant]  # made even when no anchor shares the question: it shows up
            for other, anchor in members:
                if anchor in anchors:
                    mine[anchor].append((question, own, other))
    return {e: {a: options[e][a] for a in sorted(options[e])} for e in sorted(options)}


def plan_anchored(
    submissions: Sequence[Submission],
    anchors: Sequence[str],
    level: Level | str,
    *,
    per_entrant: int = 3,
    per_anchor: int = 1,
    judged: Collection[tuple[int, int]],
    rng: random.Random,
) -> list[Pair]:
    """Pairs (a < b) that make every entrant meet at least `per_entrant` distinct anchors.

    An entrant is a player at `level` not in `anchors`. It "meets" an anchor with `per_anchor`
    verdicts on shared questions; verdicts already judged or planned (`judged`) count and are
    never paid for again. Anchors it has partly met come first, then the anchors least used in
    this plan (spreading the load), ties broken by `rng`; questions the entrant has used least
    come first. An entrant that shares questions with fewer anchors meets all it can.
    """
    if per_entrant < 0 or per_anchor < 1:
        raise ValueError(f"need per_entrant >= 0 and per_anchor >= 1, got {per_entrant}, {per_anchor}")
    seen = {(min(a, b), max(a, b)) for a, b in judged}

    def cached(option: Option) -> bool:
        return (min(option[1], option[2]), max(option[1], option[2])) in seen

    load: Counter[str] = Counter()
    plan: list[Pair] = []
    for by_anchor in anchor_options(submissions, set(anchors), level).values():
        done = {a: sum(map(cached, opts)) for a, opts in by_anchor.items()}
        fresh = {a: [o for o in opts if not cached(o)] for a, opts in by_anchor.items()}
        questions = Counter(o[0] for opts in by_anchor.values() for o in opts if cached(o))
        met = sum(count >= per_anchor for count in done.values())
        candidates = [a for a in by_anchor if done[a] < per_anchor and fresh[a]]
        rng.shuffle(candidates)
        candidates.sort(key=lambda a: (-done[a], load[a]))  # stable: rng order among equals
        for anchor in candidates[: max(0, per_entrant - met)]:
            load[anchor] += 1
            pool = fresh[anchor]
            rng.shuffle(pool)
            for _ in range(min(per_anchor - done[anchor], len(pool))):
                question, own, other = min(pool, key=lambda o: questions[o[0]])
                pool.remove((question, own, other))
                questions[question] += 1
                plan.append(Pair(a=min(own, other), b=max(own, other)))
    return plan


# ---------------------------------------------------------------- rating


def pinned(points: np.ndarray, fixed: np.ndarray) -> bool:
    """Whether the free players have a finite maximum with no ridge.

    With the anchors merged into one node of known strength, every free player must both beat
    and lose to the rest along some chain: the merged win graph is strongly connected (Ford's
    condition, relative to the anchors).
    """
    free = np.flatnonzero(~fixed)
    merge = np.zeros((len(free) + 1, len(points)))
    merge[0, fixed] = 1.0
    merge[np.arange(1, len(free) + 1), free] = 1.0
    beat = (merge @ points @ merge.T) > 0
    np.fill_diagonal(beat, False)
    return strongly_connected(beat)


def fit_free(
    points: np.ndarray, fixed: np.ndarray, theta: np.ndarray, ridge: float, tol: float, max_iter: int
) -> tuple[np.ndarray, np.ndarray]:
    """(θ, H): log-strengths with θ[fixed] held, the rest by damped Newton, and the free block's
    penalised Hessian at the optimum (its inverse is their covariance).

    The ridge pulls each free player toward the anchors' mean log-strength, so an entrant with
    little evidence lands among the anchors rather than at an arbitrary zero.
    """
    free = ~fixed
    centre = float(theta[fixed].mean())
    games, won = points + points.T, points.sum(axis=1)
    theta = theta.copy()

    def objective(values: np.ndarray) -> float:  # anchor-vs-anchor terms are a constant here
        trial = theta.copy()
        trial[free] = values
        nll = np.sum(points * np.logaddexp(0.0, trial[None, :] - trial[:, None]))
        return float(nll) + 0.5 * ridge * float(np.sum((values - centre) ** 2))

    def derivatives(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        trial = theta.copy()
        trial[free] = values
        prob = 0.5 * (1.0 + np.tanh(0.5 * (trial[:, None] - trial[None, :])))
        info = games * prob * prob.T
        grad = ((games * prob).sum(axis=1) - won)[free] + ridge * (values - centre)
        hess = np.diag(info.sum(axis=1)[free]) - info[np.ix_(free, free)] + ridge * np.eye(int(free.sum()))
        return grad, hess

    theta[free] = minimize(objective, derivatives, theta[free], tol=tol, max_iter=max_iter, what="anchored Bradley-Terry")
    return theta, derivatives(theta[free])[1]


def anchored_fit(
    battles: Battles, anchors: Mapping[str, float], *, ridge: float, base: float, scale: float, tol: float, max_iter: int
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(players, ratings on the Elo scale, fixed mask, covariance of the free players in nats²)."""
    if not anchors:
        raise ValueError("anchored ratings need at least one anchor; use bradley_terry for a free board")
    if ridge < 0:
        raise ValueError(f"ridge must be >= 0, got {ridge}")
    counts = pair_counts(battles)
    players = sorted(set(counts.players) | set(anchors))
    index = [players.index(p) for p in counts.players]
    points = np.zeros((len(players), len(players)))
    points[np.ix_(index, index)] = counts.points
    unit = elo_scale(base, scale)
    fixed = np.array([p in anchors for p in players])
    theta = np.array([anchors[p] / unit if p in anchors else 0.0 for p in players])
    theta[~fixed] = theta[fixed].mean()
    if fixed.all():
        return players, theta * unit, fixed, np.zeros((0, 0))
    if ridge == 0 and not pinned(points, fixed):
        raise ConvergenceError(
            "no finite anchored Bradley-Terry maximum with ridge=0: some entrants never lost (or "
            "never won) against the rest, or have no path to an anchor; use ridge > 0"
        )
    theta, hess = fit_free(points, fixed, theta, ridge, tol, max_iter)
    rating = theta * unit
    rating[fixed] = [anchors[p] for p, f in zip(players, fixed) if f]  # exactly as given
    return players, rating, fixed, spd_solve(hess, np.eye(len(hess)))


def anchored_ratings(
    battles: Battles,
    anchors: Mapping[str, float],
    *,
    ridge: float = DEFAULT_RIDGE,
    base: float = 10.0,
    scale: float = 400.0,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> dict[str, float]:
    """Bradley-Terry ratings (Elo scale) with the anchors' ratings held fixed, by player.

    Only the other players are fitted, by maximum likelihood given the anchors' fixed
    log-strengths (anchor-against-anchor battles carry no information about them), so the
    anchors come back exactly as given and nobody is re-centred. Every anchor and every player
    of `battles` is in the result. ridge=0 is the plain conditional MLE.
    """
    players, rating, _, _ = anchored_fit(
        battles, anchors, ridge=ridge, base=base, scale=scale, tol=tol, max_iter=max_iter
    )
    return dict(zip(players, rating.tolist()))


def anchored_intervals(
    battles: Battles,
    anchors: Mapping[str, float],
    *,
    ridge: float = DEFAULT_RIDGE,
    confidence: float = 0.95,
    base: float = 10.0,
    scale: float = 400.0,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> dict[str, tuple[float, float, float]]:
    """(rating, low, high) per player: `anchored_ratings` with closed-form (Fisher) intervals.

    An anchor's interval has zero width (it is a given); an entrant's is relative to the
    anchors, not to the field's mean as on a free board.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    players, rating, fixed, cov = anchored_fit(
        battles, anchors, ridge=ridge, base=base, scale=scale, tol=tol, max_iter=max_iter
    )
    half = np.zeros(len(players))
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    half[~fixed] = z * elo_scale(base, scale) * np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return {p: (float(r), float(r - h), float(r + h)) for p, r, h in zip(players, rating, half)}
