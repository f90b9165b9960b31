"""AlpacaEval files: `model_outputs.json` (outputs) and `annotations.json` (judge preferences).

model_outputs.json is a list of {dataset, instruction, output, generator}: one submission each
(question = the instruction, question_id its default hash, model = the generator).
annotations.json is a list of {instruction, output_1, generator_1, output_2, generator_2,
annotator, preference, ...}: both outputs become submissions and each row one judgement of the
judge "import/alpaca_eval/<annotator>", output_1 as side a. AlpacaEval's preference codes:
1 = output_1 better, 2 = output_2 better, 0 or 1.5 = a draw; the weighted annotators give a
continuous preference in [1, 2], so the winner is the side of 1.5 it falls on (exactly 1.5 is a
tie) and the raw preference stays in the call record, from which the continuous win rate can
be recomputed. A missing preference (the annotator failed) skips the row, as AlpacaEval drops it.
AlpacaEval randomises the order it shows the judge and stores preferences mapped back, so the
display position is unknown (`first` is None).

Several runs of one generator differ (the text_davinci_003 outputs in AlpacaEval 1's
annotations are not those of its model_outputs.json): import them under different scenarios
(`scenario=`) or the second import stops at the first clashing row.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

from leaderboard.keys import content_hash, default_question_id
from leaderboard.types import Winner
from service.store import NewSubmission, Store
from service.store.imports import ImportedJudgement
from service.usecases.importers.common import (
    ImportFormatError,
    ImportSummary,
    Record,
    add_submissions,
    count_submissions,
    read_records,
    row_key,
    text_field,
    timed,
)

CRITERIA = "overall"
JUDGE_PREFIX = "import/alpaca_eval/"


@dataclass(frozen=True)
class Output:
    """One generator's output for one instruction."""

    line: int
    instruction: str
    output: str
    generator: str
    dataset: str | None


@dataclass(frozen=True)
class Annotation:
    """One preference between two outputs of one instruction; None when the annotator failed."""

    line: int
    first: Output
    second: Output
    annotator: str
    preference: float | None


def parse_outputs(path: Path) -> list[Output]:
    """The records of a model_outputs.json file."""
    outputs = [_output(path, r, "output", "generator") for r in read_records(path, "json")]
    if not outputs:
        raise ImportFormatError(path, None, "no outputs in the file")
    return outputs


def parse_annotations(path: Path) -> list[Annotation]:
    """The records of an annotations.json file."""
    rows = []
    for record in read_records(path, "json"):
        annotator = text_field(path, record, "annotator")
        assert annotator is not None
        rows.append(Annotation(
            line=record.line,
            first=_output(path, record, "output_1", "generator_1"),
            second=_output(path, record, "output_2", "generator_2"),
            annotator=annotator.strip(),
            preference=_preference(path, record),
        ))
    if not rows:
        raise ImportFormatError(path, None, "no annotations in the file")
    return rows


def _output(path: Path, record: Record, output: str, generator: str) -> Output:
    instruction = text_field(path, record, "instruction")
    name = text_field(path, record, generator)
    text = record.fields.get(output)
    if not isinstance(text, str):
        raise ImportFormatError(path, record.line, f"{output!r} must be text, found {type(text).__name__}")
    assert instruction is not None and name is not None
    return Output(record.line, instruction, text, name.strip(), text_field(path, record, "dataset", required=False))


def _preference(path: Path, record: Record) -> float | None:
    if "preference" not in record.fields:
        raise ImportFormatError(path, record.line, "missing 'preference'")
    value = record.fields["preference"]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ImportFormatError(path, record.line, f"preference {value!r} is not a number")
    if value != 0 and not 1 <= value <= 2:
        raise ImportFormatError(path, record.line, f"preference {value!r} is outside 1..2 (or 0 for a draw)")
    return float(value)


def winner_of(preference: float) -> Winner:
    """AlpacaEval's preference as a verdict on (output_1, output_2)."""
    if preference == 0 or preference == 1.5:
        return Winner.TIE
    return Winner.A if preference < 1.5 else Winner.B


def _submission(out: Output, scenario: str) -> NewSubmission:
    return NewSubmission(question_id=default_question_id(out.instruction), question=out.instruction,
                         model=out.generator, scenario=scenario, output=out.output,
                         metadata={"dataset": out.dataset} if out.dataset else {})


def load_outputs(store: Store, path: Path, *, scenario: str = "default") -> ImportSummary:
    """Import a model_outputs.json file as submissions, in one transaction."""
    started = time.perf_counter()
    path = Path(path)
    outputs = parse_outputs(path)
    summary = ImportSummary(source=path.name)
    with store.importing() as session:
        ids = add_submissions(session, path, [_submission(o, scenario) for o in outputs], [o.line for o in outputs])
    count_submissions(summary, ids)
    return timed(summary, started)


def load_annotations(store: Store, path: Path, *, scenario: str = "default") -> ImportSummary:
    """Import an annotations.json file: both outputs of each row and one judgement per row,
    one tournament per annotator, all in one transaction."""
    started = time.perf_counter()
    path = Path(path)
    rows = parse_annotations(path)
    label = "/".join(path.resolve().parts[-3:])  # <model>/<annotator>/annotations.json
    summary = ImportSummary(source=label)
    items = [_submission(o, scenario) for row in rows for o in (row.first, row.second)]
    with store.importing() as session:
        ids = add_submissions(session, path, items, [row.line for row in rows for _ in (0, 1)])
        count_submissions(summary, ids)
        by_annotator: dict[str, list[ImportedJudgement]] = {}
        for i, row in enumerate(rows):
            a_id, b_id = ids[2 * i][0], ids[2 * i + 1][0]
            if row.preference is None:
                summary.skipped += 1
                continue
            if a_id == b_id:
                raise ImportFormatError(path, row.line, "output_1 and output_2 are the same submission")
            by_annotator.setdefault(row.annotator, []).append(_judgement(path, row, a_id, b_id))
        for annotator, judgements in by_annotator.items():
            judge = JUDGE_PREFIX + annotator
            result = session.add_judgements(name=f"import {label}", source=label, judge=judge, criteria=CRITERIA,
                                            rows=judgements)
            summary.add_judgements(judge, result)
    return timed(summary, started)


def _judgement(path: Path, row: Annotation, a_id: int, b_id: int) -> ImportedJudgement:
    assert row.preference is not None
    outcome = winner_of(row.preference)
    call = {"first": None, "winner": outcome.value, "reason": "", "preference": row.preference,
            "annotator": row.annotator, "source": path.name, "line": row.line}
    key = row_key("alpaca_eval", row.annotator, content_hash(row.first.instruction), row.first.generator,
                  content_hash(row.first.output), row.second.generator, content_hash(row.second.output))
    return ImportedJudgement(key=key, a_id=a_id, b_id=b_id, outcome=outcome, calls=[call])
