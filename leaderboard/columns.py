"""Battles from columns: arrays, an Arena-format DataFrame, or Python objects converted in bulk.

`battle_table` (leaderboard.battles) hands everything that is not already a `BattleTable` to
`table_of` here. Columns come as a pandas DataFrame or a mapping of equal-length arrays named
as Chatbot Arena's battle files name them: `model_a`, `model_b`, `winner`, and optionally
`question_id` and `weight`. A winner is "A"/"model_a" (a won), "B"/"model_b", "TIE"/"tie"/
"tie (bothbad)" (a `Winner` or its string), or a's score as a number (1, 0.5 or 0). A missing
question id (None or NaN) makes the battle its own resampling group.

Why the object path is shaped this way: converting a million `Battle` objects one by one
through `unpack` cost ~420 ns each, 97% of a Bradley-Terry fit. Here each field is read once
by a list comprehension, and values are factorised by identity (`id`, one C pass over machine
words) before the few distinct objects are merged by value in a dict, so equal names held in
different string objects still count as one player. Validation is vectorised.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped, unused-ignore]  # no pandas-stubs; unused where config ignores it

from .battle_table import BattleTable, unpack
from .object_ids import identities
from .types import Battle, Winner

SCORES: dict[Any, float] = {
    "A": 1.0, "B": 0.0, "TIE": 0.5,
    "model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5,
}
"""a's score by winner spelling: joust's (and `Winner`'s) and Chatbot Arena's."""

REQUIRED = ("model_a", "model_b", "winner")


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def factorize(values: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """(codes, uniques): uniques in order of first appearance (small integer codes: in numeric
    order), code -1 for a missing value.

    A list or an object array (a DataFrame's column) is factorised by object identity first,
    then its distinct objects are merged by value; other arrays go straight to pandas.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu" and values.size and 0 <= values.min() and values.max() < 4 * values.size + 1024:
        present = np.bincount(values) > 0  # small non-negative codes: a table, not a hash
        if present.all():  # the codes are already 0..k-1
            return values.astype(np.intp, copy=False), list(range(len(present)))
        renumber = np.cumsum(present) - 1
        return renumber[values].astype(np.intp), np.flatnonzero(present).tolist()
    if isinstance(values, (pd.Series, pd.Index)) and values.dtype == object:
        values = values.to_numpy()
    if isinstance(values, (np.ndarray, pd.Series, pd.Index, pd.api.extensions.ExtensionArray)) and not (
            isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1):
        codes, uniques = pd.factorize(values.astype(object) if isinstance(values, np.ndarray) and values.dtype.kind == "U" else values)
        return np.asarray(codes, dtype=np.intp), list(uniques)
    if not isinstance(values, (list, np.ndarray)):
        values = list(values)
    m = len(values)
    codes, unique_ids = pd.factorize(identities(values))
    if len(unique_ids) > 1024 and 2 * len(unique_ids) > m:  # mostly distinct objects: hash by value
        column = values if isinstance(values, np.ndarray) else np.fromiter(values, dtype=object, count=m)
        codes, uniques = pd.factorize(column)
        return np.asarray(codes, dtype=np.intp), list(uniques)
    first = _first_places(codes, len(unique_ids))
    merged: dict[Any, int] = {}
    remap = np.empty(len(first), dtype=np.intp)
    for k, i in enumerate(first.tolist()):
        value = values[i]
        remap[k] = -1 if _missing(value) else merged.setdefault(value, len(merged))
    return remap[codes] if m else np.zeros(0, dtype=np.intp), list(merged)


def _first_places(codes: np.ndarray, count: int) -> np.ndarray:
    """Where each of the codes 0..count-1 first appears. Tried on a short head first: the few
    distinct players of a battle list all show up early, so the scatter over the whole column
    (a few ms at two million) is rarely needed."""
    first = np.full(count, -1, dtype=np.intp)
    for head in (min(len(codes), 4096), len(codes)):
        first[codes[:head][::-1]] = np.arange(head - 1, -1, -1)  # the last write wins: the first appearance
        if (first >= 0).all():
            break
    return first


def scores_of(winner: Sequence[Any] | np.ndarray) -> np.ndarray:
    """a's score per battle (1, ½ or 0) from a winner column; ValueError for an unknown one."""
    array = winner if isinstance(winner, np.ndarray) else None
    if array is not None and array.dtype.kind in "iuf":
        score = array.astype(float)
        bad = (score != 0.0) & (score != 0.5) & (score != 1.0)
        if bad.any():
            raise ValueError(f"unknown winner {float(score[bad][0])!r}: a numeric winner is a's score, 1, 0.5 or 0")
        return score
    if isinstance(winner, list) or (array is not None and array.dtype == object and array.ndim == 1):
        known = _winner_scores(identities(winner))
        if known is not None:
            return known
    codes, uniques = factorize(winner)
    table = np.empty(len(uniques))
    for k, value in enumerate(uniques):
        try:
            table[k] = SCORES[value]
        except (KeyError, TypeError):
            raise ValueError(f"unknown winner {value!r}: expected 'A', 'B' or 'TIE'") from None
    if (codes < 0).any():
        raise ValueError("unknown winner None: expected 'A', 'B' or 'TIE'")
    return table[codes]  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def _winner_scores(ids: np.ndarray) -> np.ndarray | None:
    """a's scores when every winner is a `Winner` member (each one object: compared by address,
    a few passes over machine words instead of hashing a million enum values); else None."""
    a_won, tie = ids == id(Winner.A), ids == id(Winner.TIE)
    if not (a_won | tie | (ids == id(Winner.B))).all():
        return None
    return a_won + 0.5 * tie  # type: ignore[no-any-return]  # numpy stubs: Any-dtype result


def groups_of(question: Sequence[Any] | np.ndarray | None, m: int) -> np.ndarray:
    """A resampling group per battle: one per question id, numbered in order of first
    appearance; a battle without one is its own group, numbered where it appears."""
    if question is None:
        return np.arange(m, dtype=np.intp)
    codes, uniques = factorize(question)
    alone = codes < 0
    if not alone.any():
        return codes
    if alone.all():
        return np.arange(m, dtype=np.intp)
    first = np.full(len(uniques), m, dtype=np.intp)
    first[codes[::-1][~alone[::-1]]] = np.flatnonzero(~alone)[::-1]
    new = alone.copy()
    new[first] = True
    number = np.cumsum(new) - 1
    return np.where(alone, number, number[first[np.where(alone, 0, codes)]])


def _weights_of(weight: Sequence[float] | np.ndarray, m: int) -> np.ndarray:
    """The weight column as floats. A list holding one float throughout (every `Battle`'s default
    1.0 is one object) is recognised by `list.count`, a C pass, instead of converting a million
    Python floats (~15 ms)."""
    if isinstance(weight, list) and m and isinstance(weight[0], float) and weight.count(weight[0]) == m:
        return np.full(m, weight[0])
    return np.asarray(weight, dtype=float)


def from_columns(
    a: Sequence[Any] | np.ndarray,
    b: Sequence[Any] | np.ndarray,
    winner: Sequence[Any] | np.ndarray,
    question: Sequence[Any] | np.ndarray | None = None,
    weight: Sequence[float] | np.ndarray | None = None,
) -> BattleTable:
    """A `BattleTable` from parallel columns (players in name order)."""
    m = len(a)
    lengths = {len(c) for c in (b, winner, question, weight) if c is not None}
    if lengths - {m}:
        raise ValueError(f"battle columns differ in length: {sorted(lengths | {m})}")
    both: Sequence[Any] | np.ndarray
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype.kind in "iu" and b.dtype.kind in "iu":
        both = np.concatenate([a, b])  # integer player codes: hashed as machine words
    elif isinstance(a, pd.api.extensions.ExtensionArray) or isinstance(b, pd.api.extensions.ExtensionArray):
        both = pd.concat([pd.Series(a), pd.Series(b)], ignore_index=True).array
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        both = np.concatenate([np.asarray(a, dtype=object), np.asarray(b, dtype=object)])
    else:
        both = (a if isinstance(a, list) else list(a)) + (b if isinstance(b, list) else list(b))
    codes, uniques = factorize(both)
    if (codes < 0).any():
        raise ValueError("a battle names no player (None or NaN)")
    names = [str(u) for u in uniques]
    if len(set(names)) != len(names):
        raise ValueError("two different player values share a name")
    order = sorted(range(len(names)), key=names.__getitem__)
    rename = np.empty(len(names), dtype=np.intp)
    rename[order] = np.arange(len(names))
    a_idx, b_idx = rename[codes[:m]], rename[codes[m:]]
    players = [names[i] for i in order]
    same = a_idx == b_idx
    if same.any():
        raise ValueError(f"a battle needs two different players, got {players[a_idx[same][0]]!r} twice")
    w = np.ones(m) if weight is None else _weights_of(weight, m)
    if weight is not None and not (w >= 0).all():
        raise ValueError(f"battle weights must be >= 0, got {w[~(w >= 0)][0]!r}")
    return BattleTable(players, a_idx, b_idx, scores_of(winner), w, groups_of(question, m))


def from_frame(frame: pd.DataFrame | Mapping[str, Any], *, questions: bool = True) -> BattleTable:
    """A `BattleTable` from Arena-format columns (`model_a`, `model_b`, `winner`
    [, `question_id`][, `weight`]); `questions=False` leaves the question ids unread."""
    missing = [c for c in REQUIRED if c not in frame]
    if missing:
        raise ValueError(f"battle columns need {', '.join(REQUIRED)}; missing {', '.join(missing)}")

    def column(name: str) -> Any:  # an array, a pandas array or the mapping's own value; None if absent
        if name not in frame:
            return None
        value = frame[name]
        if not isinstance(value, pd.Series):
            return value
        if value.dtype != object and pd.api.types.is_string_dtype(value.dtype):
            return value.array  # pandas' own strings (Arrow): factorised as they are, not as new str objects
        return value.to_numpy()

    return from_columns(column("model_a"), column("model_b"), column("winner"),
                        column("question_id") if questions else None, column("weight"))


def from_objects(battles: Iterable[Any], *, questions: bool = True) -> BattleTable:
    """A `BattleTable` from `Battle` objects or battle tuples, each field read in one pass.

    `questions=False` skips the question ids (every battle its own group): online Elo needs none.
    """
    items = battles if isinstance(battles, list) else list(battles)
    kinds = set(map(type, items))
    try:
        if kinds == {Battle}:
            return from_columns(
                [x.a for x in items], [x.b for x in items], [x.winner for x in items],
                [x.question_id for x in items] if questions else None, [x.weight for x in items],
            )
        if kinds == {tuple} and {len(x) for x in items} == {3}:
            return from_columns([x[0] for x in items], [x[1] for x in items], [x[2] for x in items])
    except ValueError:
        pass  # re-raised below with the message of the first malformed battle, as `unpack` says it
    rows = [unpack(x) for x in items]
    return from_columns(
        [r[0] for r in rows], [r[1] for r in rows], np.array([r[2] for r in rows], dtype=float),
        [r[4] for r in rows] if questions else None, [r[3] for r in rows],
    )


def table_of(battles: Any, *, questions: bool = True) -> BattleTable:
    """A `BattleTable` from any accepted battle input (a `BattleTable` passes through)."""
    if isinstance(battles, BattleTable):
        return battles
    if isinstance(battles, (pd.DataFrame, Mapping)):
        return from_frame(battles, questions=questions)
    return from_objects(battles, questions=questions)


CODED_MAX = 2048  # integer player codes up to this are counted straight into a codes×codes matrix


def coded_points(battles: Any) -> tuple[list[str], np.ndarray] | None:
    """(players, points matrix) straight from integer player codes, or None for any other input.

    Why: a fit from Arena columns of small non-negative integer codes (choix's and scikit-learn's
    input) needs no table. The battles are counted at their raw codes (one key a·k + b, two
    bincounts), and what the table would check and renumber is read off the k×k counts: a code
    that never plays is dropped, a battle of a player against itself is a diagonal count, and the
    name order is a permutation of k rows. At a million battles over 100 players this is the
    count alone (~5 ms) where building the table first took 9 ms more. Unweighted columns only
    (no `weight` column); anything else, or anything malformed, goes the table's way, which says
    what is wrong.
    """
    if not isinstance(battles, (pd.DataFrame, Mapping)) or "weight" in battles or any(c not in battles for c in REQUIRED):
        return None
    given = [battles[c] for c in REQUIRED]
    if not all(isinstance(c, (np.ndarray, pd.Series)) and c.dtype.kind in "iuf" for c in given):
        return None  # lists, strings, objects: not codes (and never converted just to find out)
    a, b, winner = (np.asarray(c) for c in given)
    m = len(a)
    if (a.dtype.kind not in "iu" or b.dtype.kind not in "iu" or winner.dtype.kind not in "iuf"
            or a.ndim != 1 or b.shape != a.shape or winner.shape != a.shape or m == 0):
        return None
    low, high = min(int(a.min()), int(b.min())), max(int(a.max()), int(b.max()))
    if low < 0 or high >= CODED_MAX:
        return None
    k = high + 1
    try:
        score = scores_of(winner)
    except ValueError:
        return None
    key = a.astype(np.intp, copy=False) * k + b
    games = np.bincount(key, minlength=k * k)
    if games[:: k + 1].any():  # a battle of a player against itself
        return None
    took = np.bincount(key, weights=score, minlength=k * k).reshape(k, k)
    games = games.reshape(k, k).astype(float)
    points = took + (games - took).T
    codes = np.flatnonzero(games.sum(axis=0) + games.sum(axis=1))
    names = [str(c) for c in codes.tolist()]
    order = sorted(range(len(names)), key=names.__getitem__)
    chosen = codes[order]
    return [names[i] for i in order], points[np.ix_(chosen, chosen)]
