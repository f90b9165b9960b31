"""What every importer shares: the errors, reading records with their line numbers, keys, summaries.

CSV, TSV, JSON and JSONL are read by hand (csv, json), Parquet through pandas: measured with
bench/io.py, `pd.read_csv(...).to_dict("records")` is 3-4x slower than `csv.reader` for the
records the loaders need (LLMFAO's 8,931 votes and 200,000 exported judgements alike) and
`read_json(lines=True)` about 2x slower than `json.loads` per line; and neither can say on which
line a row starts once a quoted cell spans lines, which every `file:line` error needs. A
Parquet row is named by its number instead (`file.parquet:3` is its third row).

Exceptions (each names the file and, where it can, the line):
    ImportFailed          the file cannot be imported; nothing was stored
    ├── ImportFormatError the file is malformed (missing column, unknown value, broken JSON)
    └── ImportConflict    a row clashes with what the store already holds (a different output
                          under the same question, model and scenario; a different score)
"""
from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.keys import content_hash
from service.store import NewSubmission
from service.store.imports import BatchConflict, ImportSession, JudgementImport

FORMATS = ("csv", "tsv", "json", "jsonl", "parquet")
CSV_FIELD_LIMIT = 1 << 30  # characters; Python's csv refuses fields over 128 KiB, and outputs can be longer


class ImportFailed(Exception):
    """A file that cannot be imported; `line` is 1-based (None when the whole file is at fault)."""

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ImportFormatError(ImportFailed):
    """The file is malformed at `line`."""


class ImportConflict(ImportFailed):
    """The row at `line` clashes with what the store already holds."""


@dataclass(frozen=True)
class Record:
    """One row or object of a file, with the line it starts on."""

    line: int
    fields: dict[str, Any]


@dataclass
class ImportSummary:
    """What an import stored, for the one-line report."""

    source: str
    submissions_created: int = 0
    submissions_existing: int = 0
    judgements_created: int = 0
    judgements_existing: int = 0
    scores_created: int = 0
    scores_existing: int = 0
    skipped: int = 0
    tournaments: list[int] = field(default_factory=list)
    layers: int = 0
    judges: list[str] = field(default_factory=list)
    ignored_columns: list[str] = field(default_factory=list)
    votes: int = 0
    matched_votes: int | None = None  # votes whose two sides are stored outputs (--human); None: not matched
    questions_filled: int = 0  # stored submissions whose question text (their id) the file filled in
    seconds: float = 0.0

    def add_judgements(self, judge: str, result: JudgementImport) -> None:
        self.judgements_created += result.created
        self.judgements_existing += result.existing
        if judge not in self.judges:
            self.judges.append(judge)
        if result.tournament_id is not None:
            self.tournaments.append(result.tournament_id)
        self.layers += len(result.layers)

    def line(self) -> str:
        """The one-line report the CLI prints."""
        parts = [f"submissions {self.submissions_created} new, {self.submissions_existing} existing"]
        if self.judges:
            parts.append(f"judgements {self.judgements_created} new, {self.judgements_existing} existing")
        if self.scores_created or self.scores_existing:
            parts.append(f"scores {self.scores_created} new, {self.scores_existing} existing")
        if self.skipped:
            parts.append(f"{self.skipped} rows skipped")
        if self.questions_filled:
            parts.append(f"question text filled in for {self.questions_filled} stored submission"
                         + ("s" if self.questions_filled != 1 else ""))
        if self.matched_votes is not None:
            parts.append(f"{self.matched_votes} of {self.votes} votes on stored submissions with outputs")
        if self.judges:
            parts.append(("judge " if len(self.judges) == 1 else "judges ") + _some(self.judges))
            parts.append(("tournament " if len(self.tournaments) < 2 else "tournaments ")
                         + (_some(list(map(str, self.tournaments))) or "none (nothing new)")
                         + (f" (+{self.layers} layers for repeated pairs)" if self.layers else ""))
        if self.ignored_columns:
            parts.append(f"ignored columns: {', '.join(self.ignored_columns)}")
        return f"imported {self.source}: {'; '.join(parts)} ({self.seconds:.2f}s)"


def _some(names: Sequence[str], shown: int = 10) -> str:
    """Names for a one-line report: the first `shown`, then how many more."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def timed(summary: ImportSummary, started: float) -> ImportSummary:
    summary.seconds = time.perf_counter() - started
    return summary


def row_key(*parts: object) -> str:
    """The stable key of one imported row: a hash of its source and identity."""
    return content_hash("\x1f".join(str(p) for p in parts))


def detect_format(path: Path, given: str | None) -> str:
    """The --format flag, else the file's extension."""
    if given:
        if given not in FORMATS:
            raise ImportFormatError(path, None, f"unknown format {given!r}; use one of {', '.join(FORMATS)}")
        return given
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("ndjson",):
        return "jsonl"
    if suffix == "pq":
        return "parquet"
    if suffix in FORMATS:
        return suffix
    raise ImportFormatError(path, None, f"cannot tell the format from {path.name!r}; pass --format {'|'.join(FORMATS)}")


def read_records(path: Path, fmt: str) -> Iterator[Record]:
    """The file's rows or objects, each with the line it starts on."""
    if not path.is_file():
        raise ImportFormatError(path, None, "no such file")
    if fmt in ("csv", "tsv"):
        records = _csv_records(path, "\t" if fmt == "tsv" else ",")
    elif fmt == "jsonl":
        records = _jsonl_records(path)
    elif fmt == "parquet":
        records = _parquet_records(path)
    else:
        records = _json_records(path)
    return _decoded(path, records)


def _decoded(path: Path, records: Iterator[Record]) -> Iterator[Record]:
    try:
        yield from records
    except UnicodeDecodeError as exc:
        raise ImportFormatError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _csv_records(path: Path, delimiter: str) -> Iterator[Record]:
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            raise ImportFormatError(path, 1, "empty file: expected a header row") from None
        except csv.Error as exc:
            raise ImportFormatError(path, 1, f"broken CSV: {exc}") from None
        header = [h.strip() for h in header]
        start = reader.line_num + 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise ImportFormatError(path, start, f"broken CSV: {exc}") from None
            if row:
                if len(row) != len(header):
                    raise ImportFormatError(path, start, f"expected {len(header)} fields, found {len(row)}")
                yield Record(start, dict(zip(header, row)))
            start = reader.line_num + 1


def csv_header(path: Path, delimiter: str = ",") -> list[str]:
    """The column names of a CSV file (to check them before reading any row)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            return [h.strip() for h in next(csv.reader(fh, delimiter=delimiter), [])]
    except UnicodeDecodeError as exc:
        raise ImportFormatError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise ImportFormatError(path, 1, f"broken CSV header: {exc}") from None


def _jsonl_records(path: Path) -> Iterator[Record]:
    with path.open(encoding="utf-8-sig") as fh:
        for number, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ImportFormatError(path, number, f"broken JSON: {exc.msg} (column {exc.colno})") from None
            yield Record(number, _object(path, number, value))


def _json_records(path: Path) -> Iterator[Record]:
    """A JSON array of objects, decoded element by element so each knows its line."""
    text = path.read_text(encoding="utf-8-sig")
    decoder = json.JSONDecoder()
    pos, line = _skip_space(text, 0), 1
    if pos >= len(text) or text[pos] != "[":
        raise ImportFormatError(path, _line_at(text, pos), "expected a JSON array of objects")
    pos = _skip_space(text, pos + 1)
    counted_to, first = 0, True
    while True:
        line += text.count("\n", counted_to, pos)
        counted_to = pos
        if pos < len(text) and text[pos] == "]" and first:
            pos += 1
            break
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(path, exc.lineno, f"broken JSON: {exc.msg} (column {exc.colno})") from None
        yield Record(line, _object(path, line, value))
        pos, first = _skip_space(text, end), False
        if pos < len(text) and text[pos] == ",":
            pos = _skip_space(text, pos + 1)
            continue
        if pos < len(text) and text[pos] == "]":
            pos += 1
            break
        raise ImportFormatError(path, _line_at(text, pos), "broken JSON: expected ',' or ']' after an element")
    if _skip_space(text, pos) != len(text):
        raise ImportFormatError(path, _line_at(text, pos), "broken JSON: extra data after the array")


def _parquet_records(path: Path) -> Iterator[Record]:
    """A Parquet file's rows through pandas (pyarrow); a row's "line" is its number, from 1.
    Cells come typed, as JSON's do: a null is None, numpy scalars plain Python values."""
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except ImportError as exc:
        raise ImportFormatError(path, None, f"reading Parquet needs pyarrow (pip install 'joust[parquet]'): {exc}") from None
    except (OSError, ValueError) as exc:
        raise ImportFormatError(path, None, f"not a Parquet file: {exc}") from None
    columns = [str(c) for c in frame.columns]
    missing = (None, pd.NA, pd.NaT)
    for number, row in enumerate(frame.itertuples(index=False, name=None), start=1):
        yield Record(number, {c: _cell(v, missing) for c, v in zip(columns, row)})


def _cell(value: Any, missing: tuple[Any, ...]) -> Any:
    """A Parquet cell as JSON would have it: None for a null (NaN, NA, NaT), plain scalars."""
    if isinstance(value, np.generic):
        value = value.item()
    if any(value is m for m in missing) or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _object(path: Path, line: int, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ImportFormatError(path, line, f"expected a JSON object, found {type(value).__name__}")
    return value


def text_field(path: Path, record: Record, name: str, *, required: bool = True) -> str | None:
    """A field as text: missing or empty is an error when required, else None."""
    value = record.fields.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ImportFormatError(path, record.line, f"missing {name!r}")
        return None
    if isinstance(value, (dict, list, bool)):
        raise ImportFormatError(path, record.line, f"{name!r} must be text, found {type(value).__name__}")
    return str(value)


def add_submissions(
    session: ImportSession, path: Path, items: Sequence[NewSubmission], lines: Sequence[int]
) -> list[tuple[int, bool]]:
    """Bulk submissions, a clash reported at the line of the row that caused it."""
    try:
        return session.add_submissions(items)
    except BatchConflict as exc:
        raise ImportConflict(path, lines[exc.index], str(exc)) from None


def count_submissions(summary: ImportSummary, ids: Sequence[tuple[int, bool]]) -> None:
    """Add (id, created) results to a summary, each submission once."""
    created = {sid for sid, new in ids if new}
    summary.submissions_created += len(created)
    summary.submissions_existing += len({sid for sid, _ in ids} - created)

