"""Baseline mode on LLMFAO's field: rank agreement with the full round robin against judge calls.

Not a test: run `python bench/baseline_mode.py [--seeds 20] [LLMFAO_DIR]` (about 3 minutes
for 20 seeds on one core). LLMFAO_DIR defaults to ../shared/data/llmfao, read in place.

Why simulated verdicts: LLMFAO's GPT-4 file (`gpt4-comparisons.csv`, 3,236 verdicts on 70 models
and 19 prompts) is a sparse sample, not a round robin (19·C(70, 2) = 45,885 pairs), so no board
of every pair exists to agree with. The field is LLMFAO's own: its 70 models at the ratings
GPT-4's verdicts give them (`bradley_terry`), its 19 prompts, its judge's tie rate (4%); the
judge is `bench.pairing.Judge` (one opinion per pair, both orders, 5% of calls naming the first
slot, `leaderboard.consistency.combine`). Per seed, the full round robin is judged (91,770
calls) and its Bradley-Terry board is the reference. Then each strategy spends up to the calls
a whole baseline run spends (`leaderboard.pairing.against_baseline`: 19·69 = 1,311 pairs, 2,622
calls), and at a quarter, a half and all of that spend its board is fitted and compared with the
reference by Kendall tau (scipy.stats.kendalltau; a player without a verdict rated 1000):
- baseline_<which>: every model against the baseline on every prompt, a prompt at a time
  (prompts in random order: what a baseline run has done when it has spent that much); its
  board ranked two ways, by Bradley-Terry over its verdicts and by plain win rate against the
  baseline (`..._winrate`, AlpacaEval's ranking; the baseline itself placed at 50%);
- round_robin: the round robin cut at the same calls, a prompt at a time likewise;
- adaptive: `leaderboard.adaptive.plan_round` rounds of 20 pairs up to the same calls.
The baseline is the mid-ranked model (`mid`, the median of GPT-4's ratings, named in the
output); a top- and a bottom-ranked baseline are measured too, since a star design learns little
from lopsided comparisons. Prints, in the style of the other benches, `calls_ratio` (round
robin's calls over baseline mode's) and `tau <strategy> <calls> <mean over seeds> <sd>` (on
stderr, each seed's tau at the full spend).

Measured: see docs/benchmarks/baseline.md (the figures and the date they were taken).
"""
from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
from pathlib import Path

from scipy.stats import kendalltau

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.pairing import Judge, Run, World, adaptive  # noqa: E402
from leaderboard.pairing import against_baseline, round_robin  # noqa: E402
from leaderboard.ratings import bradley_terry  # noqa: E402
from leaderboard.tally import Tally  # noqa: E402
from leaderboard.types import Battle, Pair, Submission, Winner  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "llmfao"
BIAS = 0.05
BATCH = 20


def llmfao_world(data: Path) -> tuple[World, float]:
    """LLMFAO's models at GPT-4's Bradley-Terry ratings, one submission per model and prompt;
    and GPT-4's tie rate."""
    names = {row["id"]: row["name"] for row in map(json.loads, (data / "models.jsonl").read_text().splitlines())}
    prompts = sorted({row["id"] for row in map(json.loads, (data / "prompts.jsonl").read_text().splitlines())})
    battles, ties = [], 0
    with (data / "gpt4-comparisons.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            winner = {"left": Winner.A, "right": Winner.B, "tie": Winner.TIE}[row["winner"]]
            ties += winner is Winner.TIE
            battles.append(Battle(a=row["left"], b=row["right"], winner=winner, question_id=row["prompt"]))
    tally = Tally()
    tally.add(battles)
    truth = {name: float(r) for name, r in bradley_terry(tally.counts()).items()}
    players = sorted(truth)
    assert set(players) <= set(names.values()), "a model in the verdicts is not in models.jsonl"
    subs = [Submission(id=q * len(players) + p + 1, question_id=f"p{prompt:02d}", question=f"prompt {prompt}",
                       model=name, scenario="default", output=f"{name} on {prompt}")
            for q, prompt in enumerate(prompts) for p, name in enumerate(players)]
    return World(truth, subs, {s.id: s.model for s in subs}, {s.id: s.question_id for s in subs}), ties / len(battles)


def judged(world: World, judge: Judge, pairs: list[Pair], rng: random.Random) -> list[Battle]:
    return [judge.judge(world, pair, rng) for pair in pairs]


def board(battles: list[Battle]) -> dict[str, float]:
    tally = Tally()
    tally.add(battles)
    return bradley_terry(tally.counts())


def tau(reference: dict[str, float], fitted: dict[str, float]) -> float:
    names = sorted(reference)
    return float(kendalltau([reference[n] for n in names], [fitted.get(n, 1000.0) for n in names]).statistic)


def winrates(battles: list[Battle], baseline: str) -> dict[str, float]:
    """Each player's share against the baseline (a tie half); the baseline at 0.5."""
    shares: dict[str, list[float]] = {baseline: [0.5]}
    for b in battles:
        share = {Winner.A: 1.0, Winner.TIE: 0.5, Winner.B: 0.0}[b.winner]
        player, own = (b.a, share) if b.b == baseline else (b.b, 1.0 - share)
        shares.setdefault(player, []).append(own)
    return {p: statistics.fmean(s) for p, s in shares.items()}


def question_blocks(world: World, pairs: list[Pair], rng: random.Random) -> list[Pair]:
    """`pairs` a question at a time, questions and pairs within one in random order: the order
    in which a run of that plan has spent its calls when it is cut short."""
    blocks: dict[str, list[Pair]] = {}
    for pair in pairs:
        blocks.setdefault(world.question[pair.a], []).append(pair)
    order = [blocks[q] for q in sorted(blocks)]
    rng.shuffle(order)
    out: list[Pair] = []
    for block in order:
        rng.shuffle(block)
        out.extend(block)
    return out


def run_seed(world: World, judge: Judge, baselines: dict[str, str], spends: list[int], seed: int
             ) -> dict[tuple[str, int], float]:
    """Kendall tau with the full round robin's board, by (strategy, pairs judged), for one seed."""
    rng = random.Random(seed)
    reference = board(judged(world, judge, round_robin(world.submissions), rng))
    out: dict[tuple[str, int], float] = {}
    for label, baseline in baselines.items():
        order = question_blocks(world, against_baseline(world.submissions, baseline, "model"), rng)
        battles = judged(world, judge, order, rng)
        for spend in spends:
            out[f"baseline_{label}", spend] = tau(reference, board(battles[:spend]))
            out[f"baseline_{label}_winrate", spend] = tau(reference, winrates(battles[:spend], baseline))
    order = question_blocks(world, round_robin(world.submissions), rng)[:max(spends)]
    battles = judged(world, judge, order, rng)
    for spend in spends:
        out["round_robin", spend] = tau(reference, board(battles[:spend]))
    run = Run(world, judge, 0.0)
    for batch in adaptive(run, rng, BATCH):
        batch = batch[:max(spends) - len(run.judged)]
        for pair in batch:  # pair by pair, so that each spend is met exactly
            run.tally.add([judge.judge(world, pair, rng)])
            run.judged.add((pair.a, pair.b))
            if len(run.judged) in spends:
                out["adaptive", len(run.judged)] = tau(reference, bradley_terry(run.tally.counts()))
        if len(run.judged) >= max(spends):
            break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    if not (args.data / "gpt4-comparisons.csv").exists():
        sys.exit(f"no LLMFAO data at {args.data} (see ../shared/data/README)")
    world, ties = llmfao_world(args.data)
    judge = Judge(world.truth, ties, BIAS)
    ranked = sorted(world.truth, key=lambda n: -world.truth[n])
    baselines = {"mid": ranked[len(ranked) // 2], "top": ranked[0], "bottom": ranked[-1]}
    players, questions = len(ranked), len({s.question_id for s in world.submissions})
    rr_pairs = questions * players * (players - 1) // 2
    base_pairs = len(against_baseline(world.submissions, baselines["mid"], "model"))
    assert base_pairs == questions * (players - 1)
    spends = [base_pairs // 4, base_pairs // 2, base_pairs]
    print(f"field: {players} LLMFAO models, {questions} prompts, GPT-4 tie rate {ties:.3f}, position bias {BIAS}")
    for label, name in baselines.items():
        print(f"baseline_{label}: {name} (rank {ranked.index(name) + 1} of {players}, GPT-4 rating "
              f"{world.truth[name]:.0f})")
    print(f"calls round_robin {2 * rr_pairs} baseline {2 * base_pairs}")
    print(f"calls_ratio {rr_pairs / base_pairs:.2f}")
    results: dict[tuple[str, int], list[float]] = {}
    for seed in range(args.seeds):
        for key, value in run_seed(world, judge, baselines, spends, 1_000_003 * seed + 17).items():
            results.setdefault(key, []).append(value)
        done = " ".join(f"{name} {v[-1]:.3f}" for (name, spend), v in results.items() if spend == base_pairs)
        print(f"seed {seed} at {2 * base_pairs} calls: {done}", file=sys.stderr, flush=True)
    names = list(dict.fromkeys(name for name, _ in results))
    print("tau <strategy> <calls> <mean over seeds> <sd>")
    for name in names:
        for spend in spends:
            values = results[name, spend]
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            print(f"tau {name} {2 * spend} {statistics.fmean(values):.3f} {sd:.3f}")


if __name__ == "__main__":
    main()
