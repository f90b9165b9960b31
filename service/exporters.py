"""`joust export`: judgements and leaderboards as CSV or JSONL, for spreadsheets and other tools.

A judgement row is a battle file row (`question_id, model_a, model_b, winner` with winner
model_a / model_b / tie, as Chatbot Arena writes it, plus `scenario_a, scenario_b`), so an
export is also an import, and one that loses nothing: `joust import battles` of either format
into an empty store gives the same boards and judge health (the columns:
`service.importers.columns`). Besides the verdict, a row carries what restores it: its `key`,
judge, criteria, prompt `template_version`, `order_policy`, tokens, cost, `created_at`, the
question's text, both outputs (`output_a`, `output_b`; empty for a placeholder, which has
none) and every call as joust stored it (`calls`, each call's `first` named by the row's
`a_id`/`b_id`). Rows are the ones the leaderboard counts, in the order it replays them (a
judgement shared by several tournaments appears once).

CSV spells out each call's first/winner/reason as call<i>_* columns for people, puts the long
texts last, and keeps `calls` as JSON text. JSONL adds what a reader of one judgement wants on
its line: `time` (ISO 8601, UTC, when it was judged), `label_a` / `label_b` ("model/scenario"),
`order` (per call, which side was shown first: "a" or "b"; null when a file did not say),
`reason` (the first call's), and `len_a` / `len_b` (the outputs' lengths in characters).
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
from leaderboard.types import PLACEHOLDER_OUTPUT, Level
from service.importers.columns import CALL_FIELDS, EXPORTED, TEXTS, WINNER_NAMES, cell
from service.store import Store

FORMATS = ("csv", "jsonl")
BOARD_COLUMNS = ["rank", "player", "rating", "ci_low", "ci_high", "elo", "wins", "losses", "ties", "matches",
                 "points", "win_rate"]
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
                     "question": row["question"], "output_a": _text(row["output_a"]),
                     "output_b": _text(row["output_b"]),
                     "label_a": f"{row['model_a']}/{row['scenario_a']}", "label_b": f"{row['model_b']}/{row['scenario_b']}",
                     "order": [sides.get(call.get("first")) for call in calls],
                     "reason": calls[0].get("reason") if calls else None,
                     "len_a": row["len_a"], "len_b": row["len_b"]})
    return rows


def _text(output: str) -> str | None:
    """An output as exported: None for a placeholder (a battle imported without outputs)."""
    return None if output == PLACEHOLDER_OUTPUT else output


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
    """CSV spells the calls out into call<i>_first/_winner/_reason columns and keeps them whole
    as JSON in `calls` (the column the import reads); JSONL keeps a list."""
    if fmt == "jsonl":
        _write_jsonl(rows, out)
        return
    width = max((len(r["calls"]) for r in rows), default=0)
    flat = [f"call{i}_{name}" for i in range(1, width + 1) for name in CALL_FIELDS]
    cells = []
    for row in rows:
        line = {c: row[c] for c in [*EXPORTED, *TEXTS]}
        for i, call in enumerate(row["calls"], start=1):
            line.update({f"call{i}_{name}": call.get(name) for name in CALL_FIELDS})
        line["calls"] = json.dumps(row["calls"], ensure_ascii=False, allow_nan=False)
        cells.append(line)
    _write_csv(cells, [*EXPORTED, *flat, *TEXTS, "calls"], out)


def write_board(rows: Sequence[dict], fmt: str, out: TextIO) -> None:
    """The board's rows in CSV (a header, then best first) or JSONL."""
    if fmt == "jsonl":
        _write_jsonl(rows, out)
    else:
        _write_csv(rows, BOARD_COLUMNS, out)


def _finite(value: Any) -> float | None:
    """A number, or None where there is nothing to estimate (NaN, infinite bounds)."""
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _write_csv(rows: Sequence[dict], columns: list[str], out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(row.get(c)) for c in columns])


def _write_jsonl(rows: Sequence[dict], out: TextIO) -> None:
    out.writelines(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
