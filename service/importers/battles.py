"""Battle files: who beat whom, without the outputs.

Chatbot Arena writes `model_a, model_b, winner` with winner one of model_a, model_b, tie,
"tie (bothbad)"; LLMFAO writes `left, right, winner` (the model names in display position, plus
`model_x, model_y` ids, `prompt`, `id`, `worker`) with winner left, right or tie. Either comes as
CSV, JSON (an array of objects) or JSONL. A `question_id`, `prompt` or `id` column (first found)
names the question; without one each row is its own question. Optional `scenario_a`/`scenario_b`
columns (as `joust export judgements` writes them) keep the prompt scenarios.

Battles carry no outputs, so each side becomes a submission with a fixed placeholder output;
each row becomes one judgement keyed by the judge, the file's name and the row (so importing the
same file again adds nothing), in file order (so online Elo replays it as written). Verdicts
are filed under `import/<name>`, or `human/<name>` when they are human votes (`--human`), which
judge health compares every other judge with.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from leaderboard.health import HUMAN_PREFIX
from leaderboard.types import PLACEHOLDER_OUTPUT, Winner
from service.store import NewSubmission, Store
from service.store.imports import ImportedJudgement

from .common import (
    ImportFormatError,
    ImportSummary,
    Record,
    add_submissions,
    count_submissions,
    csv_header,
    detect_format,
    read_records,
    row_key,
    text_field,
    timed,
)

PLACEHOLDER = PLACEHOLDER_OUTPUT  # live tournaments never pair these (service.store.submissions)
CRITERIA = "overall"
JUDGE_PREFIX = "import/"
# (first, second, names are display positions): LLMFAO's left/right say who was shown first.
SIDES = (("left", "right", True), ("model_a", "model_b", False), ("model_x", "model_y", False))
WINNERS = {"model_a": Winner.A, "left": Winner.A, "model_b": Winner.B, "right": Winner.B,
           "tie": Winner.TIE, "tie (bothbad)": Winner.TIE}
QUESTION_COLUMNS = ("question_id", "prompt", "id")
MAX_FIELD = 200  # extra scalar fields kept in the call record, cut to this many characters


@dataclass(frozen=True)
class BattleRow:
    """One verdict of a battle file; `outcome` is relative to side a."""

    line: int
    question_id: str
    question: str
    model_a: str
    scenario_a: str
    model_b: str
    scenario_b: str
    outcome: Winner
    positional: bool
    raw_winner: str
    extra: dict


def battle_judge(path: Path, judge: str | None, *, human: bool = False) -> str:
    """The judge the battles are filed under: `import/<name>`, or `human/<name>` for human votes
    (judge health compares the other judges with them); the name from --judge or the file."""
    name = (judge or path.stem).strip()
    if human:
        return name if name.startswith(HUMAN_PREFIX) else HUMAN_PREFIX + name.removeprefix(JUDGE_PREFIX)
    return name if name.startswith(JUDGE_PREFIX) else JUDGE_PREFIX + name


def parse_battles(path: Path, fmt: str | None = None) -> list[BattleRow]:
    """Every row of a battle file, validated; raises ImportFormatError naming the line."""
    fmt = detect_format(path, fmt)
    if fmt in ("csv", "tsv") and path.is_file():
        _check_header(path, csv_header(path, "\t" if fmt == "tsv" else ","))
    rows = [_battle(path, record) for record in read_records(path, fmt)]
    if not rows:
        raise ImportFormatError(path, None, "no battles in the file")
    return rows


def _check_header(path: Path, header: list[str]) -> None:
    if "winner" not in header:
        raise ImportFormatError(path, 1, f"missing column 'winner' (columns: {', '.join(header)})")
    if not any(a in header and b in header for a, b, _ in SIDES):
        raise ImportFormatError(path, 1, "missing the two sides: expected columns model_a and model_b "
                                         f"(or left and right, or model_x and model_y); columns: {', '.join(header)}")


def _sides(path: Path, record: Record) -> tuple[str, str, bool]:
    for first, second, positional in SIDES:
        if first in record.fields and second in record.fields:
            return first, second, positional
    raise ImportFormatError(path, record.line, "missing the two sides: expected model_a and model_b "
                                               "(or left and right, or model_x and model_y)")


def _battle(path: Path, record: Record) -> BattleRow:
    first, second, positional = _sides(path, record)
    model_a = (text_field(path, record, first) or "").strip()
    model_b = (text_field(path, record, second) or "").strip()
    raw = text_field(path, record, "winner") or ""
    outcome = WINNERS.get(raw.strip().lower())
    if outcome is None:
        allowed = ", ".join(sorted(WINNERS))
        raise ImportFormatError(path, record.line, f"unknown winner {raw!r}; expected one of {allowed}")
    question_id = next((q for q in (text_field(path, record, c, required=False) for c in QUESTION_COLUMNS) if q),
                       f"{path.stem}:{record.line}")
    scenario_a = (text_field(path, record, "scenario_a", required=False) or "default").strip()
    scenario_b = (text_field(path, record, "scenario_b", required=False) or "default").strip()
    if (model_a, scenario_a) == (model_b, scenario_b):
        raise ImportFormatError(path, record.line, f"both sides are {model_a!r} ({scenario_a}): nothing to compare")
    used = {first, second, "winner"}
    extra = {k: (v[:MAX_FIELD] if isinstance(v, str) else v) for k, v in record.fields.items()
             if k not in used and (v is None or isinstance(v, (str, int, float, bool)))}
    return BattleRow(
        line=record.line,
        question_id=question_id,
        question=text_field(path, record, "prompt", required=False) or question_id,
        model_a=model_a,
        scenario_a=scenario_a,
        model_b=model_b,
        scenario_b=scenario_b,
        outcome=outcome,
        positional=positional,
        raw_winner=raw,
        extra=extra,
    )


def load_battles(
    store: Store, path: Path, *, judge: str | None = None, fmt: str | None = None, human: bool = False
) -> ImportSummary:
    """Import a battle file in one transaction: submissions, then one judgement per row;
    `human` files the verdicts as human votes (`human/<name>`)."""
    started = time.perf_counter()
    path = Path(path)
    rows = parse_battles(path, fmt)
    judge_name = battle_judge(path, judge, human=human)
    items, lines = [], []
    for row in rows:
        for model, scenario in ((row.model_a, row.scenario_a), (row.model_b, row.scenario_b)):
            items.append(NewSubmission(question_id=row.question_id, question=row.question, model=model,
                                       scenario=scenario, output=PLACEHOLDER, metadata={"import": path.name}))
            lines.append(row.line)
    summary = ImportSummary(source=path.name)
    with store.importing() as session:
        ids = add_submissions(session, path, items, lines)
        count_submissions(summary, ids)
        judgements = [_judgement(judge_name, path, row, ids[2 * i][0], ids[2 * i + 1][0]) for i, row in enumerate(rows)]
        result = session.add_judgements(name=f"import {path.name}", source=path.name, judge=judge_name,
                                        criteria=CRITERIA, rows=judgements)
    summary.add_judgements(judge_name, result)
    return timed(summary, started)


def _judgement(judge: str, path: Path, row: BattleRow, a_id: int, b_id: int) -> ImportedJudgement:
    """The row as a stored verdict. With display positions known, the call says who was shown
    first (side a) and its winner is positional; otherwise `first` is None."""
    call = {"first": a_id if row.positional else None, "winner": row.outcome.value, "reason": "",
            "raw": row.raw_winner, "source": path.name, "line": row.line, "fields": row.extra}
    key = row_key("battle", judge, path.name, row.line, row.question_id, row.model_a, row.scenario_a,
                  row.model_b, row.scenario_b, row.raw_winner)
    return ImportedJudgement(key=key, a_id=a_id, b_id=b_id, outcome=row.outcome, calls=[call])
