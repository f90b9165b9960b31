"""Reading a verdict out of a judge's free-text reply.

Judges are asked for `{"winner": "A" | "B" | "TIE", "reason": "..."}` but wrap it in code
fences, add prose, use single quotes or lower case, echo the schema before answering, or
answer FastChat-style (`[[A]]`). The rules, in order:

1. JSON-like objects (strict JSON, else Python-literal syntax) with a `winner` key: the last one
   holding a valid winner wins.
2. A `"winner": "A"` pair whose object never closed (a reply cut at max_tokens).
3. The last FastChat verdict `[[A]]`, `[[B]]`, `[[C]]` (C = tie) or `[[TIE]]`.
4. A final line that states the verdict alone: `Winner: A`, `Verdict: Response B`, `Tie`, `A`.

Anything else raises `VerdictParseError`: an unreadable reply is never guessed to be a tie.
"""
from __future__ import annotations

import ast
import json
import re

from leaderboard.types import Winner
from workers.errors import VerdictParseError

_WORDS = {"A": Winner.A, "B": Winner.B, "TIE": Winner.TIE, "DRAW": Winner.TIE, "EQUAL": Winner.TIE}
_DECORATION = re.compile(r"[\s\"'`*_\[\]().:]+")
_PREFIX = re.compile(r"^(?:RESPONSE|ANSWER|ASSISTANT|OUTPUT)")

_OPEN_PAIR = re.compile(
    r"""["']?winner["']?\s*:\s*["']([A-Za-z ]{1,12})["']\s*(?:[,}]|$)""", re.IGNORECASE
)
_FASTCHAT = re.compile(r"\[\[\s*(A|B|C|TIE)\s*\]\]", re.IGNORECASE)
_FINAL_LINE = re.compile(
    r"""^(?:(?:final\s+)?(?:winner|verdict|answer|decision|result|better\s+response)
         (?:\s+is)?\s*[:=\-]?\s*)?
         (?:response\s+)?(A|B|TIE)\.?$""",
    re.IGNORECASE | re.VERBOSE,
)
_LINE_DECORATION = re.compile(r"[*`\"'\[\]]")


def parse_verdict(text: str) -> tuple[Winner, str]:
    """The (winner, reason) stated in `text`; `VerdictParseError` when none is stated clearly."""
    for obj in reversed(list(_objects(text))):
        found = _from_object(obj)
        if found is not None:
            return found
    for match in reversed(list(_OPEN_PAIR.finditer(text))):
        winner = winner_from_word(match.group(1))
        if winner is not None:
            return winner, ""
    fastchat = _FASTCHAT.findall(text)
    if fastchat:
        word = fastchat[-1].upper()
        return (Winner.TIE if word == "C" else Winner(word)), _without(text, _FASTCHAT)
    lines = [_LINE_DECORATION.sub("", line).strip(" \t#>") for line in text.splitlines()]
    lines = [line for line in lines if line]
    final = _FINAL_LINE.match(lines[-1]) if lines else None
    if final:
        return Winner(final.group(1).upper()), " ".join(lines[:-1])[-500:]
    raise VerdictParseError(f"no verdict in the judge's reply: {text[:200]!r}", raw=text)


def winner_from_word(value: object) -> Winner | None:
    """`A`, `b`, `"Tie"`, `Response A`, `draw` → a Winner; anything else → None."""
    if not isinstance(value, str):
        return None
    word = _PREFIX.sub("", _DECORATION.sub("", value).upper())
    return _WORDS.get(word)


def _from_object(obj: dict) -> tuple[Winner, str] | None:
    fields = {str(key).strip().lower(): value for key, value in obj.items()}
    winner = winner_from_word(fields.get("winner"))
    if winner is None:
        return None
    reason = fields.get("reason", "")
    return winner, reason.strip() if isinstance(reason, str) else json.dumps(reason)


def objects_in(text: str) -> list[dict]:
    """Every JSON-like object (strict JSON, else a Python literal) in `text`, in order of
    start, nested ones included: what other reply parsers (`workers.criteria`) read."""
    return list(_objects(text))


def _objects(text: str):
    """Every brace-balanced `{...}` span of `text` that reads as a dict, in order of start."""
    for start, end in _spans(text):
        chunk = text[start:end]
        try:
            value = json.loads(chunk)
        except ValueError:
            try:
                value = ast.literal_eval(chunk)
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                continue
        if isinstance(value, dict):
            yield value


def _spans(text: str):
    """(start, end) of each balanced brace span, nested ones included; quotes respected."""
    stack: list[int] = []
    spans: list[tuple[int, int]] = []
    quote: str | None = None
    escaped = False
    for i, char in enumerate(text):
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote or char == "\n":
                quote = None
        elif char in "\"'" and stack:
            # An apostrophe inside prose (`don't`) is not a quote; only a quote that follows
            # a JSON delimiter opens a string.
            before = text[:i].rstrip()[-1:]
            if char == '"' or before in ("{", ",", ":", "["):
                quote = char
        elif char == "{":
            stack.append(i)
        elif char == "}" and stack:
            spans.append((stack.pop(), i + 1))
    return sorted(spans)


def _without(text: str, pattern: re.Pattern[str]) -> str:
    return " ".join(pattern.sub("", text).split())[-500:]
