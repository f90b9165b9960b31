"""`joust export`: judgements and leaderboards as CSV or JSONL, for spreadsheets and other tools.

A judgement row is a battle file row (`question_id, model_a, model_b, winner` with winner
model_a / model_b / tie, as Chatbot Arena writes it, plus `scenario_a, scenario_b`), so an
export is also an import, and one that loses nothing: `joust import battles` of either format
into an empty store gives the same boards and judge health (the columns:
`service.usecases.importers.columns`). Besides the verdict, a row carries what restores it: its `key`,
judge, criteria, prompt `template_version`, `order_policy`, tokens, cost, `created_at`, the
question's text (side b's too, in `question_b`, where its submission holds another text: a
placeholder's text is its question id), both outputs (`output_a`, `output_b`; empty for a
placeholder, which has none) and every call as joust stored it (`calls`, each call's `first` named by the row's
`a_id`/`b_id`). Rows are the ones the leaderboard counts, in the order it replays them (a
judgement shared by several tournaments appears once).

CSV spells out each call's first/winner/reason as call<i>_* columns for people, puts the long
texts last, and keeps `calls` as JSON text. JSONL adds what a reader of one judgement wants on
its line: `time` (ISO 8601, UTC, when it was judged), `label_a` / `label_b` ("model/scenario"),
`order` (per call, which side was shown first: "a" or "b"; null when a file did not say),
`reason` (the first call's), and `len_a` / `len_b` (the outputs' lengths in characters).
Parquet (with pyarrow installed) has the CSV's columns, typed, without the call<i>_* ones.

CSV and JSONL are written row by row with the standard library, not through pandas: measured
with bench/io.py, `DataFrame.to_csv` of the same cells is no faster, and `to_json` rounds floats
(`double_precision` at most 15) and turns an integer column with a gap into floats, which would
break the lossless round trip; Parquet, which needs a typed table, goes through pandas.

A board is one judge's, as on the API (`leaderboard.judges`): `--judge` names it (`human` for
every human voter together), else it is chosen by the API's rule and `joust export` says which on
stderr. Its rows come by component of the comparison graph (`component`, 1 = the largest), best
first within one, `rank` counting within the component, and each row names its `judge`.
"""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, BinaryIO, TextIO

from leaderboard.board import build_board
from leaderboard.board_slice import WHOLE, BoardSlice
from leaderboard.judges import JudgeChoice, choose_judge
from leaderboard.players import battles_at_level
from leaderboard.types import PLACEHOLDER_OUTPUT, Level
from service.store import Store
from service.usecases.importers.columns import CALL_FIELDS, EXPORTED, TEXTS, WINNER_NAMES, cell
from service.usecases.progress import tracked

FORMATS = ("csv", "jsonl", "parquet")
BOARD_COLUMNS = ["component", "rank", "player", "rating", "ci_low", "ci_high", "elo", "wins", "losses", "ties",
                 "matches", "points", "win_rate", "judge"]
LEVELS = {"model": Level.MODEL, "scenario": Level.SCENARIO, "model+scenario": Level.SYSTEM, "system": Level.SYSTEM}


def judgement_rows(store: Store, *, tournament_id: int | None = None, judge: str | None = None) -> list[dict]:
    """One row per counted judgement, oriented to its match; `calls` as stored, `first` by id."""
    rows = []
    for row in store.export_judgements(tournament_id=tournament_id, judge=judge):
        calls = row["calls"]
        sides = {row["a_id"]: "a", row["b_id"]: "b"}
        rows.append({**{c: row.get(c) for c in EXPORTED}, "winner": WINNER_NAMES[row["outcome"]],
                     "calls": calls,
                     "time": datetime.fromtimestamp(row["created_at"], tz=timezone.utc).isoformat(timespec="seconds"),
                     "question": row["question"], "question_b": row["question_b"],
                     "output_a": _text(row["output_a"]), "output_b": _text(row["output_b"]),
                     "label_a": f"{row['model_a']}/{row['scenario_a']}", "label_b": f"{row['model_b']}/{row['scenario_b']}",
                     "order": [sides.get(call.get("first")) for call in calls],
                     "reason": calls[0].get("reason") if calls else None,
                     "len_a": row["len_a"], "len_b": row["len_b"]})
    return rows


def _text(output: str) -> str | None:
    """An output as exported: None for a placeholder (a battle imported without outputs)."""
    return None if output == PLACEHOLDER_OUTPUT else output


def board_judge(store: Store, *, tournament_id: int | None = None, judge: str | None = None) -> JudgeChoice:
    """Whose board to export: `judge`, else the one the API would serve. NotFound for an unknown
    tournament; `leaderboard.judges.UnknownJudge` for a judge without verdicts there."""
    if tournament_id is not None:
        store.get_tournament(tournament_id)
    summaries, _ = store.judge_summaries(tournament_id=tournament_id)
    return choose_judge(summaries, judge)


def board_rows(store: Store, level: Level, *, k: float, judge: str, tournament_id: int | None = None,
               part: BoardSlice = WHOLE) -> list[dict]:
    """One judge's leaderboard at one level, by component and best first within one, as the API
    computes it (`board_judge` says whose), of the verdicts `part` counts (a turn; each pair's majority)."""
    if tournament_id is not None:
        store.get_tournament(tournament_id)  # NotFound for an unknown id
    rows = part.rows(store.side_rows(tournament_id=tournament_id, judge=judge, turn=part.turn))
    battles = battles_at_level(rows, level)
    return [
        {"component": r.component, "rank": r.rank, "player": r.player, "rating": _finite(r.rating),
         "ci_low": _finite(r.ci_low), "ci_high": _finite(r.ci_high), "elo": _finite(r.elo), "wins": r.wins,
         "losses": r.losses, "ties": r.ties, "matches": r.matches, "points": _finite(r.points),
         "win_rate": _finite(r.win_rate), "judge": judge}
        for r in build_board(battles, k=k)
    ]


def write_judgements(rows: Sequence[dict], fmt: str, out: TextIO | BinaryIO, *, progress: bool = False) -> None:
    """CSV spells the calls out into call<i>_first/_winner/_reason columns and keeps them whole
    as JSON in `calls` (the column the import reads); JSONL keeps a list; Parquet (a binary
    `out`) has the CSV's typed columns without the call<i>_* ones, `calls` as JSON text."""
    shown = tracked(rows, show=progress, desc="exporting judgements", total=len(rows))
    if fmt == "jsonl":
        _write_jsonl(shown, out)  # type: ignore[arg-type]
        return
    if fmt == "parquet":
        columns = [*EXPORTED, *TEXTS, "calls"]
        cells = [[*(row[c] for c in columns[:-1]), json.dumps(row["calls"], ensure_ascii=False, allow_nan=False)]
                 for row in shown]
        _write_parquet(cells, columns, out)  # type: ignore[arg-type]
        return
    width = max((len(r["calls"]) for r in rows), default=0)
    flat = [f"call{i}_{name}" for i in range(1, width + 1) for name in CALL_FIELDS]
    cells = []
    for row in shown:
        line = {c: row[c] for c in [*EXPORTED, *TEXTS]}
        for i, call in enumerate(row["calls"], start=1):
            line.update({f"call{i}_{name}": call.get(name) for name in CALL_FIELDS})
        line["calls"] = json.dumps(row["calls"], ensure_ascii=False, allow_nan=False)
        cells.append(line)
    _write_csv(cells, [*EXPORTED, *flat, *TEXTS, "calls"], out)  # type: ignore[arg-type]


def write_board(rows: Sequence[dict], fmt: str, out: TextIO | BinaryIO, *, progress: bool = False) -> None:
    """The board's rows in CSV (a header, then best first), JSONL or Parquet (a binary `out`)."""
    if fmt == "jsonl":
        _write_jsonl(rows, out)  # type: ignore[arg-type]
    elif fmt == "parquet":
        _write_parquet([[row.get(c) for c in BOARD_COLUMNS] for row in rows], BOARD_COLUMNS, out)  # type: ignore[arg-type]
    else:
        _write_csv(rows, BOARD_COLUMNS, out)  # type: ignore[arg-type]


def _write_parquet(cells: list[list[Any]], columns: list[str], out: BinaryIO) -> None:
    """Rows as a Parquet file through pandas (pyarrow): each column typed from its values (an
    integer column with empty cells stays integer, with nulls)."""
    import pandas as pd

    frame = pd.DataFrame(cells, columns=columns, dtype=object)
    try:
        frame.to_parquet(out, index=False, engine="pyarrow")
    except ImportError as exc:
        raise ExportError(f"writing Parquet needs pyarrow (pip install 'joust[parquet]'): {exc}") from None


class ExportError(Exception):
    """An export that cannot be written as asked (a format whose library is missing)."""


def _finite(value: Any) -> float | None:
    """A number, or None where there is nothing to estimate (NaN, infinite bounds)."""
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _write_csv(rows: Iterable[dict], columns: list[str], out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(row.get(c)) for c in columns])


def _write_jsonl(rows: Iterable[dict], out: TextIO) -> None:
    out.writelines(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
