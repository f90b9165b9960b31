"""Submission files read through pandas: CSV, TSV, JSON (an array of objects), JSONL and, where
pyarrow is installed, Parquet; what `joust submit FILE` sends with `Client.submit`.

Every cell is read as written: CSV and TSV cells as text (so a question_id "007" stays "007"),
JSON values as JSON has them (no dates guessed, no numbers widened). An empty cell is a missing
one, so the API's default applies. A `metadata` cell given as text (CSV, TSV, a Parquet string
column) is JSON and must hold an object.

An `output` that is a conversation (a JSON list of `{"role", "content"}` turns, as MT-Bench's
two; JSON, JSONL and Parquet only: a CSV cell is text) is kept apart turn by turn by default
(`conversations="turns"`): the k-th user turn and the assistant's reply to it become a row of
their own, question_id suffixed `#turn<k>` from the second turn on, as joust's importers name a
later turn, so imported votes on it meet these outputs (turn 1 keeps the id; with no question_id
each turn's question is hashed apart by the API) and `turn` k in its metadata.
`conversations="whole"` keeps the list, so the API judges the whole conversation.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CONVERSATIONS", "FORMATS", "FileError", "read_submissions", "split_turns", "table_format"]

CONVERSATIONS = ("turns", "whole")  # a conversation's turns as questions of their own, or judged whole

FORMATS = ("csv", "tsv", "json", "jsonl", "parquet")
SUFFIXES = {"csv": "csv", "tsv": "tsv", "tab": "tsv", "json": "json", "jsonl": "jsonl", "ndjson": "jsonl",
            "parquet": "parquet", "pq": "parquet"}


class FileError(ValueError):
    """A file that cannot be read as submissions; the message names the file."""


def table_format(path: Path, given: str | None = None) -> str:
    """The format: `given`, else the file's extension."""
    fmt = given or SUFFIXES.get(path.suffix.lower().lstrip("."))
    if fmt not in FORMATS:
        raise FileError(f"{path}: unknown format {given!r}; use one of {', '.join(FORMATS)}" if given else
                        f"{path}: cannot tell the format from {path.name!r}; pass --format {'|'.join(FORMATS)}")
    return fmt


def read_submissions(path: str | Path, fmt: str | None = None, conversations: str = "turns") -> pd.DataFrame:
    """The file's rows as a DataFrame (columns question, model, output, and optionally scenario,
    question_id, reference, metadata), conversations split into turns or kept whole (module
    docstring); FileError naming the file for one that cannot be read."""
    import pandas as pd  # here, not at the top: `import joust` stays light (see joust.client)

    if conversations not in CONVERSATIONS:
        raise ValueError(f"conversations: {conversations!r} is not one of {', '.join(CONVERSATIONS)}")
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
    if conversations == "turns" and "output" in frame.columns:
        frame = split_turns(path, frame)
    return frame


def split_turns(path: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """Each conversation row as one row per user turn answered (module docstring); other rows
    as they are. A turn list that is not user/assistant pairs is FileError naming its row."""
    if not any(isinstance(v, list) for v in frame["output"]):
        return frame
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for number, row in enumerate(frame.to_dict("records"), start=1):
        turns = row["output"]
        if not isinstance(turns, list):
            rows.append(row)
            continue
        for k, (ask, reply) in enumerate(_exchanges(path, number, turns), start=1):
            split = {**row, "question": ask, "output": reply}
            metadata = row.get("metadata")
            split["metadata"] = {**(metadata if isinstance(metadata, dict) else {}), "turn": k}
            question_id = row.get("question_id")
            if k > 1 and isinstance(question_id, str) and question_id:
                split["question_id"] = f"{question_id}#turn{k}"
            rows.append(split)
    columns = list(frame.columns) + [c for c in ("question", "metadata") if c not in frame.columns]
    return pd.DataFrame.from_records(rows, columns=columns)


def _exchanges(path: Path, row: int, turns: list[Any]) -> list[tuple[str, str]]:
    """(user turn, the assistant's reply) pairs of one conversation, in order."""
    pairs = []
    for i in range(0, len(turns), 2):
        pair = turns[i:i + 2]
        roles = [t.get("role") if isinstance(t, dict) else None for t in pair]
        if roles != ["user", "assistant"] or not all(isinstance(t.get("content"), str) for t in pair):
            raise FileError(f"{path}: row {row}: turns {i + 1}-{i + 2} are not a user turn and the assistant's "
                            "reply (pass --conversations whole to send the conversation as it is)")
        pairs.append((pair[0]["content"], pair[1]["content"]))
    return pairs


def _no_dates() -> dict[str, Any]:
    """pandas 2 guesses dates from column names unless told not to; pandas 3 does not
    (dtype=False) and deprecates the flag."""
    import pandas as pd

    return {"convert_dates": False} if int(pd.__version__.split(".")[0]) < 3 else {}


def _read(path: Path, fmt: str) -> pd.DataFrame:
    import pandas as pd

    if fmt in ("csv", "tsv"):
        return pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", dtype=str, keep_default_na=False,
                           na_values=[""], encoding="utf-8-sig")
    if fmt == "parquet":
        return pd.read_parquet(path)
    frame = pd.read_json(path, lines=fmt == "jsonl", orient="records", dtype=False, encoding="utf-8-sig",
                         **_no_dates())
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
