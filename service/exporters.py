"""`joust export`: judgements and leaderboards as CSV or JSONL, for spreadsheets and other tools.

A judgement row carries what a battle file needs (`question_id, model_a, model_b, winner` with
winner model_a / model_b / tie, as Chatbot Arena writes it, plus `scenario_a, scenario_b`), so an
export is also an import: `joust import battles` reads it back. Rows are the ones the leaderboard
counts, in the order it replays them (a judgement shared by several tournaments appears once).

JSONL adds what a reader of one judgement wants on its line: `time` (ISO 8601, UTC, when it was
judged), `question` (the text), `label_a` / `label_b` ("model/scenario"), `order` (per call,
which side was shown first: "a" or "b"; null when a file did not say), `reason` (the first
call's), and `len_a` / `len_b` (the outputs' lengths in characters).
"""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

from leaderboard.board import build_board
from leaderboard.players import battles_at_level
from leaderboard.types import Level
from service.store import Store

FORMATS = ("csv", "jsonl")
WINNER_NAMES = {"A": "model_a", "B": "model_b", "TIE": "tie"}
JUDGEMENT_COLUMNS = [
    "judgement_id", "match_id", "tournament_id", "seq", "question_id", "a_id", "model_a", "scenario_a", "b_id",
    "model_b", "scenario_b", "winner", "outcome", "consistent", "judge", "criteria", "template_version",
    "input_tokens", "output_tokens", "cost_usd", "created_at",
]
CALL_FIELDS = ("first", "winner", "reason")
BOARD_COLUMNS = ["rank", "player", "rating", "ci_low", "ci_high", "elo", "wins", "losses", "ties", "matches",
                 "points", "win_rate"]
LEVELS = {"model": Level.MODEL, "scenario": Level.SCENARIO, "model+scenario": Level.SYSTEM, "system": Level.SYSTEM}


def judgement_rows(store: Store, *, tournament_id: int | None = None, judge: str | None = None) -> list[dict]:
    """One row per counted judgement, oriented to its match; `calls` keeps first/winner/reason."""
    rows = []
    for row in store.export_judgements(tournament_id=tournament_id, judge=judge):
        calls = [{name: call.get(name) for name in CALL_FIELDS} for call in row["calls"]]
        sides = {row["a_id"]: "a", row["b_id"]: "b"}
        rows.append({**{c: row.get(c) for c in JUDGEMENT_COLUMNS}, "winner": WINNER_NAMES[row["outcome"]],
                     "calls": calls,
                     "time": datetime.fromtimestamp(row["created_at"], tz=timezone.utc).isoformat(timespec="seconds"),
                     "question": row["question"],
                     "label_a": f"{row['model_a']}/{row['scenario_a']}", "label_b": f"{row['model_b']}/{row['scenario_b']}",
                     "order": [sides.get(call["first"]) for call in calls],
                     "reason": calls[0]["reason"] if calls else None,
                     "len_a": row["len_a"], "len_b": row["len_b"]})
    return rows


def board_rows(
    store: Store, level: Level, *, k: float, tournament_id: int | None = None, judge: str | None = None
) -> list[dict]:
    """The leaderboard at one level, best first, as the API computes it."""
    if tournament_id is not None:
        store.get_tournament(tournament_id)  # NotFound for an unknown id
    battles = battles_at_level(store.side_rows(tournament_id=tournament_id, judge=judge), level)
    return [
        {"rank": rank, "player": r.player, "rating": _finite(r.rating), "ci_low": _finite(r.ci_low),
         "ci_high": _finite(r.ci_high), "elo": _finite(r.elo), "wins": r.wins, "losses": r.losses, "ties": r.ties, "matches": r.matches,
         "points": _finite(r.extra.get("points")), "win_rate": _finite(r.extra.get("win_rate"))}
        for rank, r in enumerate(build_board(battles, k=k), start=1)
    ]


def write_judgements(rows: Sequence[dict], fmt: str, out: TextIO) -> None:
    """CSV flattens the calls into call<i>_first/_winner/_reason columns; JSONL keeps a list."""
    if fmt == "jsonl":
        _write_jsonl(rows, out)
        return
    width = max((len(r["calls"]) for r in rows), default=0)
    columns = JUDGEMENT_COLUMNS + [f"call{i}_{name}" for i in range(1, width + 1) for name in CALL_FIELDS]
    flat = []
    for row in rows:
        cells = {c: row[c] for c in JUDGEMENT_COLUMNS}
        for i, call in enumerate(row["calls"], start=1):
            cells.update({f"call{i}_{name}": call.get(name) for name in CALL_FIELDS})
        flat.append(cells)
    _write_csv(flat, columns, out)


def write_board(rows: Sequence[dict], fmt: str, out: TextIO) -> None:
    """The board's rows in CSV (a header, then best first) or JSONL."""
    if fmt == "jsonl":
        _write_jsonl(rows, out)
    else:
        _write_csv(rows, BOARD_COLUMNS, out)


def _finite(value: Any) -> float | None:
    """A number, or None where there is nothing to estimate (NaN, infinite bounds)."""
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _write_csv(rows: Sequence[dict], columns: list[str], out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])


def _write_jsonl(rows: Sequence[dict], out: TextIO) -> None:
    out.writelines(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
