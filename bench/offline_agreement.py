"""How far the offline rubric judge (`offline/rubric`) agrees with the human experts.

Not a test: run `python bench/offline_agreement.py [CQA_DIR] [--flat]` (a second or two).

The reference is the Comparative-QA benchmark's human evaluation
(`evaluation_tables/human_evaluation_367.tsv`: 367 summaries, each criterion C1..C15 scored by
experts, a .5 where two annotators disagreed). Each summary is scored by
`leaderboard.rubric.score_structure` with its two object names, on the original text of
`raw_summaries/` where it is found (newlines kept, as joust stores it), else the table's
flattened text (`--flat`: the table's text everywhere).

Printed, per covered criterion: how many summaries the experts scored unanimously (n), the
exact-match rate, the rate of always answering the experts' most common score (majority) and
Cohen's kappa; for the 0-2 criterion C10 also Spearman's rho over every summary. Then the
correlation of the structural total with the human total, and pairwise agreement: for two
summaries of the same comparison whose human totals differ, how often the side with the higher
structural total is the side the experts scored higher (offline ties excluded; the share of
pairs it decides is printed too), beside "the longer answer wins" as a baseline.

For scale, where `evaluation_tables/merged_human_gpt4_evaluation.tsv` is present, the last
column is GPT-4's (few-shot, the paper's LLM judge) kappa against the same experts on the same
criteria, over the summaries that table's annotators scored unanimously (`gpt4_kappa`).

Caveat: the rules were written while reading this same data, so the figures are in-sample.
"""
from __future__ import annotations

import argparse
import ast
import csv
import glob
import itertools
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboard.rubric import COVERED, MAX_POINTS, NAMES, RubricScore, score_structure

DEFAULT_DATA = REPO.parent / "shared" / "data" / "cqa_evaluation"
HUMAN_TABLE = Path("evaluation_tables") / "human_evaluation_367.tsv"
GPT4_TABLE = Path("evaluation_tables") / "merged_human_gpt4_evaluation.tsv"


@dataclass(frozen=True)
class HumanRow:
    """One summary with the experts' per-criterion scores."""

    object1: str
    object2: str
    aspect: str
    text: str
    human: dict[int, float]

    @property
    def human_total(self) -> float:
        return sum(self.human.values())


@dataclass(frozen=True)
class CriterionAgreement:
    criterion: int
    n: int
    exact: float
    majority: float
    kappa: float
    spearman: float | None  # for 0-2 criteria, over every summary


@dataclass(frozen=True)
class PairAgreement:
    pairs: int  # pairs of summaries of one comparison whose human totals differ
    decided: int  # of those, the pairs the offline judge does not tie
    agreement: float
    length_agreement: float  # "the longer answer wins" on the pairs where lengths differ


def load_rows(directory: Path, flat: bool = False) -> list[HumanRow]:
    """The human table, texts restored from raw_summaries/ where they match (unless `flat`)."""
    csv.field_size_limit(sys.maxsize)
    originals: dict[str, str] = {}
    if not flat:
        for name in sorted(glob.glob(str(directory / "raw_summaries" / "*.json"))):
            for item in json.loads(Path(name).read_text()):
                originals.setdefault(_squash(item["comparison"]), item["comparison"])
    rows = []
    with (directory / HUMAN_TABLE).open(newline="") as handle:
        for record in csv.DictReader(handle, delimiter="\t"):
            text = record["comparison"]
            human = {n: float(record[f"C{n}"]) for n in range(1, 16)}
            rows.append(HumanRow(record["object1"], record["object2"], record["aspect"] or "",
                                 originals.get(_squash(text), text), human))  # fmt: skip
    return rows


def gpt4_kappa(directory: Path) -> dict[int, float]:
    """Per covered criterion, GPT-4's kappa against unanimous experts (empty without the table).

    Each cell is a dict {"human_1": .., "human_2": .., "gpt4": ..}, '' where not scored."""
    if not (directory / GPT4_TABLE).is_file():
        return {}
    pairs: dict[int, list[tuple[float, float]]] = {c: [] for c in COVERED}
    with (directory / GPT4_TABLE).open(newline="") as handle:
        for record in csv.DictReader(handle, delimiter="\t"):
            for c in COVERED:
                cell = ast.literal_eval(record[f"score_dict.{c}"])
                humans = {v for k, v in cell.items() if k.startswith("human") and v != ""}
                if len(humans) == 1 and cell.get("gpt4", "") != "":
                    pairs[c].append((cell["gpt4"], humans.pop()))
    return {c: cohen_kappa(p) for c, p in pairs.items()}


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# --- statistics (plain functions over plain lists) ---------------------------------------------


def cohen_kappa(pairs: Sequence[tuple[float, float]]) -> float:
    """Cohen's kappa of two raters over the same items; nan when chance agreement is total."""
    n = len(pairs)
    if n == 0:
        return math.nan
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[c] * second[c] for c in first) / (n * n)
    return math.nan if expected == 1 else (observed - expected) / (1 - expected)


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return math.nan if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rho: Pearson's r of the ranks (ties get their mean rank)."""
    return pearson(_ranks(xs), _ranks(ys))


def criterion_agreement(criterion: int, rule: Sequence[int], human: Sequence[float]) -> CriterionAgreement:
    """Agreement on one criterion, over the summaries the experts scored unanimously."""
    top = MAX_POINTS[criterion]
    pairs = [(r, h) for r, h in zip(rule, human) if h in range(top + 1)]
    common = Counter(h for _, h in pairs).most_common(1)[0][1] if pairs else 0
    rho = spearman(rule, human) if top > 1 else None
    return CriterionAgreement(criterion, len(pairs), _rate(a == b for a, b in pairs),
                              common / len(pairs) if pairs else math.nan, cohen_kappa(pairs), rho)  # fmt: skip


def pair_agreement(groups: Sequence[Sequence[tuple[float, float, int]]]) -> PairAgreement:
    """Pairwise agreement within groups of (human total, offline total, length) per summary."""
    pairs = decided = agree = length_pairs = length_agree = 0
    for group in groups:
        for (h1, o1, n1), (h2, o2, n2) in itertools.combinations(group, 2):
            if h1 == h2:
                continue
            pairs += 1
            if o1 != o2:
                decided += 1
                agree += (o1 > o2) == (h1 > h2)
            if n1 != n2:
                length_pairs += 1
                length_agree += (n1 > n2) == (h1 > h2)
    return PairAgreement(pairs, decided, agree / decided if decided else math.nan,
                         length_agree / length_pairs if length_pairs else math.nan)  # fmt: skip


def _rate(flags: object) -> float:
    values = list(flags)  # type: ignore[call-overload]
    return sum(values) / len(values) if values else math.nan


# --- the measurement ------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    rows: int
    criteria: list[CriterionAgreement]
    total_spearman: float
    total_pearson: float
    covered_spearman: float  # against the human sum over the covered criteria only
    pairs: PairAgreement


def measure(rows: Sequence[HumanRow]) -> Report:
    """Score every summary with the rules and compare with the experts."""
    scores: list[RubricScore] = [score_structure(r.text, r.object1, r.object2) for r in rows]
    criteria = [criterion_agreement(c, [s.points[c] for s in scores], [r.human[c] for r in rows])
                for c in COVERED]  # fmt: skip
    totals = [float(s.total) for s in scores]
    human_totals = [r.human_total for r in rows]
    covered = [sum(r.human[c] for c in COVERED) for r in rows]
    groups: dict[tuple[str, str, str], list[tuple[float, float, int]]] = {}
    for row, score in zip(rows, scores):
        key = (row.object1.lower(), row.object2.lower(), row.aspect.lower())
        groups.setdefault(key, []).append((row.human_total, float(score.total), len(row.text.split())))
    return Report(len(rows), criteria, spearman(totals, human_totals), pearson(totals, human_totals),
                  spearman(totals, covered), pair_agreement(list(groups.values())))  # fmt: skip


def format_report(report: Report, gpt4: dict[int, float] | None = None) -> str:
    gpt4 = gpt4 or {}
    header = f"{'criterion':<34} {'n':>4} {'exact':>6} {'majority':>9} {'kappa':>6} {'spearman':>9} {'gpt-4 kappa':>12}"
    lines = [f"{report.rows} summaries scored by human experts (Comparative-QA, human_evaluation_367.tsv)", "", header]
    for c in report.criteria:
        rho = "" if c.spearman is None else f"{c.spearman:.2f}"
        ref = f"{gpt4[c.criterion]:.2f}" if c.criterion in gpt4 else ""
        lines.append(f"C{c.criterion:<3}{NAMES[c.criterion]:<30} {c.n:>4} {c.exact:>6.2f} {c.majority:>9.2f}"
                     f" {c.kappa:>6.2f} {rho:>9} {ref:>12}")
    p = report.pairs
    lines += [
        "",
        (f"structural total vs human total: spearman {report.total_spearman:.2f},"
         f" pearson {report.total_pearson:.2f}"
         f" (vs the human sum of the covered criteria: spearman {report.covered_spearman:.2f})"),
        (f"pairwise (same comparison, human totals differ): {p.pairs} pairs, offline decides {p.decided}"
         f" ({p.decided / p.pairs:.0%}), agrees with the experts on {p.agreement:.1%} of those;"
         f" 'longer wins' agrees on {p.length_agreement:.1%}; chance 50%"),
    ]  # fmt: skip
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/offline_agreement.py", description=__doc__.split("\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA, help="the cqa_evaluation folder")
    parser.add_argument("--flat", action="store_true", help="score the table's flattened texts")
    args = parser.parse_args(argv)
    if not (args.data / HUMAN_TABLE).is_file():
        print(f"no human evaluation table under {args.data}", file=sys.stderr)
        return 2
    print(format_report(measure(load_rows(args.data, flat=args.flat)), gpt4_kappa(args.data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
