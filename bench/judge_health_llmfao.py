"""Judge health on LLMFAO: GPT-4's and GPT-3.5-turbo-instruct's position bias and agreement
with the crowd, through the same import and statistics the service uses.

Not a test: run `python bench/judge_health_llmfao.py [LLMFAO_DIR]` (a few seconds).

The crowd votes (`crowd-comparisons.csv`, 8,931 votes on 2,139 pairs) are imported as the human
judge `human/crowd`, and the two LLM judges' verdicts on the same pairs
(`gpt4-crowd-comparisons.csv`, `gpt3-crowd-comparisons.csv`) as `import/gpt-4` and
`import/gpt-3.5-turbo-instruct`, with `joust import battles`' loader into a throw-away SQLite
store; the table is `store.judge_health()`. Every file records which model was shown on the
left (first), so the first-position win rate is measurable for all three. Agreement is per
(judge verdict, crowd vote) on the same pair, a tie agreeing only with a tie; the judges'
verdicts were made on the same pairs, shown in the same order as to the crowd (`left` is always
`model_x` in all three files). The files carry no outputs, so consistency, parse failures and
the longer-answer rate are n/a. `human_alpha` is Krippendorff's alpha with the crowd's votes
(`leaderboard.judge_alpha`: each pair counted from both sides, a seeded bootstrap over pairs),
and the line after the table the alpha between the two judges. Printed after that, for context: how often two crowd
voters agree on the same pair, and each judge's agreement on the votes where both it and the
voter named a winner.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboard.judge_alpha import VoteTable, seeded_alpha  # noqa: E402
from leaderboard.judge_health import (  # noqa: E402
    HealthReport,
    JudgementRecord,
    human_agreement,
    human_votes,
    voter_agreement,
)
from service.store import Store  # noqa: E402
from service.usecases.importers.battles import load_battles  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "llmfao"
FILES = (("crowd-comparisons.csv", "crowd", True), ("gpt4-crowd-comparisons.csv", "gpt-4", False),
         ("gpt3-crowd-comparisons.csv", "gpt-3.5-turbo-instruct", False))
COLUMNS = ("judge", "calls", "first_position_win_rate", "tie_rate", "human_agreement", "human_pairs", "human_votes",
           "human_alpha", "human_alpha_low", "human_alpha_high")


def measure(data: Path) -> tuple[HealthReport, list[JudgementRecord]]:
    """Import the three files into a temporary store; every judge's health and the records."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'joust.db'}")
        try:
            for name, judge, human in FILES:
                load_battles(store, data / name, judge=judge, human=human)
            return store.health_report(), store.health_records()
        finally:
            store.close()


def context(records: list[JudgementRecord]) -> list[str]:
    """What the agreement figures are read against: crowd voters with each other, and each
    judge's agreement on the votes where both it and the voter named a winner."""
    votes = human_votes(records)
    table = VoteTable(votes)
    among = seeded_alpha(table.counts[table.counts.sum(axis=1) >= 2])
    lines = [f"crowd voter vs another voter on the same pair: {cell(voter_agreement(votes))}",
             f"Krippendorff's alpha among the crowd's votes ({among.units} pairs with two votes or more): "
             f"{cell(among.alpha)} [{cell(among.low)}, {cell(among.high)}]"]
    for _name, judge, human in FILES:
        if not human:
            own = [r for r in records if r.judge == f"import/{judge}"]
            decided = human_agreement(own, votes, decided=True)
            lines.append(f"import/{judge}, both naming a winner: {cell(decided.rate)} over {decided.votes} votes")
    return lines


def cell(value: object) -> str:
    if value is None:
        return "n/a"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA, help="the llmfao directory")
    args = parser.parse_args()
    started = time.perf_counter()
    report, records = measure(args.data)
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for h in report.judges:
        print("| " + " | ".join(cell(getattr(h, c)) for c in COLUMNS) + " |")
    for a in report.judge_alphas:
        print(f"\nKrippendorff's alpha, {a.judge} vs {a.other} on {a.pairs} pairs: "
              f"{cell(a.alpha)} [{cell(a.ci_low)}, {cell(a.ci_high)}]")
    print("\nAgreement in context:")
    for line in context(records):
        print(f"- {line}")
    print(f"\n({time.perf_counter() - started:.1f} s, import included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
