"""The seams harness's expected figures, recomputed plainly from the drawn verdicts: never by
calling joust's own maths (leaderboard/), so that a fault there cannot hide in both sides.

Conventions (read from leaderboard/fit.py, board.py, effects.py, health.py, and the README):
Bradley-Terry on the Elo scale (400/ln 10 points per natural-log unit), each connected group
fitted alone with its mean player at 1000, ties half a point each way, ridge 0.01 on the
natural-log strengths; 95% intervals from the inverse penalised Hessian on the centred
subspace; a group whose win graph is not strongly connected (someone won every game against
the rest) has no interval and ranks from chains of clean wins; online Elo in file order, K 32,
start 1000; effects are the additive model on the system pair counts per group of systems,
centred within models and within scenarios, unbounded where some change of the effects keeps
every verdict's winner at or above its loser (scipy's linear programming decides).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linprog

from tests.seams_stores import FLIP, TIE, A, B, StoreSpec, System, Verdict, output

RIDGE = 0.01
Z95 = 1.959963984540054
POINTS_PER_NAT = 400.0 / math.log(10.0)
K, START = 32.0, 1000.0
LEVELS = ("model", "scenario", "model+scenario")


def player(system: System, level: str) -> str:
    model, scenario = system
    return {"model": model, "scenario": scenario}.get(level, f"{model} + {scenario}")


def score(winner: str) -> float:
    """Side a's points."""
    return {A: 1.0, B: 0.0, TIE: 0.5}[winner]


# ---- which verdicts a board counts ---------------------------------------------------------------


def counted(spec: StoreSpec, judge: str, *, turn: int | None = None, majority: bool = False) -> list[Verdict]:
    """A board's verdicts in file order: one judge's (`human`: every voter), of one turn, and
    with `majority` one per pair (question and two systems, either order), the verdict more than
    half name, else a tie, placed where the pair's first verdict was and oriented as it."""
    mine = [v for v in spec.verdicts if (v.judge.startswith("human/") if judge == "human" else v.judge == judge)
            and (turn is None or v.turn == turn)]
    if not majority:
        return mine
    groups: dict[tuple[str, frozenset[System]], list[Verdict]] = {}
    for v in mine:
        groups.setdefault((v.question_id, frozenset((v.a, v.b))), []).append(v)
    kept = []
    for first, *rest in groups.values():
        said = [first.outcome] + [v.outcome if v.a == first.a else FLIP[v.outcome] for v in rest]
        top = max((A, B, TIE), key=said.count)
        winner = top if 2 * said.count(top) > len(said) else TIE
        kept.append((spec.verdicts.index(first), Verdict(first.judge, first.question, first.turn, first.a, first.b,
                                                         "one", winner)))
    return [v for _, v in sorted(kept, key=lambda item: item[0])]


# ---- boards --------------------------------------------------------------------------------------


@dataclass
class Row:
    player: str
    component: int
    bounded: bool
    rating: float
    ci_low: float | None
    ci_high: float | None
    rank: int
    rank_low: int
    rank_high: int
    elo: float
    wins: int
    losses: int
    ties: int
    matches: int
    win_rate: float


@dataclass
class Board:
    rows: list[Row]
    players: list[str] = field(default_factory=list)  # the board's order
    points: dict[tuple[str, str], float] = field(default_factory=dict)  # wins + ½ ties of p against q
    games: dict[tuple[str, str], int] = field(default_factory=dict)

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.player == name)


def battles(verdicts: list[Verdict], level: str) -> list[tuple[str, str, float]]:
    """(a, b, a's points) of the verdicts whose sides are different players at `level`."""
    found = []
    for v in verdicts:
        a, b = player(v.a, level), player(v.b, level)
        if a != b:
            found.append((a, b, score(v.outcome)))
    return found


def groups_of(names: list[str], linked: set[frozenset[str]]) -> list[list[str]]:
    """Connected groups by breadth-first search, largest first, then by their first name."""
    seen: set[str] = set()
    found = []
    for start in sorted(names):
        if start in seen:
            continue
        group, queue = [], [start]
        seen.add(start)
        while queue:
            here = queue.pop(0)
            group.append(here)
            for other in names:
                if other not in seen and frozenset((here, other)) in linked:
                    seen.add(other)
                    queue.append(other)
        found.append(sorted(group))
    return sorted(found, key=lambda g: (-len(g), g[0]))


def reach(names: list[str], took: set[tuple[str, str]]) -> dict[str, set[str]]:
    """Whom each player reaches along 'took points from' edges (itself included)."""
    found = {}
    for start in names:
        seen, stack = {start}, [start]
        while stack:
            here = stack.pop()
            for other in names:
                if other not in seen and (here, other) in took:
                    seen.add(other)
                    stack.append(other)
        found[start] = seen
    return found


def newton(points: np.ndarray, design: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Penalised Bradley-Terry by plain Newton: θ = design·β, ridge on β; returns (β, the
    penalised Hessian at β)."""
    beta = np.zeros(design.shape[1])
    games = points + points.T
    for _ in range(500):
        theta = design @ beta
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
        grad_units = (points * (1 - p)).sum(axis=1) - (points.T * (1 - p.T)).sum(axis=1)
        # d/dθ_i of Σ points_ij log p_ij: Σ_j points_ij (1 - p_ij) - Σ_j points_ji (1 - p_ji)
        hess_units = -(games * p * (1 - p))
        np.fill_diagonal(hess_units, 0.0)
        np.fill_diagonal(hess_units, -hess_units.sum(axis=1))
        grad = design.T @ grad_units - RIDGE * beta
        hess = design.T @ hess_units @ design + RIDGE * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        beta = beta + step
        if np.max(np.abs(step)) < 1e-12:
            break
    return beta, hess


def board(verdicts: list[Verdict], level: str) -> Board:
    """The board joust should serve for these verdicts at `level`."""
    played = battles(verdicts, level)
    names = sorted({p for a, b, _ in played for p in (a, b)})
    points: dict[tuple[str, str], float] = defaultdict(float)
    games: dict[tuple[str, str], int] = defaultdict(int)
    record = {p: [0, 0, 0] for p in names}
    elo = {p: START for p in names}
    for a, b, s in played:
        points[a, b] += s
        points[b, a] += 1 - s
        games[a, b] += 1
        games[b, a] += 1
        record[a][0 if s == 1 else 1 if s == 0 else 2] += 1
        record[b][1 if s == 1 else 0 if s == 0 else 2] += 1
        expected = 1 / (1 + 10 ** ((elo[b] - elo[a]) / 400))
        elo[a], elo[b] = elo[a] + K * (s - expected), elo[b] - K * (s - expected)
    linked = {frozenset(pair) for pair in games}
    rows: list[Row] = []
    order: list[str] = []
    for number, group in enumerate(groups_of(names, linked), start=1):
        n = len(group)
        matrix = np.array([[points.get((p, q), 0.0) for q in group] for p in group])
        beta, hess = newton(matrix, np.eye(n))
        rating = 1000 + POINTS_PER_NAT * beta
        took = {(p, q) for p in group for q in group if points.get((p, q), 0) > 0}
        reached = reach(group, took)
        bounded = all(len(reached[p]) == n for p in group)
        if bounded:
            centre = np.eye(n) - 1.0 / n
            half = Z95 * POINTS_PER_NAT * np.sqrt(np.diag(centre @ np.linalg.inv(hess) @ centre))
            low, high = rating - half, rating + half
            ranks = {p: (1 + sum(low[j] > high[i] for j in range(n)), n - sum(high[j] < low[i] for j in range(n)))
                     for i, p in enumerate(group)}
        else:
            above = {p: sum(p in reached[q] and q not in reached[p] for q in group) for p in group}
            below = {p: sum(q in reached[p] and p not in reached[q] for q in group) for p in group}
            ranks = {p: (1 + above[p], n - below[p]) for p in group}
        index = {p: i for i, p in enumerate(group)}
        ranked = sorted(group, key=lambda p: (0 if bounded else ranks[p][0], -round(rating[index[p]], 6), p))
        for position, p in enumerate(ranked, start=1):
            i = index[p]
            w, lost, t = record[p]
            rows.append(Row(p, number, bounded, float(rating[i]), float(low[i]) if bounded else None,
                            float(high[i]) if bounded else None, position, ranks[p][0], ranks[p][1], elo[p], w, lost,
                            t, w + lost + t, (w + t / 2) / (w + lost + t)))
        order += ranked
    return Board(rows, order, dict(points), dict(games))


# ---- effects -------------------------------------------------------------------------------------


@dataclass
class Effect:
    kind: str
    name: str
    component: int
    bounded: bool
    effect: float
    ci_low: float
    ci_high: float


def effects(verdicts: list[Verdict]) -> dict[tuple[str, str, int], Effect]:
    """Model and scenario effects per connected group of systems, keyed (kind, name, group)."""
    system_board = board(verdicts, "model+scenario")
    by_name = {player(v.a, "model+scenario"): v.a for v in verdicts} | {player(v.b, "model+scenario"): v.b
                                                                     for v in verdicts}
    found: dict[tuple[str, str, int], Effect] = {}
    for number in sorted({r.component for r in system_board.rows}):
        names = sorted(r.player for r in system_board.rows if r.component == number)
        systems = [by_name[n] for n in names]
        models, scenarios = sorted({m for m, _ in systems}), sorted({s for _, s in systems})
        columns = [("model", m) for m in models] + [("scenario", s) for s in scenarios]
        design = np.array([[1.0 if (kind == "model" and m == name) or (kind == "scenario" and s == name) else 0.0
                            for kind, name in columns] for m, s in systems])
        matrix = np.array([[system_board.points.get((p, q), 0.0) for q in names] for p in names])
        beta, hess = newton(matrix, design)
        kinds = np.array([0] * len(models) + [1] * len(scenarios))
        centre = np.eye(len(columns)) - (kinds[:, None] == kinds[None, :]) / np.bincount(kinds)[kinds][:, None]
        half = Z95 * POINTS_PER_NAT * np.sqrt(np.diag(centre @ np.linalg.inv(hess) @ centre.T))
        took = [(i, j) for i in range(len(names)) for j in range(len(names)) if matrix[i, j] > 0]
        for c, (kind, name) in enumerate(columns):
            if (kind == "model" and len(models) < 2) or (kind == "scenario" and len(scenarios) < 2):
                continue
            value = POINTS_PER_NAT * beta[c]
            ok = not _moves(design, took, centre[c])
            found[kind, name, number] = Effect(kind, name, number, ok, value, value - half[c], value + half[c])
    return found


def _moves(design: np.ndarray, took: list[tuple[int, int]], contrast: np.ndarray) -> bool:
    """Whether some change d of the effects keeps every verdict's winner at or above its loser
    ((x_i - x_j)·d >= 0 wherever i took points from j) while moving the centred effect
    (contrast·d != 0): then the verdicts do not bound it."""
    rows = [-(design[i] - design[j]) for i, j in took] or [np.zeros(design.shape[1])]
    for sign in (1.0, -1.0):
        found = linprog(-sign * contrast, A_ub=np.array(rows), b_ub=np.zeros(len(rows)),
                        bounds=[(-1, 1)] * design.shape[1], method="highs")
        if found.status == 0 and -found.fun > 1e-7:
            return True
    return False


# ---- judge health --------------------------------------------------------------------------------


def health(spec: StoreSpec, *, turn: int | None = None) -> dict[str, dict[str, float | int | None]]:
    """Each judge's figures by counting (leaderboard/judge_health.py's rules, as the README states them)."""
    inconsistent_judges = {v.judge for v in spec.verdicts if not v.consistent}
    mine = [v for v in spec.verdicts if turn is None or v.turn == turn]
    votes = [v for v in mine if v.judge.startswith("human/")]
    found = {}
    for judge in sorted({v.judge for v in mine}):
        c = defaultdict(int)
        for v in (v for v in mine if v.judge == judge):
            c["judgements"] += 1
            if v.kind == "two":
                calls = [(A, v.r1, v.r1), (B, FLIP[v.r2], v.r2)]  # (side first, positional, relative to a)
                c["both"] += 1
                c["agreed"] += v.r1 == v.r2
            elif v.kind == "inconsistent":
                calls = [(None, TIE, TIE)]
                c["both"] += 1
            else:
                first = {"one": None, "one_a": A, "one_b": B}[v.kind]
                calls = [(first, v.r1 if first != B else FLIP[v.r1], v.r1)]
                if first is None and judge in inconsistent_judges:  # filed with order `both`
                    c["both"] += 1
                    c["agreed"] += 1
            longer = _longer(v)
            for first, positional, relative in calls:
                c["calls"] += 1
                c["ties"] += positional == TIE
                if positional != TIE and first is not None:
                    c["positioned"] += 1
                    c["first_won"] += positional == A
                if longer is not None and relative != TIE and (first is not None or len(calls) == 1):
                    c["sized"] += 1
                    c["longer_won"] += relative == longer
        row: dict[str, float | int | None] = {
            "judgements": c["judgements"], "calls": c["calls"], "consistency": _share(c["agreed"], c["both"]),
            "first_position_win_rate": _share(c["first_won"], c["positioned"]),
            "tie_rate": _share(c["ties"], c["calls"]),
            "longer_wins_rate": _share(c["longer_won"], c["sized"]), "parse_failure_rate": None,
        }
        if judge.startswith("human/"):
            row.update(human_agreement=None, human_votes=0, human_pairs=0, human_alpha=None, human_alpha_pairs=0)
        else:
            agree = pairs = compared = decided = decided_agree = 0
            for pair in {(v.question_id, frozenset((v.a, v.b))) for v in mine if v.judge == judge}:
                said = [v for v in mine if v.judge == judge and (v.question_id, frozenset((v.a, v.b))) == pair]
                heard = [h for h in votes if (h.question_id, frozenset((h.a, h.b))) == pair]
                pairs += bool(heard)
                for v in said:
                    for h in heard:
                        theirs = h.outcome if h.a == v.a else FLIP[h.outcome]
                        compared += 1
                        agree += theirs == v.outcome
                        if TIE not in (theirs, v.outcome):
                            decided += 1
                            decided_agree += theirs == v.outcome
            units = [[oriented(v) for v in mine if v.judge == judge and unit(v) == pair]
                     + [oriented(h) for h in votes if unit(h) == pair]
                     for pair in {unit(v) for v in mine if v.judge == judge} & {unit(h) for h in votes}]
            row.update(human_agreement=_share(agree, compared), human_votes=compared, human_pairs=pairs,
                       human_agreement_decided=_share(decided_agree, decided), human_decided_votes=decided,
                       human_alpha=alpha(units), human_alpha_pairs=len(units))
        found[judge] = row
    return found


def unit(v: Verdict) -> tuple[str, frozenset[System]]:
    """The pair a verdict is on: its question and its two systems, in either order."""
    return v.question_id, frozenset((v.a, v.b))


def oriented(v: Verdict) -> str:
    """A verdict relative to the pair's first system by name (either orientation would do: alpha counts both)."""
    return v.outcome if v.a < v.b else FLIP[v.outcome]


def alpha(units: list[list[str]]) -> float | None:
    """Krippendorff's alpha, nominal, of these units (each its values, A, B or TIE), each unit
    counted twice, as is and with A and B swapped (a pair has no first side); None when
    there is no disagreement to expect (one value throughout, or fewer than two values)."""
    values = (A, B, TIE)
    o = {(c, k): 0.0 for c in values for k in values}  # the coincidence matrix
    for said in units + [[FLIP[x] for x in u] for u in units]:
        m = len(said)
        if m < 2:
            continue
        for c in values:
            for k in values:
                o[c, k] += said.count(c) * (said.count(k) - (c == k)) / (m - 1)
    n_c = {c: sum(o[c, k] for k in values) for c in values}
    n = sum(n_c.values())
    expected = sum(n_c[c] * n_c[k] for c in values for k in values if c != k)
    if n < 2 or expected == 0:
        return None
    return 1.0 - (n - 1) * sum(o[c, k] for c in values for k in values if c != k) / expected


def judge_agreement(spec: StoreSpec, *, turn: int | None = None) -> dict[tuple[str, str], dict[str, object]]:
    """Alpha and agreement between every two LLM judges (by name) over the pairs both judged:
    alpha over every verdict of either on each pair; `agreement` (`_decided`) over the pairs
    where each gave one verdict (and both named a winner), a tie agreeing only with a tie."""
    mine = [v for v in spec.verdicts if not v.judge.startswith("human/") and (turn is None or v.turn == turn)]
    judges = sorted({v.judge for v in mine})
    found = {}
    for i, j in ((i, j) for i in judges for j in judges if i < j):
        shared = sorted({unit(v) for v in mine if v.judge == i} & {unit(v) for v in mine if v.judge == j},
                        key=lambda p: (p[0], sorted(p[1])))
        if not shared:
            continue
        said = {(who, p): [oriented(v) for v in mine if v.judge == who and unit(v) == p]
                for who in (i, j) for p in shared}
        single = [p for p in shared if len(said[i, p]) == 1 and len(said[j, p]) == 1]
        decided = [p for p in single if TIE not in (said[i, p][0], said[j, p][0])]
        found[i, j] = {"alpha": alpha([said[i, p] + said[j, p] for p in shared]), "pairs": len(shared),
                       "agreement": _share(sum(said[i, p] == said[j, p] for p in single), len(single)),
                       "agreement_decided": _share(sum(said[i, p] == said[j, p] for p in decided), len(decided))}
    return found


def _longer(v: Verdict) -> str | None:
    a, b = len(output(v.a, v.question_id)), len(output(v.b, v.question_id))
    return None if a == b else A if a > b else B


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None
