"""The human reference set as the client sends it in `?humans=` of `GET /api/judges`.

The API takes at most VALUES values of at most CHARS characters each, so that any query, however
its characters are percent-encoded, stays inside the 64 KiB URL every server and client takes. A
panel of dozens of voters fits anyway: `packed` joins the names into comma-separated values of at
most CHARS characters (some 300 names of MT-Bench's length in all). A pattern such as
"human/expert_*" names any number of voters in one value.
"""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CHARS", "VALUES", "Humans", "packed"]

CHARS = 255  # characters per value (the API's)
VALUES = 20  # values per request (the API's)

Humans = Iterable[str] | str | None
"""Reference voters: names ("human/alice") or patterns ("human/expert_*"), one or several."""


def packed(humans: Humans) -> list[str] | None:
    """The names as few comma-separated values of at most CHARS characters as they fit (a name
    longer than that goes alone, for the API to refuse by name); None for None."""
    if humans is None:
        return None
    names = [humans] if isinstance(humans, str) else list(humans)
    values: list[str] = []
    for name in names:
        if values and len(values[-1]) + 1 + len(name) <= CHARS:
            values[-1] += "," + name
        else:
            values.append(name)
    return values
