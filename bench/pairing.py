"""Comparisons needed for a trustworthy ranking: adaptive pairing against the plain plans.

Not a test: run `python bench/pairing.py [--seeds 30]` (under two minutes on 2 cores).

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
- adaptive: `plan_round(budget=--batch)` rounds.
Measured: comparisons until the Kendall tau (scipy.stats.kendalltau) between the Bradley-Terry
ratings and the true ratings first reaches 0.9 (a player without battles rated 1000), averaged
over seeds; a run that exhausts the pool counts its total and is reported. The same world
serves every strategy of a seed. Prints `comparisons_to_tau90 <strategy> <n>` per strategy, then
`ratio <uniform/adaptive>` (on stderr: per-seed counts and a bootstrap interval of the ratio).

Measured (30 seeds): uniform 3029, round_robin 2491, sampled 2847, adaptive 1767, ratio 1.71
(95% over seeds 1.33-2.19); with `--spread 400`: uniform 1373, adaptive 663, ratio 2.07. The
ratio is bounded by the field, not only by the rule: a Fisher-information calculation that
picks pairs knowing the true ratings needs 1.3-1.6x fewer comparisons than uniform for expected
tau 0.9 at sd 200 (1.7-2.0x at sd 400), because random pairs in a field this compact are rarely
lopsided (their mean p(1-p) is still 0.17 of a possible 0.25).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

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
    """What a tournament has seen so far."""

    world: World
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


STRATEGIES: dict[str, Strategy] = {
    "uniform": uniform,
    "round_robin": round_robin_random,
    "sampled": sampled_rounds,
    "adaptive": adaptive,
}


def comparisons_to(target: float, world: World, judge: Judge, strategy: Strategy, seed: int, batch: int) -> tuple[int, bool]:
    """(comparisons judged when tau first reached `target`, whether it did before the pool ran out)."""
    rng = random.Random(seed)
    run = Run(world)
    for plan in strategy(run, rng, batch):
        fresh = uncached(run, plan)
        run.tally.add([judge.judge(world, pair, rng) for pair in fresh])
        run.judged.update((p.a, p.b) for p in fresh)
        if run.tau() >= target:
            return len(run.judged), True
    return len(run.judged), False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--players", type=int, default=30)
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--spread", type=float, default=200.0, help="sd of the true ratings (Elo)")
    parser.add_argument("--ties", type=float, default=0.2)
    parser.add_argument("--bias", type=float, default=0.05)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--tau", type=float, default=0.9)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    args = parser.parse_args()
    names = args.strategies.split(",")
    results: dict[str, list[int]] = {name: [] for name in names}
    missed: dict[str, int] = {name: 0 for name in names}
    seconds: dict[str, float] = {name: 0.0 for name in names}
    for seed in range(args.seeds):
        world = make_world(seed, args.players, args.questions, args.spread)
        judge = Judge(world.truth, args.ties, args.bias)
        for name in names:
            began = time.perf_counter()
            n, reached = comparisons_to(args.tau, world, judge, STRATEGIES[name], 1_000_003 * seed + 17, args.batch)
            seconds[name] += time.perf_counter() - began
            results[name].append(n)
            missed[name] += not reached
    for name in names:
        note = f"  # {missed[name]} of {args.seeds} seeds exhausted the pool first" if missed[name] else ""
        print(f"# {name}: {seconds[name]:.1f} s, per seed {results[name]}{note}", file=sys.stderr)
    means = {name: float(np.mean(results[name])) for name in names}
    for name in names:
        print(f"comparisons_to_tau{round(args.tau * 100)} {name} {means[name]:.0f}")
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
