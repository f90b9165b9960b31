"""pandas in and out: submission rows from a DataFrame (or records), and the API's answers as
DataFrames with stated dtypes.

Why dtypes are set here rather than inferred: a column whose every value is null (no rating
could be estimated yet, no judge has a human agreement) would otherwise come out as `object`
holding None, and a count with a missing value as float. Known numbers become float64 (null is
NaN) or nullable Int64; columns the API adds later come through as pandas infers them.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .types import Flag

__all__ = ["effects_frame", "judgement_list_frame", "judgements_frame", "judges_frame", "leaderboard_frame",
           "records_of", "submissions_frame", "winrate_frame"]

SUBMISSION_FIELDS = ("question", "question_id", "model", "scenario", "output", "reference", "metadata")

LEADERBOARD_COLUMNS = ("player", "rating", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "elo",
                       "wins", "losses", "ties", "matches", "win_rate", "ci_missing", "flags")
EFFECT_COLUMNS = ("kind", "name", "component", "effect", "ci_low", "ci_high", "bounded")
WINRATE_COLUMNS = ("player", "win_rate", "standard_error", "n_wins", "n_wins_base", "n_draws", "n_total",
                   "lc_win_rate", "lc_standard_error", "lc_unavailable", "length_weight", "avg_length")
JUDGE_COLUMNS = ("judge", "calls", "judgements", "consistency", "first_position_win_rate", "tie_rate",
                 "parse_failure_rate", "longer_wins_rate", "human_agreement", "human_pairs", "human_votes")
JUDGEMENT_COLUMNS = ("match_id", "judgement_id", "a", "b", "outcome", "consistent", "judge", "criteria",
                     "input_tokens", "output_tokens", "cost_usd", "created_at")
SUBMISSION_COLUMNS = ("id", "question_id", "question", "model", "scenario", "output", "reference", "metadata",
                      "created_at")
LISTED_COLUMNS = ("id", "judge", "criteria", "question_id", "a_id", "a_model", "a_scenario", "a_output_chars", "b_id",
                  "b_model", "b_scenario", "b_output_chars", "outcome", "consistent", "result", "created_at")

FLOAT = ("rating", "ci_low", "ci_high", "elo", "effect", "consistency", "first_position_win_rate", "tie_rate",
         "parse_failure_rate", "longer_wins_rate", "human_agreement", "human_alpha", "human_alpha_low",
         "human_alpha_high", "cost_usd", "latency_ms", "win_rate",
         "standard_error", "lc_win_rate", "lc_standard_error", "length_weight", "avg_length")
INT = ("component", "wins", "losses", "ties", "matches", "rank", "rank_low", "rank_high", "calls", "judgements",
       "human_pairs", "human_votes", "match_id", "judgement_id", "a", "b", "id", "input_tokens", "output_tokens",
       "first", "a_id", "b_id", "a_output_chars", "b_output_chars", "human_alpha_pairs", "n_wins", "n_wins_base",
       "n_draws", "n_total")
TIMES = ("created_at",)  # Unix seconds in the API, UTC timestamps here
CALL_PREFIX = re.compile(r"^call_\d+_")  # a flattened call's column: its dtype is its field's


# ---- in: what to submit ---------------------------------------------------------------------


def _missing(value: Any) -> bool:
    """A cell that holds no value: None, NaN, pandas' NA or NaT."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value JSON can carry (np.int64(3) -> 3)."""
    return value.item() if isinstance(value, np.generic) else value


def records_of(rows: pd.DataFrame | Mapping[str, Any] | Iterable[Mapping[str, Any]],
               metadata: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Submission objects from a DataFrame's columns (its index is ignored), one mapping, or an
    iterable of mappings. A missing cell leaves its field out, so the API's default applies
    (`scenario` "default", `question_id` a hash of the question) or, for a required field, the
    API names it. The columns named in `metadata` go into each row's metadata (beside a
    `metadata` column's own keys); an `id` column (what `Client.submit` returned) is left out;
    any other column is sent as is, so the API refuses a misspelt one by name."""
    if isinstance(rows, pd.DataFrame):
        items: Iterable[Mapping[str, Any]] = rows.to_dict("records")
    elif isinstance(rows, Mapping):
        items = [rows]
    else:
        items = rows
    metadata = (metadata,) if isinstance(metadata, str) else tuple(metadata)
    folded = set(metadata)
    records = []
    for item in items:
        if not isinstance(item, Mapping):
            raise TypeError(f"a submission is a mapping (question, model, output, ...), not {type(item).__name__}")
        cells = {str(k): _plain(v) for k, v in item.items()}
        record = {k: v for k, v in cells.items() if k not in folded and k != "id" and not _missing(v)}
        extra = {k: cells[k] for k in metadata if k in cells and not _missing(cells[k])}
        if extra:
            record["metadata"] = {**(record.get("metadata") or {}), **extra}
        records.append(record)
    return records


# ---- out: the API's answers as frames ----------------------------------------------------------


def _frame(rows: Sequence[Mapping[str, Any]], first: Sequence[str]) -> pd.DataFrame:
    """Rows as a frame: the `first` columns in that order (present even when there are no rows),
    then any others in the order the API gave them, with the known columns' dtypes."""
    others: list[str] = []
    for row in rows:
        others.extend(k for k in row if k not in first and k not in others)
    frame = pd.DataFrame.from_records(list(rows), columns=[*first, *others])
    for name in frame.columns:
        kind = CALL_PREFIX.sub("", name)
        if kind in FLOAT:
            frame[name] = pd.to_numeric(frame[name], errors="coerce").astype("float64")
        elif kind in INT:
            frame[name] = frame[name].astype("Int64") if frame[name].isna().any() else frame[name].astype("int64")
        elif kind in TIMES:
            frame[name] = pd.to_datetime(pd.to_numeric(frame[name], errors="coerce"), unit="s", utc=True)
    return frame


def leaderboard_frame(body: Mapping[str, Any]) -> pd.DataFrame:
    """`GET /api/leaderboard`: one row per player, best first, `flags` a tuple of `Flag` (empty
    for an honest player); the board's metadata (by, tournament, judge, dimension, revision,
    judgements) in `frame.attrs`."""
    rows = [{**row, "flags": tuple(Flag.from_json(f) for f in row.get("flags") or ())} for row in body.get("rows", [])]
    frame = _frame(rows, LEADERBOARD_COLUMNS)
    frame.attrs.update({k: v for k, v in body.items() if k != "rows"})
    return frame


def effects_frame(body: Mapping[str, Any]) -> pd.DataFrame:
    """`GET /api/leaderboard/effects`: one row per model effect, then per scenario effect (`kind`
    says which, `name` whose), by group of systems (`component`) and best first within one; an
    effect the verdicts do not bound has `bounded` False and NaN numbers. The groups, judge,
    turn, votes and revision in `frame.attrs`."""
    rows = [{"kind": kind, "name": row[kind], **{k: v for k, v in row.items() if k != kind}}
            for kind in ("model", "scenario") for row in body.get(kind + "s", [])]
    frame = _frame(rows, EFFECT_COLUMNS)
    frame["bounded"] = frame["bounded"].astype(bool)
    frame.attrs.update({k: v for k, v in body.items() if k not in ("models", "scenarios")})
    return frame


def winrate_frame(body: Mapping[str, Any]) -> pd.DataFrame:
    """`GET /api/leaderboard/winrate`: one row per player against the baseline, best plain win rate
    first (an LC win rate the server could not compute is NaN); baseline, by, judge, tournament and
    revision in `frame.attrs`."""
    frame = _frame(body.get("rows", []), WINRATE_COLUMNS)
    frame.attrs.update({k: v for k, v in body.items() if k != "rows"})
    return frame


def judges_frame(body: Mapping[str, Any]) -> pd.DataFrame:
    """`GET /api/judges`: one row per judge; a rate with nothing to count is NaN. The rest of
    the answer (humans, voter_agreement, judge_agreement: alpha between judges) in `frame.attrs`."""
    frame = _frame(body.get("judges", []), JUDGE_COLUMNS)
    frame.attrs.update({k: v for k, v in body.items() if k != "judges"})
    return frame


def flat_judgement(judgement: Mapping[str, Any]) -> dict[str, Any]:
    """One judgement as one row: its fields, and each call's fields as `call_<n>_<field>`
    (n from 1, in the order the calls were made)."""
    row = {k: v for k, v in judgement.items() if k != "calls"}
    for n, call in enumerate(judgement.get("calls") or [], start=1):
        row.update({f"call_{n}_{k}": v for k, v in call.items()})
    return row


def judgements_frame(body: Mapping[str, Any]) -> pd.DataFrame:
    """`GET /api/tournaments/{id}/judgements`: one row per judged match (`a`, `b` submission ids;
    `outcome` "A" = a won, "B", "TIE"; `consistent`), calls flattened: `call_1_first` (the id
    shown first), `call_1_winner` (positional: "A" is the one shown first), `call_1_reason`, its
    tokens and latency, then `call_2_...`. `frame.attrs["tournament"]` is the tournament's id."""
    frame = _frame([flat_judgement(j) for j in body.get("judgements", [])], JUDGEMENT_COLUMNS)
    frame.attrs["tournament"] = body.get("tournament")
    return frame


def submissions_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """`GET /api/submissions` pages: one row per submission, in id order."""
    return _frame(rows, SUBMISSION_COLUMNS)


def judgement_list_frame(rows: Sequence[Mapping[str, Any]], body: Mapping[str, Any]) -> pd.DataFrame:
    """`GET /api/judgements` pages: one row per judgement, newest first, each side's fields as
    `a_<field>` and `b_<field>` (`a_id`, `a_model`, `a_scenario`, `a_output_chars`, ...); `result`
    is the outcome for the player asked about (None without one). The list's judge, why it was
    chosen, the other judges, level, player, opponent and tournament are in `frame.attrs`."""
    flat = [{**{k: v for k, v in row.items() if k not in ("a", "b")},
             **{f"{side}_{k}": v for side in ("a", "b") for k, v in (row.get(side) or {}).items()}} for row in rows]
    frame = _frame(flat, LISTED_COLUMNS)
    frame.attrs.update(body)
    return frame
