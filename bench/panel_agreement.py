"""Does a panel of judges agree with people more than its members? LLMFAO and Comparative-QA.

Not a test: run `python bench/panel_agreement.py [--llmfao DIR] [--cqa DIR]` (a few seconds).

Per data set, one line per judge: its agreement with people with ties counted (a tie agrees
only with a tie) and with ties excluded (only comparisons where both name a winner), the pairs
and votes each rests on, and Spearman's rho between its Bradley-Terry board and the people's
board (over the players both rank). The judges: each member, the panel (`leaderboard.panel`,
majority of the members' verdicts, a tie without a strict majority), the length-only "judge"
(the longer output wins, equal lengths tie) and, for the rank correlation only, the `separate`
panel's pooled board (every member's verdict one battle). Every judge is compared on the same
pairs: those every member judged and people judged. Last line of each set:
`panel_gain <panel agreement - best member agreement>` with ties counted (then ties excluded).

LLMFAO: GPT-4 and GPT-3.5-turbo-instruct verdicts (`gpt{4,3}-crowd-comparisons.csv`) on the
crowd's pairs; the people are the crowd's votes (`crowd-comparisons.csv`, several per pair, each
one comparison); lengths from `results.jsonl`. A two-member panel's majority is a tie whenever
the two disagree, so its verdicts are the pairs they agree on plus ties.

Comparative-QA: four rubric judges (GPT-4 few-shot, GPT-3.5 and Perplexity from
`compact/evaluated_summaries_scores.csv`, and joust's offline structural rubric
`leaderboard.rubric.score_structure`), the people the experts of `human_evaluation_367.tsv`;
scores become pairwise verdicts per question exactly as `joust import cqa` makes them
(`service.usecases.importers.rubric.rubric_judgements`: higher total wins, equal totals tie). Players
are systems (generator, scenario).
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboard.panel import Agreement, agreement, panel_verdicts
from leaderboard.ratings import bradley_terry
from leaderboard.rubric import score_structure
from leaderboard.types import Winner
from service.usecases.importers.cqa import (
    HUMAN_SCORES,
    LLM_SCORES,
    parse_human_scores,
    parse_llm_scores,
    parse_summaries,
)
from service.usecases.importers.rubric import RubricScore, rubric_judgements

DATA = REPO.parent / "shared" / "data"
LLMFAO_JUDGES = (("gpt4-crowd-comparisons.csv", "import/gpt-4"),
                 ("gpt3-crowd-comparisons.csv", "import/gpt-3.5-turbo-instruct"))
OFFLINE = "offline/rubric"
LENGTH = "length (longer wins)"
POSITION = {"left": Winner.A, "right": Winner.B, "tie": Winner.TIE}

Pair = tuple  # (context, player or id a, player or id b) with a < b; verdicts relative to a
Verdicts = dict[Pair, Winner]


def oriented(context: object, a: object, b: object, verdict: Winner) -> tuple[Pair, Winner]:
    """The pair with its smaller side first, and the verdict relative to it."""
    return ((context, a, b), verdict) if a < b else ((context, b, a), verdict.flipped())


def longer_wins(a: int, b: int) -> Winner:
    return Winner.A if a > b else Winner.B if b > a else Winner.TIE


# --- LLMFAO ----------------------------------------------------------------------------------


def llmfao(data: Path) -> tuple[dict[str, Verdicts], dict[Pair, Counter[Winner]], dict[int, str]]:
    """Members' verdicts and the length judge's, the crowd's votes, and model names by id."""
    names: dict[int, str] = {}
    crowd: dict[Pair, Counter[Winner]] = {}
    with (data / "crowd-comparisons.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            pair, verdict = oriented(int(row["prompt"]), int(row["model_x"]), int(row["model_y"]), POSITION[row["winner"]])
            crowd.setdefault(pair, Counter())[verdict] += 1
            names[int(row["model_x"])], names[int(row["model_y"])] = row["left"], row["right"]
    judges: dict[str, Verdicts] = {}
    for file, judge in LLMFAO_JUDGES:
        with (data / file).open(newline="") as handle:
            judges[judge] = dict(oriented(int(r["prompt"]), int(r["model_x"]), int(r["model_y"]), POSITION[r["winner"]])
                                 for r in csv.DictReader(handle))
    lengths: dict[tuple[int, int], int] = {}
    with (data / "results.jsonl").open() as handle:
        for line in handle:
            item = json.loads(line)
            lengths[(int(item["prompt"]), int(item["model"]))] = len(item["result"] or "")
    judges[LENGTH] = {p: longer_wins(lengths[(p[0], p[1])], lengths[(p[0], p[2])]) for p in crowd
                      if (p[0], p[1]) in lengths and (p[0], p[2]) in lengths}
    return judges, crowd, names


# --- Comparative-QA --------------------------------------------------------------------------


def cqa(data: Path) -> tuple[dict[str, Verdicts], dict[Pair, Counter[Winner]], dict[int, str]]:
    """The four rubric judges' verdicts and the length judge's, the experts' verdicts (one vote
    per pair), and each summary's system ("generator scenario") by summary index."""
    summaries = parse_summaries(data)
    id_of = {(s.file, s.item): i for i, s in enumerate(summaries)}
    scores, _ = parse_llm_scores(data / LLM_SCORES, {(s.file, s.item): s for s in summaries})
    scores += parse_human_scores(data / HUMAN_SCORES, summaries)
    for s in summaries:
        points = score_structure(s.comparison, s.object1, s.object2).points
        scores.append(RubricScore(OFFLINE, s, {f"C{c}": float(v) for c, v in points.items()}, "offline", 0))
    system = {i: f"{s.model} {s.scenario}" for i, s in enumerate(summaries)}
    question = {i: s.question_id for i, s in enumerate(summaries)}
    judges: dict[str, Verdicts] = {}
    for judge, rows in rubric_judgements(scores, id_of).items():
        judges[judge] = dict(oriented(question[r.a_id], r.a_id, r.b_id, r.outcome) for r in rows)
    experts = {p: Counter({w: 1}) for p, w in judges.pop("rubric/human").items()}
    sizes = {i: len(s.comparison) for i, s in enumerate(summaries)}
    judges[LENGTH] = {p: longer_wins(sizes[p[1]], sizes[p[2]]) for p in experts}
    return judges, experts, system


# --- the measurement -------------------------------------------------------------------------


def board(verdicts: Mapping[Pair, Winner] | Sequence[tuple[Pair, Winner]], player: Mapping[int, str]) -> pd.Series:
    """Bradley-Terry ratings of the players over these verdicts (one battle each)."""
    items = verdicts.items() if isinstance(verdicts, Mapping) else verdicts
    battles = [(player[p[1]], player[p[2]], w) for p, w in items if player[p[1]] != player[p[2]]]
    return pd.Series(bradley_terry(battles))


def rho(ratings: pd.Series, people: pd.Series) -> float:
    both = ratings.index.intersection(people.index)
    return float(ratings[both].corr(people[both], method="spearman"))


def report(title: str, judges: dict[str, Verdicts], people: dict[Pair, Counter[Winner]],
           player: Mapping[int, str], members: Sequence[str]) -> list[str]:
    """The lines printed for one data set (module docstring)."""
    shared = set(people).intersection(*(judges[m] for m in members))
    mine = {j: {p: v for p, v in judges[j].items() if p in shared} for j in judges}
    panel = panel_verdicts([mine[m] for m in members])
    mine["panel (majority)"] = panel
    crowd_battles = [(p, w) for p, votes in people.items() for w, n in votes.items() for _ in range(n)]
    human = board(crowd_battles, player)
    rows: list[tuple[str, Agreement, Agreement, float]] = []
    for judge in [*members, "panel (majority)", LENGTH]:
        verdicts = mine[judge]
        rows.append((judge, agreement(verdicts, people), agreement(verdicts, people, decided=True),
                     rho(board(verdicts, player), human)))
    disagree = sum(len({mine[m][p] for m in members}) > 1 for p in shared)
    ties = sum(w is Winner.TIE for w in panel.values())
    votes = sum(sum(people[p].values()) for p in shared)
    lines = [(f"{title}: {len(shared)} pairs judged by every member and by people, {votes} people's votes on them; "
              f"members disagree on {disagree} pairs; panel ties {ties} and decides {len(panel) - ties}; "
              f"the people's board ranks {len(human)} players"),
             f"{'judge':<34} {'agree':>6} {'votes':>6} {'agree_decided':>14} {'votes':>6} {'rho_people':>11}"]
    for judge, tied, decided, r in rows:
        lines.append(f"{judge:<34} {_cell(tied.rate):>6} {tied.votes:>6} {_cell(decided.rate):>14} {decided.votes:>6} {r:>11.3f}")
    pooled = [(p, v) for m in members for p, v in mine[m].items()]
    lines.append(f"{'panel (separate, pooled board)':<34} {'':>6} {'':>6} {'':>14} {'':>6} {rho(board(pooled, player), human):>11.3f}")
    best = max(rows[: len(members)], key=lambda r: r[1].rate or 0.0)
    best_decided = max(rows[: len(members)], key=lambda r: r[2].rate or 0.0)
    _, panel_tied, panel_decided, _ = rows[len(members)]
    lines.append(f"panel_gain {panel_tied.rate - best[1].rate:+.4f} (best member {best[0]});"
                 f" ties excluded {panel_decided.rate - best_decided[2].rate:+.4f} (best member {best_decided[0]})")
    return lines


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llmfao", type=Path, default=DATA / "llmfao")
    parser.add_argument("--cqa", type=Path, default=DATA / "cqa_evaluation")
    args = parser.parse_args(argv)
    printed = False
    if (args.llmfao / "crowd-comparisons.csv").is_file():
        judges, crowd, names = llmfao(args.llmfao)
        print("\n".join(report("LLMFAO (people: the crowd)", judges, crowd, names,
                               [j for _, j in LLMFAO_JUDGES])))
        printed = True
    if (args.cqa / HUMAN_SCORES).is_file():
        judges, experts, systems = cqa(args.cqa)
        if printed:
            print()
        members = sorted(j for j in judges if j != LENGTH)
        print("\n".join(report("Comparative-QA (people: the experts)", judges, experts, systems, members)))
        printed = True
    if not printed:
        print(f"no LLMFAO or Comparative-QA data under {args.llmfao} / {args.cqa}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
