"""Comparisons needed for a trustworthy ranking: adaptive pairing against the plain plans.

Not a test: run `python bench/pairing.py [--seeds 100] [--jobs N]` (seeds run in parallel
processes; about 4 minutes on 2 cores).

The world, per seed: `--players` players (30) whose true ratings are drawn from a normal
distribution, mean 1000, sd `--spread` (200 Elo points), one submission per player on each of
`--questions` questions (50), so 50·C(30, 2) = 21750 distinct judgeable pairs. Why not fewer:
with 10 questions (4350 pairs) some worlds run out of pairs before tau 0.9, and the cap, not the
strategy, sets their number. Why sd and not range: with ratings spread uniformly over a range of
200, neighbours sit ~7 points apart and tau 0.9 needs ~20000 verdicts whatever the pairing.

The judge: for each pair it forms one opinion, a tie with probability `--ties` (0.2), else a
Bradley-Terry draw from the true ratings; each of its two calls (both orders, first order at
random, `leaderboard.consistency.plan_orders`) reports that opinion, except that with
probability `--bias` (0.05) a call names the response shown first instead (position bias).
`leaderboard.consistency.combine` turns the two calls into one outcome (disagreement → tie), so
about a quarter of the comparisons end tied. A comparison is one such both-order judgement.

Strategies, each with the real code (`leaderboard.pairing`, `leaderboard.adaptive`, a `Tally`
and `bradley_terry` for the fit), judged in batches of `--batch` (20) pairs, the ranking fitted
after each batch, a pair never judged twice:
- uniform: pairs drawn one by one, uniformly among the uncached ones;
- round_robin: `round_robin`, a question (a full round: everyone against everyone) at a time,
  questions and pairs within a question in random order;
- sampled: `sampled(k=3)` rounds, repeated, each round's new pairs in random order;
- adaptive: `plan_round(budget=--batch)` rounds;
- oracle: not a strategy anyone can run, a ceiling. It knows the true ratings and the judge's
  tie and bias rates, and follows the optimal design for the target (`oracle_design.py`: the
  shares of comparisons per player pair that reach the expected misorder count of tau 0.9 with
  the fewest comparisons), each next pair the one furthest behind its share.
Measured: comparisons until the Kendall tau (scipy.stats.kendalltau) between the Bradley-Terry
ratings and the true ratings first reaches 0.9 (a player without battles rated 1000), averaged
over seeds; a run that exhausts the pool counts its total and is reported. The same world
serves every strategy of a seed. Prints `comparisons_to_tau90 <strategy> <n>` per strategy, then
`ratio <uniform/adaptive>` (on stderr: per-seed counts, bootstrap intervals over seeds of the
ratio and of the ceiling uniform/oracle).

Measured (100 seeds, 2026-11-29): uniform 3101, round_robin 2874, sampled 2970, adaptive 2037,
oracle 1687; ratio 1.52 (95% over resampled seeds 1.35-1.71), ceiling uniform/oracle 1.84
(1.64-2.07). 30 seeds had given 1.71 (1.33-2.19): one uniform run can take 5x its median, so
fewer seeds mostly measure which worlds were drawn. The issue's aim of 2 is past what the
information allows in this world: even the oracle, which never spends a comparison finding out
where the close pairs are, stays under 2 on average. Random pairs in a field of sd 200 are
rarely lopsided, so pairing cannot gain much per comparison; the oracle's edge over adaptive
is about 6% knowing the ratings (the same greedy rule fed the true ratings: 1921) and 12%
knowing the final budget (its design is solved for the budget where tau reaches 0.9, which no
running tournament knows; greedy steps are not). Tilting the greedy rule towards a later horizon
(weighing differences at half or a third of their current variance) moved it within noise
(2089, 1974), so the rule was left as it is. In a field twice as spread (`--spread 400`, where
random pairs are often lopsided): uniform 1350, adaptive 678, oracle 585, ratio 1.99
(1.81-2.20), ceiling 2.31: adaptive comes within 16% of the oracle, as at sd 200 (21%).
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.oracle_design import optimal_design  # noqa: E402
from leaderboard.adaptive import plan_round  # noqa: E402
from leaderboard.consistency import combine, plan_orders  # noqa: E402
from leaderboard.pairing import round_robin, sampled  # noqa: E402
from leaderboard.ratings import bradley_terry  # noqa: E402
from leaderboard.tally import Tally  # noqa: E402
from leaderboard.types import Battle, Call, Pair, Submission, Winner  # noqa: E402

LEVEL = "model"


@dataclass(frozen=True)
class World:
    """True ratings by player, and the submissions (one per player and question)."""

    truth: dict[str, float]
    submissions: list[Submission]
    owner: dict[int, str]
    question: dict[int, str]


def make_world(seed: int, players: int, questions: int, spread: float) -> World:
    rng = np.random.default_rng(seed)
    names = [f"model-{p:02d}" for p in range(players)]
    truth = dict(zip(names, (1000.0 + rng.normal(0.0, spread, players)).tolist()))
    subs = [
        Submission(id=q * players + p + 1, question_id=f"q{q:02d}", question=f"question {q}",
                   model=names[p], scenario="default", output=f"{names[p]} on q{q}")
        for q in range(questions) for p in range(players)
    ]
    return World(truth, subs, {s.id: s.model for s in subs}, {s.id: s.question_id for s in subs})


@dataclass(frozen=True)
class Judge:
    """A simulated LLM judge: a per-pair opinion, position bias per call."""

    truth: dict[str, float]
    ties: float
    bias: float

    def call(self, opinion: Winner, first_is_a: bool, rng: random.Random) -> Winner:
        """The positional verdict of one call, given the judge's opinion relative to a."""
        if rng.random() < self.bias:
            return Winner.A  # the first slot wins, whatever the opinion
        return opinion if first_is_a else opinion.flipped()

    def judge(self, world: World, pair: Pair, rng: random.Random) -> Battle:
        a, b = world.owner[pair.a], world.owner[pair.b]
        p_a = 1.0 / (1.0 + 10.0 ** ((self.truth[b] - self.truth[a]) / 400.0))
        opinion = Winner.TIE if rng.random() < self.ties else (Winner.A if rng.random() < p_a else Winner.B)
        calls = [
            Call(first=first, winner=self.call(opinion, first == pair.a, rng))
            for first, _ in plan_orders(pair.a, pair.b, "both", rng)
        ]
        outcome = combine(pair.a, pair.b, calls)
        return Battle(a=a, b=b, winner=outcome.winner, question_id=world.question[pair.a])


@dataclass
class Run:
    """What a tournament has seen so far (and, for the oracle only, the judge and the target)."""

    world: World
    judge: Judge
    target: float
    judged: set[tuple[int, int]] = field(default_factory=set)
    tally: Tally = field(default_factory=Tally)

    def tau(self) -> float:
        fitted = bradley_terry(self.tally.counts()) if self.tally.battles else {}
        names = sorted(self.world.truth)
        est = [fitted.get(n, 1000.0) for n in names]
        return float(kendalltau([self.world.truth[n] for n in names], est).statistic)


Strategy = Callable[[Run, random.Random, int], Iterator[list[Pair]]]


def uncached(run: Run, pairs: list[Pair]) -> list[Pair]:
    return [p for p in pairs if (p.a, p.b) not in run.judged]


def uniform(run: Run, rng: random.Random, batch: int) -> Iterator[list[Pair]]:
    """Pairs drawn one by one, uniformly among the uncached ones."""
    pool = round_robin(run.world.submissions)
    while pool:
        plan = []
        for _ in range(min(batch, len(pool))):
            index = rng.randrange(len(pool))
            pool[index], pool[-1] = pool[-1], pool[index]
            plan.append(pool.pop())
        yield plan


def round_robin_random(run: Run, rng: random.Random, batch: int) -> Iterator[list[Pair]]:
    """The full round robin, a question (every player against every other) at a time: questions
    in random order, pairs within a question in random order."""
    by_question: dict[str, list[Pair]] = {}
    for pair in round_robin(run.world.submissions):
        by_question.setdefault(run.world.question[pair.a], []).append(pair)
    blocks = list(by_question.values())
    rng.shuffle(blocks)
    plan = []
    for block in blocks:
        rng.shuffle(block)
        plan.extend(block)
    for start in range(0, len(plan), batch):
        yield plan[start:start + batch]


def sampled_rounds(run: Run, rng: random.Random, batch: int, k: int = 3) -> Iterator[list[Pair]]:
    while len(run.judged) < len(round_robin(run.world.submissions)):
        plan = uncached(run, sampled(run.world.submissions, k, rng))
        rng.shuffle(plan)
        for start in range(0, len(plan), batch):
            yield plan[start:start + batch]


def adaptive(run: Run, rng: random.Random, batch: int) -> Iterator[list[Pair]]:
    while True:
        plan = plan_round(run.world.submissions, run.tally.counts(), LEVEL, budget=batch, judged=run.judged, rng=rng)
        if not plan:
            return
        yield plan


def oracle(run: Run, rng: random.Random, batch: int) -> Iterator[list[Pair]]:
    """Not a strategy anyone can run: it knows the true ratings. Follows the optimal design
    (`oracle_design.optimal_design`) for the target, each next pair the one furthest behind its
    share, on a random question it has not met yet. The ceiling for rules that must learn."""
    names = sorted(run.world.truth)
    misorders = (1.0 - run.target) / 2.0 * len(names) * (len(names) - 1) / 2.0
    design = optimal_design([run.world.truth[n] for n in names], run.judge.ties, run.judge.bias, misorders)
    mine: dict[str, dict[str, int]] = {n: {} for n in names}
    for sub in run.world.submissions:
        mine[sub.model][sub.question_id] = sub.id
    shares, given, drawn = design.shares.copy(), np.zeros(design.shares.size), 0
    while shares.sum() > 0:
        plan: list[Pair] = []
        while len(plan) < batch and shares.sum() > 0:
            drawn += 1
            e = int(np.argmax(shares * drawn - given))
            given[e] += 1
            a, b = mine[names[design.i[e]]], mine[names[design.j[e]]]
            fresh = [Pair(*sorted((a[q], b[q]))) for q in sorted(a.keys() & b.keys())]
            fresh = [p for p in fresh if (p.a, p.b) not in run.judged and p not in plan]
            if fresh:
                plan.append(fresh[rng.randrange(len(fresh))])
            else:
                shares[e] = 0.0  # every question of this pair is judged
        yield plan


STRATEGIES: dict[str, Strategy] = {
    "uniform": uniform,
    "round_robin": round_robin_random,
    "sampled": sampled_rounds,
    "adaptive": adaptive,
    "oracle": oracle,
}


def comparisons_to(target: float, world: World, judge: Judge, strategy: Strategy, seed: int, batch: int) -> tuple[int, bool]:
    """(comparisons judged when tau first reached `target`, whether it did before the pool ran out)."""
    rng = random.Random(seed)
    run = Run(world, judge, target)
    for plan in strategy(run, rng, batch):
        fresh = uncached(run, plan)
        run.tally.add([judge.judge(world, pair, rng) for pair in fresh])
        run.judged.update((p.a, p.b) for p in fresh)
        if run.tau() >= target:
            return len(run.judged), True
    return len(run.judged), False


@dataclass(frozen=True)
class Settings:
    """One bench run's world and judge parameters, shared by every seed."""

    players: int
    questions: int
    spread: float
    ties: float
    bias: float
    batch: int
    tau: float
    strategies: tuple[str, ...]


def run_seed(settings: Settings, seed: int) -> dict[str, tuple[int, bool, float]]:
    """Per strategy: (comparisons to the target, whether it was reached, CPU seconds), one world."""
    world = make_world(seed, settings.players, settings.questions, settings.spread)
    judge = Judge(world.truth, settings.ties, settings.bias)
    out = {}
    for name in settings.strategies:
        began = time.process_time()
        n, reached = comparisons_to(settings.tau, world, judge, STRATEGIES[name], 1_000_003 * seed + 17, settings.batch)
        out[name] = (n, reached, time.process_time() - began)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--players", type=int, default=30)
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--spread", type=float, default=200.0, help="sd of the true ratings (Elo)")
    parser.add_argument("--ties", type=float, default=0.2)
    parser.add_argument("--bias", type=float, default=0.05)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--tau", type=float, default=0.9)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes, a seed each")
    args = parser.parse_args()
    names = tuple(args.strategies.split(","))
    unknown = set(names) - set(STRATEGIES)
    if unknown:
        parser.error(f"unknown strategies {sorted(unknown)}; choose from {sorted(STRATEGIES)}")
    settings = Settings(args.players, args.questions, args.spread, args.ties, args.bias, args.batch, args.tau, names)
    with multiprocessing.Pool(args.jobs) as pool:
        per_seed = pool.map(partial(run_seed, settings), range(args.seeds))
    results = {name: [seed[name][0] for seed in per_seed] for name in names}
    for name in names:
        missed = sum(not seed[name][1] for seed in per_seed)
        cpu = sum(seed[name][2] for seed in per_seed)
        note = f"  # {missed} of {args.seeds} seeds exhausted the pool first" if missed else ""
        print(f"# {name}: {cpu:.1f} s CPU, per seed {results[name]}{note}", file=sys.stderr)
    means = {name: float(np.mean(results[name])) for name in names}
    for name in names:
        print(f"comparisons_to_tau{round(args.tau * 100)} {name} {means[name]:.0f}")
    if "uniform" in means and "oracle" in means:
        low, high = ratio_interval(results["uniform"], results["oracle"])
        print(f"# ceiling uniform/oracle {means['uniform'] / means['oracle']:.2f}, seeds resampled [{low:.2f}, {high:.2f}]", file=sys.stderr)
    if "uniform" in means and "adaptive" in means:
        low, high = ratio_interval(results["uniform"], results["adaptive"])
        print(f"# ratio 95% interval, seeds resampled: [{low:.2f}, {high:.2f}]", file=sys.stderr)
        print(f"ratio {means['uniform'] / means['adaptive']:.2f}")


def ratio_interval(uniform_counts: list[int], adaptive_counts: list[int], rounds: int = 2000) -> tuple[float, float]:
    """Percentile bootstrap of mean(uniform)/mean(adaptive) over seeds: how much the ratio owes to
    which worlds were drawn (a single uniform run can take 5x its median)."""
    u, a = np.asarray(uniform_counts, float), np.asarray(adaptive_counts, float)
    pick = np.random.default_rng(0).integers(0, u.size, size=(rounds, u.size))
    ratios = u[pick].mean(axis=1) / a[pick].mean(axis=1)
    low, high = np.quantile(ratios, [0.025, 0.975])
    return float(low), float(high)


if __name__ == "__main__":
    main()
