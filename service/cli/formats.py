"""How the CLI's HTTP commands print what the client returns: a frame as an aligned table, CSV
or a JSON array (`OUTPUTS`, the choices of their `--format`), and a client value as the API's JSON.

Kept apart from `service.cli.remote_cli`, whose commands turn flags into client calls: the
printing is shared by every command over HTTP (`service.cli.remote_judges` too) and knows
nothing of the commands or the server.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from joust.types import DryRun, Tournament

# pandas is imported by the one printer that needs it at run time (see `service.cli.remote_cli`).
if TYPE_CHECKING:
    import pandas as pd

OUTPUTS = ("table", "csv", "json")


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def plain(value: Tournament | DryRun) -> dict[str, Any]:
    """A client value as the API's JSON had it: its fields, then what it kept in `extra`."""
    fields = asdict(value)
    extra = fields.pop("extra", {})
    if isinstance(value, Tournament):
        fields["status"] = value.status.value
        fields["runs"] = list(value.runs)
        fields.pop("queued")
    return {**fields, **extra}


def write_frame(frame: pd.DataFrame, fmt: str, *, empty: str) -> None:
    """A frame on stdout: an aligned table (one decimal for ratings), CSV, or a JSON array."""
    if fmt == "csv":
        frame.to_csv(sys.stdout, index=False)
    elif fmt == "json":  # each number exactly as the API sent it (pandas' to_json keeps 15 digits)
        print(json.dumps([{k: cell(v) for k, v in row.items()} for row in frame.to_dict("records")],
                         ensure_ascii=False, default=str))
    elif frame.empty:
        print(empty, file=sys.stderr)
    else:
        print(frame.to_string(index=False, na_rep="-", float_format=lambda x: f"{x:.1f}"))


def cell(value: Any) -> Any:
    """A frame's cell as JSON carries it: None for NaN, NA and NaT; numpy scalars as Python's."""
    import pandas as pd

    if isinstance(value, (list, tuple, dict)):
        return value
    if pd.isna(value):
        return None
    return value.item() if hasattr(value, "item") and not isinstance(value, pd.Timestamp) else value
