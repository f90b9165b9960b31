"""The `length_unexplained` flag: a player winning far more than its length predicts
(`length_excess`), confirmed by another judge that does not see it win that much
(`disagreement`, against a `leaderboard.flags.SecondOpinion`). `leaderboard.flags`' docstring defines it and its thresholds.

Apart from the three text flags of `leaderboard.flags` because it reads no output text: it
works on a board's pair counts and the players' mean output lengths (a binned leave-one-out
logistic fit, then a second judge's rates against the same opponents).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .battles import PairCounts
from .flags import Flag, FlagKind, SecondOpinion
from .judges import HUMANS

LENGTH_MARGIN = 0.25
LENGTH_Z = 4.0
SECOND_MIN = 20  # the other judge's decided verdicts on the player against the shared opponents, at least
LENGTH_RIDGE = 0.1  # on the length coefficient: a field of two players does not make it infinite
BINS = 101  # bins of the normalised length difference over [-1, 1]


@dataclass(frozen=True)
class LengthExcess:
    """A player's score beyond what its length predicts on one board: `games` judgements,
    `actual` and `expected` points in them, `z` standard errors apart; `length`: its mean
    output length in characters."""

    player: str
    games: int
    actual: float
    expected: float
    z: float
    length: float


@dataclass(frozen=True)
class Disagreement:
    """A player's wins among the board's judge's decided verdicts (`games`, ties left out)
    against the opponents `judge` also saw it play (`seen` decided verdicts there), and the wins
    that judge's rates against them predict."""

    judge: str
    games: int
    seen: int
    actual: float
    expected: float
    z: float

    @property
    def excess(self) -> float:
        """Wins beyond the other judge's prediction, per decided verdict."""
        return (self.actual - self.expected) / self.games

    @property
    def significant(self) -> bool:
        """Whether the other judge, on enough decided verdicts (`SECOND_MIN`), sees the player
        win far less (`LENGTH_MARGIN`, `LENGTH_Z`): enough to flag it."""
        return self.seen >= SECOND_MIN and self.excess >= LENGTH_MARGIN and self.z > LENGTH_Z


def length_flags(counts: PairCounts, lengths: Mapping[str, float],
                 others: Sequence[SecondOpinion] = ()) -> dict[str, Flag]:
    """`length_unexplained` per player of `counts` whose wins its length does not explain
    (`length_excess`) AND one of the other judges in `others` sees it win far less against the
    same opponents (`disagreement`): see `leaderboard.flags`' docstring. Without `others`, nobody
    is flagged."""
    flags: dict[str, Flag] = {}
    if not others:
        return flags
    aligned: dict[str, np.ndarray] = {}
    for test in length_excess(counts, lengths).values():
        found = []
        for other in others:
            if other.judge not in aligned:
                aligned[other.judge] = _align(counts.players, other.counts.players)
            said = disagreement(counts, test.player, other, aligned[other.judge])
            if said is not None and said.significant:
                found.append(said)
        if found:
            said = max(found, key=lambda d: (d.z, d.judge))
            who = "human votes give" if said.judge == HUMANS else f"judge {said.judge} gives"
            flags[test.player] = Flag(
                FlagKind.LENGTH_UNEXPLAINED,
                f"wins {test.actual / test.games:.0%} of {test.games} judgements where its length predicts "
                f"{test.expected / test.games:.0%} (z = {test.z:.1f}; mean length {test.length:,.0f} characters); "
                f"against the same opponents {who} it {said.expected / said.games:.0%} of the decided verdicts where "
                f"this judge gives it {said.actual / said.games:.0%} (z = {said.z:.1f}; {said.games} decided here, "
                f"{said.seen} there)")
    return flags


def length_excess(counts: PairCounts, lengths: Mapping[str, float]) -> dict[str, LengthExcess]:
    """The players of `counts` who win far more than their length predicts (`LENGTH_MARGIN` and
    `LENGTH_Z`; players without a mean length in `lengths`, such as an import's, take no part).
    One judge's verdicts: a much stronger player is among them too."""
    known = [i for i, p in enumerate(counts.players) if p in lengths]
    if len(known) < 3:
        return {}
    games, score = counts.games.astype(float), counts.wins + 0.5 * counts.ties  # score: i's points against j
    players = counts.players
    if len(known) < len(players):  # (every player has outputs, usually: no copy of the matrices then)
        block = np.ix_(known, known)  # not `cells`: that name holds an array below
        games, score, players = games[block], score[block], [players[i] for i in known]
    length = np.array([lengths[p] for p in players], dtype=float)
    x = (length[:, None] - length[None, :]) / (length[:, None] + length[None, :] + 1.0)
    bins = np.rint((x + 1.0) / 2.0 * (BINS - 1)).astype(np.intp)  # x = -1 .. 1 onto 0 .. BINS-1
    centre = np.linspace(-1.0, 1.0, BINS)
    n = len(players)
    # per player and bin: the games and points of its ordered pairs (as i and as j), and all of them
    # (bincount over flat (player, bin) cells: `np.add.at` took 17 ms of the 400-player board)
    as_i = (np.arange(n)[:, None] * BINS + bins).ravel()
    as_j = (np.arange(n)[None, :] * BINS + bins).ravel()
    cells = np.concatenate([as_i, as_j])
    own_games = np.bincount(cells, np.tile(games.ravel(), 2), n * BINS).reshape(n, BINS)
    own_points = np.bincount(cells, np.tile(score.ravel(), 2), n * BINS).reshape(n, BINS)
    all_games = np.bincount(bins.ravel(), games.ravel(), BINS)
    all_points = np.bincount(bins.ravel(), score.ravel(), BINS)
    fit_games = all_games[None, :] - own_games  # every ordered pair without player p
    fit_points = all_points[None, :] - own_points
    beta = _fit(centre, np.maximum(fit_games, 0.0), fit_points)  # one coefficient per left-out player
    p = 0.5 * (1.0 + np.tanh(0.5 * beta[:, None] * x))  # player i's predicted score against j
    expected = (games * p).sum(axis=1)
    variance = (games * p * (1.0 - p)).sum(axis=1)
    actual = score.sum(axis=1)
    played = games.sum(axis=1)
    found: dict[str, LengthExcess] = {}
    for i, player in enumerate(players):
        if played[i] <= 0 or variance[i] <= 0:
            continue
        excess = (actual[i] - expected[i]) / played[i]
        z = (actual[i] - expected[i]) / np.sqrt(variance[i])
        if excess >= LENGTH_MARGIN and z > LENGTH_Z:
            found[player] = LengthExcess(player, int(played[i]), float(actual[i]), float(expected[i]), float(z),
                                         float(length[i]))
    return found


def disagreement(counts: PairCounts, player: str, other: SecondOpinion,
                 aligned: np.ndarray | None = None) -> Disagreement | None:
    """How often `player` wins the decided verdicts (ties left out) of `counts`' judge against
    the opponents `other` also saw it play, beside what `other`'s decided verdicts against each
    of them predict (`leaderboard.flags`' docstring); None when they share no decided opponent.
    `aligned`: `_align(counts.players, other.counts.players)`, when already made."""
    there = _align(counts.players, other.counts.players) if aligned is None else aligned
    i = counts.players.index(player)
    j = int(there[i])
    if j < 0:
        return None
    met = there >= 0
    opponents = there[met]
    won_here = counts.wins[i][met].astype(float)
    decided_here = won_here + counts.wins[:, i][met]
    won_there = other.counts.wins[j][opponents].astype(float)
    decided_there = won_there + other.counts.wins[:, j][opponents]
    shared = (decided_here > 0) & (decided_there > 0)
    if not shared.any():
        return None
    n, m = decided_here[shared], decided_there[shared]
    rate = won_there[shared] / m
    smooth = (won_there[shared] + 0.5) / (m + 1.0)  # a rate of 0 or 1 from few verdicts is not certainty
    expected = float((n * rate).sum())
    actual = float(won_here[shared].sum())
    variance = float((n * smooth * (1.0 - smooth) * (1.0 + n / m)).sum())
    z = (actual - expected) / np.sqrt(variance)
    return Disagreement(other.judge, int(n.sum()), int(m.sum()), actual, expected, float(z))


def _align(players: Sequence[str], others: Sequence[str]) -> np.ndarray:
    """For each of `players`, its index among `others` (-1 where absent)."""
    where = {p: k for k, p in enumerate(others)}
    return np.array([where.get(p, -1) for p in players], dtype=np.intp)


def _fit(x: np.ndarray, games: np.ndarray, points: np.ndarray, iterations: int = 50) -> np.ndarray:
    """Per row: the coefficient β of logit P = β·x maximising the binned likelihood (ridge
    `LENGTH_RIDGE`), by Newton's method, every row at once (the objective is concave)."""
    beta = np.zeros(games.shape[0])
    for _ in range(iterations):
        p = 0.5 * (1.0 + np.tanh(0.5 * beta[:, None] * x[None, :]))
        grad = ((points - games * p) * x).sum(axis=1) - LENGTH_RIDGE * beta
        hess = (games * p * (1.0 - p) * x * x).sum(axis=1) + LENGTH_RIDGE
        step = grad / hess
        beta = beta + step
        if np.max(np.abs(step)) < 1e-9:
            break
    return beta
