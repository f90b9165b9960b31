"""Nested ratings flattened for `pytest.approx`, which (from pytest 9.2) compares flat mappings
and sequences only: `flat(a) == pytest.approx(flat(b))` compares every number at every path, and
two structures of different shapes have different paths, so they differ."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flat(values: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    """{path: leaf} for every leaf of nested mappings, lists and tuples."""
    if isinstance(values, Mapping):
        items = values.items()
    elif isinstance(values, (list, tuple)):
        items = enumerate(values)
    else:
        return {path: values}
    found: dict[tuple[Any, ...], Any] = {path + ("<kind>",): type(values).__name__} if not values else {}
    for key, value in items:
        found.update(flat(value, path + (key,)))
    return found
