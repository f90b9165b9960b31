"""One row of a battle file as a typed verdict, checked column by column (the columns:
`service.usecases.importers.columns`); a value that cannot be read raises ImportFormatError naming the
line and the column, so a bad file stores nothing."""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderboard.text_rules import KEY_MAX, check_text, name_problem
from leaderboard.types import OrderPolicy, Winner
from service.usecases.importers.columns import FLAT_CALL, INCONSISTENT_TIE, TEXTS, cell
from service.usecases.importers.common import ImportFormatError, Record, text_field

# (first, second, names are display positions): LLMFAO's left/right say who was shown first.
SIDES = (("left", "right", True), ("model_a", "model_b", False), ("model_x", "model_y", False))
WINNERS = {"model_a": Winner.A, "left": Winner.A, "model_b": Winner.B, "right": Winner.B,
           "tie": Winner.TIE, "tie (bothbad)": Winner.TIE, INCONSISTENT_TIE: Winner.TIE}
SIDE_NAMES = {"a": "a", "model_a": "a", "b": "b", "model_b": "b"}
QUESTION_COLUMNS = ("question_id", "prompt", "id")
FLAGS = {"true": True, "false": False, "1": True, "0": False}
KEY = re.compile(r"[0-9a-f]{64}")
SHORT_MAX = 64  # criteria and template_version, as the store keeps them
MAX_FIELD = 200  # extra scalar fields kept in a one-call verdict's call record, cut to this many characters


@dataclass(frozen=True)
class Side:
    """One side of a verdict; `output` None when the file has no text (a placeholder)."""

    model: str
    scenario: str
    output: str | None


@dataclass(frozen=True)
class FileCall:
    """One call as the file gives it: the side shown first ("a", "b" or None when unknown) and
    the rest of the call as joust stores it."""

    first: str | None
    fields: Mapping[str, Any]


@dataclass(frozen=True)
class BattleRow:
    """One verdict of a battle file; `outcome` is relative to side a, `judge` the row's own
    judge or voter as written (None: the file's)."""

    line: int
    question_id: str
    question: str
    a: Side
    b: Side
    outcome: Winner
    consistent: bool
    calls: tuple[FileCall, ...]
    raw_winner: str
    judge: str | None = None
    criteria: str = "overall"
    template_version: str | None = None  # None: the file does not say (not a joust judge's row)
    order: OrderPolicy | None = None
    key: str | None = None
    created_at: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    question_b: str | None = None  # side b's question text, when its submission holds another

    def question_of(self, side: int) -> str:
        """The question text side 0 (a) or 1 (b) is filed with."""
        return self.question_b if side == 1 and self.question_b is not None else self.question


def sides_of(path: Path, record: Record) -> tuple[str, str, bool]:
    """The two side columns of a row and whether they are display positions."""
    for first, second, positional in SIDES:
        if first in record.fields and second in record.fields:
            return first, second, positional
    raise ImportFormatError(path, record.line, "missing the two sides: expected model_a and model_b "
                                               "(or left and right, or model_x and model_y)")


def read_row(path: Path, record: Record) -> BattleRow:
    """A row as a verdict; ImportFormatError naming the line for anything it cannot read."""
    first_col, second_col, positional = sides_of(path, record)
    a = Side(_model(path, record, first_col), _name(path, record, "scenario_a") or "default",
             _text(path, record, "output_a"))
    b = Side(_model(path, record, second_col), _name(path, record, "scenario_b") or "default",
             _text(path, record, "output_b"))
    if (a.model, a.scenario) == (b.model, b.scenario):
        raise ImportFormatError(path, record.line, f"both sides are {a.model!r} ({a.scenario}): nothing to compare")
    raw = text_field(path, record, "winner") or ""
    outcome, consistent = _verdict(path, record, raw)
    question_id = _question_id(path, record)
    calls = _calls(path, record, positional, outcome, consistent, raw, (first_col, second_col))
    _check_calls(path, record, raw, outcome, consistent, calls)
    return BattleRow(
        line=record.line,
        question_id=question_id,
        question=_text(path, record, "question") or _text(path, record, "prompt") or question_id,
        a=a,
        b=b,
        outcome=outcome,
        consistent=consistent,
        calls=calls,
        raw_winner=raw,
        judge=_judge(path, record),
        criteria=_name(path, record, "criteria", SHORT_MAX) or "overall",
        template_version=_name(path, record, "template_version", SHORT_MAX),
        order=_order(path, record),
        key=_key(path, record),
        created_at=_number(path, record, "created_at"),
        input_tokens=int(_number(path, record, "input_tokens", integer=True) or 0),
        output_tokens=int(_number(path, record, "output_tokens", integer=True) or 0),
        # An empty cost is a judge without a price (None, as stored); no cost column, none spent.
        cost_usd=_number(path, record, "cost_usd") if "cost_usd" in record.fields else 0.0,
        question_b=_text(path, record, "question_b"),
    )


# ---- single values ---------------------------------------------------------------------------


def _given(record: Record, name: str) -> bool:
    value = record.fields.get(name)
    return value is not None and not (isinstance(value, str) and not value.strip())


def _fail(path: Path, record: Record, message: str) -> ImportFormatError:
    return ImportFormatError(path, record.line, message)


def _text(path: Path, record: Record, name: str) -> str | None:
    """A text kept as written (an output, a question); None when absent or empty."""
    value = text_field(path, record, name, required=False)
    if value is not None:
        try:
            check_text(value)
        except ValueError as exc:
            raise _fail(path, record, f"{name!r}: {exc}") from None
    return value


def _name(path: Path, record: Record, name: str, limit: int = KEY_MAX) -> str | None:
    """A name (model, scenario, judge, criteria...), trimmed; None when absent or empty."""
    value = _text(path, record, name)
    if value is None or not value.strip():
        return None
    if len(value.strip()) > limit:
        raise _fail(path, record, f"{name!r} is longer than {limit} characters")
    problem = name_problem(value.strip())
    if problem is not None:
        raise _fail(path, record, f"{name!r}: {problem}")
    return value.strip()


def _model(path: Path, record: Record, name: str) -> str:
    model = _name(path, record, name)
    if model is None:
        raise _fail(path, record, f"missing {name!r}")
    return model


def _number(path: Path, record: Record, name: str, *, integer: bool = False) -> float | None:
    """A finite number >= 0 (a whole one when `integer`); None when absent or empty."""
    if not _given(record, name):
        return None
    value = record.fields[name]
    try:
        number = float(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0 or (integer and number != int(number)):
        kind = "a whole number" if integer else "a number"
        raise _fail(path, record, f"{name!r} must be {kind} >= 0, found {value!r}")
    return number


def _flag(path: Path, record: Record, name: str) -> bool | None:
    if not _given(record, name):
        return None
    value = record.fields[name]
    found = value if isinstance(value, bool) else FLAGS.get(str(value).strip().lower())
    if found is None:
        raise _fail(path, record, f"{name!r} must be true or false, found {value!r}")
    return found


def _verdict(path: Path, record: Record, raw: str) -> tuple[Winner, bool]:
    """The outcome for side a and whether the orders agreed, from winner, outcome, consistent."""
    name = raw.strip().lower()
    outcome = WINNERS.get(name)
    if outcome is None:
        raise _fail(path, record, f"unknown winner {raw!r}; expected one of {', '.join(sorted(WINNERS))}")
    stated = _name(path, record, "outcome")
    if stated is not None and stated.upper() != outcome.value:
        raise _fail(path, record, f"outcome {stated!r} disagrees with winner {raw!r}")
    consistent = _flag(path, record, "consistent")
    if name == INCONSISTENT_TIE and consistent:
        raise _fail(path, record, f"winner {raw!r} says the orders disagreed, but consistent is true")
    return outcome, name != INCONSISTENT_TIE if consistent is None else consistent


def _question_id(path: Path, record: Record) -> str:
    """The first question column found (else the row is its own question); turn N > 1 is the
    question `<id>#turn<N>`."""
    found = next((q for q in (_name(path, record, c) for c in QUESTION_COLUMNS) if q), None)
    question_id = found or f"{path.stem}:{record.line}"
    turn = _number(path, record, "turn", integer=True)
    if turn is not None and turn < 1:
        raise _fail(path, record, f"'turn' must be 1 or more, found {record.fields['turn']!r}")
    if turn is not None and turn > 1:
        question_id = f"{question_id}#turn{int(turn)}"
        if len(question_id) > KEY_MAX:
            raise _fail(path, record, f"question id {question_id[:40]!r}... is longer than {KEY_MAX} characters")
    return question_id


def _judge(path: Path, record: Record) -> str | None:
    judge, voter = _name(path, record, "judge"), _name(path, record, "voter")
    if judge and voter and judge != voter:
        raise _fail(path, record, f"judge {judge!r} and voter {voter!r} disagree: give one")
    return judge or voter


def _order(path: Path, record: Record) -> OrderPolicy | None:
    value = _name(path, record, "order_policy")
    if value is None:
        return None
    try:
        return OrderPolicy(value)
    except ValueError:
        raise _fail(path, record, f"unknown order_policy {value!r}; expected both or single") from None


def _key(path: Path, record: Record) -> str | None:
    value = _name(path, record, "key")
    if value is not None and not KEY.fullmatch(value):
        raise _fail(path, record, f"'key' must be joust's judgement key (64 hex digits), found {value[:80]!r}")
    return value


# ---- calls -----------------------------------------------------------------------------------


def _calls(path: Path, record: Record, positional: bool, outcome: Winner, consistent: bool, raw: str,
           side_columns: tuple[str, str]) -> tuple[FileCall, ...]:
    """The row's calls: from `calls` (checked against call<i>_* when both are there), else from
    call<i>_*, else the one call the row stands for."""
    flat = {(int(m.group(1)), m.group(2)): cell(v) for k, v in record.fields.items() if (m := FLAT_CALL.fullmatch(k))}
    given = _given(record, "calls")
    if (given or any(flat.values())) and _given(record, "first"):
        raise _fail(path, record, "'first' is for a verdict of one call; this row has its calls")
    if given:
        calls = _call_list(path, record)
        for (i, name), text in sorted(flat.items()):
            expected = cell(calls[i - 1].get(name)) if i <= len(calls) else ""
            if text != expected:
                raise _fail(path, record, f"call{i}_{name} {text!r} disagrees with calls ({expected!r}): "
                                          "edit both, or drop the call<i>_* columns")
    elif any(flat.values()):
        calls = [{name: (flat.get((i, name)) or None) for name in ("first", "winner", "reason")}
                 for i in sorted({i for (i, _), text in flat.items() if text})]
    else:
        return _one_call(path, record, positional, outcome, consistent, raw, side_columns)
    ids = (_number(path, record, "a_id", integer=True), _number(path, record, "b_id", integer=True))
    return tuple(_file_call(path, record, i, call, ids) for i, call in enumerate(calls, start=1))


def _check_calls(path: Path, record: Record, raw: str, outcome: Winner, consistent: bool,
                 calls: tuple[FileCall, ...]) -> None:
    """Refuse a row whose own calls contradict its verdict: the board counts the verdict and judge
    health the calls, so the two would tell different stories. Consistent: every call said the
    outcome (a call whose first side is unknown only says whether it was a tie). Inconsistent:
    a tie, unless its calls do not show two orders (a panel's verdict is inconsistent when a
    member's orders disagreed, whatever the majority said); the calls that show their order must
    not all agree."""
    placed: list[tuple[int, FileCall, Winner]] = []
    for i, call in enumerate(calls, start=1):
        winner = call.fields.get("winner")
        if winner not in ("A", "B", "TIE"):
            continue  # a call without a verdict (a score, a source) says nothing of the outcome
        said = _relative(call, Winner(winner))
        if said is not None:
            placed.append((i, call, said))
            agrees = said is outcome
        else:  # a winner named, the side shown first unknown: it was not a tie
            agrees = outcome is not Winner.TIE
        if consistent and not agrees:
            told = _told(call, said) if said is not None else "a winner, not a tie"
            raise _fail(path, record, f"winner {raw!r} contradicts call {i}, which said {told}: the board would "
                                      "count the winner and judge health the call; make them agree")
    if consistent:
        return
    if len(placed) >= 2 and len({said for _, _, said in placed}) == 1:
        i, call, said = placed[0]
        raise _fail(path, record, f"consistent is false (the orders disagreed), but its calls agree (call {i} "
                                  f"said {_told(call, said)}, as the others did): make them agree")
    if outcome is not Winner.TIE and (not calls or len(placed) >= 2):
        raise _fail(path, record, f"consistent is false (the orders disagreed): the winner must be a tie, "
                                  f"not {raw!r}")


def _relative(call: FileCall, winner: Winner) -> Winner | None:
    """A call's verdict relative to side a; None when it names a winner but not who was first."""
    if call.first == "a" or winner is Winner.TIE:
        return winner
    return winner.flipped() if call.first == "b" else None


def _told(call: FileCall, said: Winner) -> str:
    """What a call said, for an error: its positional answer and what it means for the sides."""
    shown = f"{call.first} shown first, {call.fields['winner']!r}: " if call.first else ""
    return shown + {Winner.A: "model_a won", Winner.B: "model_b won", Winner.TIE: "a tie"}[said]


def _call_list(path: Path, record: Record) -> list[dict]:
    value = record.fields["calls"]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _fail(path, record, f"'calls' is not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise _fail(path, record, "'calls' must be a list of objects (one per judge call)")
    return value


def _file_call(path: Path, record: Record, i: int, call: dict, ids: tuple[float | None, float | None]) -> FileCall:
    winner = call.get("winner")
    if winner is not None and winner not in ("A", "B", "TIE"):
        raise _fail(path, record, f"call {i}: winner {winner!r} is not A, B, TIE or null (A: the side shown first)")
    first = call.get("first")
    side = None
    if isinstance(first, str) and first.strip().lower() in SIDE_NAMES:
        side = SIDE_NAMES[first.strip().lower()]
    elif first is not None and first != "":
        number = first if isinstance(first, int) and not isinstance(first, bool) else None
        if isinstance(first, str) and first.strip().isdigit():
            number = int(first)
        if ids[0] is not None and ids[0] == ids[1]:
            raise _fail(path, record, "a_id and b_id are the same: the calls cannot say which side was first")
        side = {ids[0]: "a", ids[1]: "b"}.get(number) if number is not None else None
        if side is None:
            raise _fail(path, record, f"call {i}: first {first!r} is neither a_id ({cell(ids[0])}) nor b_id "
                                      f"({cell(ids[1])}), nor a or b")
    return FileCall(side, {k: v for k, v in call.items() if k != "first"})


def _one_call(path: Path, record: Record, positional: bool, outcome: Winner, consistent: bool, raw: str,
              side_columns: tuple[str, str]) -> tuple[FileCall, ...]:
    """A row without calls is one call, shown first: the left side (LLMFAO), or as `first`
    says, or unknown. An inconsistent tie has no one call (the two orders disagreed), so none."""
    stated = _name(path, record, "first")
    side = None if stated is None else SIDE_NAMES.get(stated.lower())
    if stated is not None and side is None:
        raise _fail(path, record, f"unknown first {stated!r}; expected a or b (model_a or model_b)")
    if not consistent:
        if stated is not None:
            raise _fail(path, record, "'first' names the one call of a verdict, but an inconsistent tie had two")
        return ()
    if positional:
        if side == "b":
            raise _fail(path, record, "'first' says b, but left and right already say the left was shown first")
        side = "a"
    skip = {*side_columns, "winner", "calls", "first", "reason", *TEXTS}
    extra = {k: (v[:MAX_FIELD] if isinstance(v, str) else v) for k, v in record.fields.items()
             if k not in skip and (v is None or isinstance(v, (str, int, float, bool)))}
    winner = outcome if side != "b" else outcome.flipped()  # positional: A is the side shown first
    return (FileCall(side, {"winner": winner.value, "reason": _text(path, record, "reason") or "", "raw": raw,
                            "source": path.name, "line": record.line, "fields": extra}),)
