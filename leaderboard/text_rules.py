"""What every text joust stores must be, and what a name shown on a board must not hold: the
rules the API's request shapes (`service.web.api_models`) and the importers
(`service.usecases.importers`) both apply, kept below both so that they are one set of rules."""
from __future__ import annotations

import unicodedata

# Text that becomes a key (model, scenario, question_id) is at most this long: the column width
# in PostgreSQL.
KEY_MAX = 255


def unicode_problem(value: str) -> str | None:
    """Why `value` is not valid Unicode text (a lone surrogate, and where), or None."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate (U+{ord(value[exc.start]):04X}) at character {exc.start}: text must be valid Unicode"
    return None


def check_text(value: str) -> str:
    """Valid Unicode without NUL characters: what every backend can store."""
    problem = unicode_problem(value)
    if problem is not None:
        raise ValueError(problem)
    if "\x00" in value:
        raise ValueError(f"a NUL character (U+0000) at character {value.index(chr(0))}: text must not contain NUL")
    return value


# Characters that change how the text around them is shown: the bidirectional embeddings,
# overrides, isolates and marks (U+202E shows "gpt-4" reversed, and can make one name look like
# another on the board).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def name_problem(value: str) -> str | None:
    """Why `value` cannot be a name shown on a board (a model, scenario, question id or judge),
    or None: it must hold no control character (tab, newline, escape...), no line or paragraph
    separator and no bidirectional control, each of which would make a name print as another."""
    for index, char in enumerate(value):
        if char in BIDI_CONTROLS:
            return f"a bidirectional control (U+{ord(char):04X}) at character {index}: names must not reorder text"
        if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            return f"a control character (U+{ord(char):04X}) at character {index}: names are printed on one line"
    return None
