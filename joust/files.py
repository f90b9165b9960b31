"""Submission files read through pandas: CSV, TSV, JSON (an array of objects), JSONL and, where
pyarrow is installed, Parquet; what `joust submit FILE` sends with `Client.submit`.

Every cell is read as written: CSV and TSV cells as text (so a question_id "007" stays "007"),
JSON values as JSON has them (no dates guessed, no numbers widened). An empty cell is a missing
one, so the API's default applies. A `metadata` cell given as text (CSV, TSV, a Parquet string
column) is JSON and must hold an object.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["FORMATS", "FileError", "read_submissions", "table_format"]

FORMATS = ("csv", "tsv", "json", "jsonl", "parquet")
SUFFIXES = {"csv": "csv", "tsv": "tsv", "tab": "tsv", "json": "json", "jsonl": "jsonl", "ndjson": "jsonl",
            "parquet": "parquet", "pq": "parquet"}
# pandas 2 guesses dates from column names unless told not to; pandas 3 does not (dtype=False)
# and deprecates the flag.
NO_DATES = {"convert_dates": False} if int(pd.__version__.split(".")[0]) < 3 else {}


class FileError(ValueError):
    """A file that cannot be read as submissions; the message names the file."""


def table_format(path: Path, given: str | None = None) -> str:
    """The format: `given`, else the file's extension."""
    fmt = given or SUFFIXES.get(path.suffix.lower().lstrip("."))
    if fmt not in FORMATS:
        raise FileError(f"{path}: unknown format {given!r}; use one of {', '.join(FORMATS)}" if given else
                        f"{path}: cannot tell the format from {path.name!r}; pass --format {'|'.join(FORMATS)}")
    return fmt


def read_submissions(path: str | Path, fmt: str | None = None) -> pd.DataFrame:
    """The file's rows as a DataFrame (columns question, model, output, and optionally scenario,
    question_id, metadata); FileError naming the file for one that cannot be read."""
    path = Path(path)
    fmt = table_format(path, fmt)
    if not path.is_file():
        raise FileError(f"{path}: no such file")
    try:
        frame = _read(path, fmt)
    except ImportError as exc:
        raise FileError(f"{path}: reading {fmt} needs pyarrow (pip install 'joust[parquet]'): {exc}") from None
    except (ValueError, UnicodeDecodeError, OSError, pd.errors.ParserError) as exc:
        raise FileError(f"{path}: not readable as {fmt}: {exc}") from None
    if "metadata" in frame.columns:
        frame["metadata"] = [_metadata(path, i, v) for i, v in enumerate(frame["metadata"], start=1)]
    return frame


def _read(path: Path, fmt: str) -> pd.DataFrame:
    if fmt in ("csv", "tsv"):
        return pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", dtype=str, keep_default_na=False,
                           na_values=[""], encoding="utf-8-sig")
    if fmt == "parquet":
        return pd.read_parquet(path)
    frame = pd.read_json(path, lines=fmt == "jsonl", orient="records", dtype=False, encoding="utf-8-sig",
                         **NO_DATES)
    return frame


def _metadata(path: Path, row: int, value: Any) -> Any:
    """A metadata cell: an object as it is, JSON text parsed, a missing cell left missing."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise FileError(f"{path}: row {row}: metadata is not JSON: {exc.msg}") from None
    if not isinstance(parsed, dict):
        raise FileError(f"{path}: row {row}: metadata must be a JSON object, found {type(parsed).__name__}")
    return parsed
