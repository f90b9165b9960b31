"""Object identities (`id`) of many Python objects at once, the one place joust reads CPython's
memory directly.

Why: factorising a million battle fields by identity first, then merging the few distinct
objects by value (`leaderboard.columns.factorize`), needs every item's `id`; calling `id` item
by item costs 50-100 ns, while in CPython a list's item array and an object array's buffer
already hold exactly those addresses. The fast path reads them through ctypes, only where a
probe at import proves the layout (`LIST_LAYOUT`); everywhere else (another interpreter, a
free-threaded build, `portable=True`) `id` is called per item. Both give the same answer: the
test runs both.
"""
from __future__ import annotations

import ctypes
import platform
from collections.abc import Sequence
from typing import Any, cast

import numpy as np


def _list_ids(values: list[Any]) -> np.ndarray:
    """The item pointers of a CPython list, copied from its item array in one go."""
    # never NULL (None) for a non-empty list, the only kind read here
    items = cast(int, ctypes.c_void_p.from_address(id(values) + _LIST_ITEMS).value)
    return np.ctypeslib.as_array((ctypes.c_ssize_t * len(values)).from_address(items)).copy()


def _list_layout_known() -> bool:
    """Whether this interpreter lays a list out as `_list_ids` reads it: checked on a probe
    list against `id`, so another layout (a free-threaded build, another version) is never read."""
    if not _ADDRESSES_ARE_IDS:
        return False
    probe = [object(), object(), "probe", 3]
    try:
        size = ctypes.c_ssize_t.from_address(id(probe) + _LIST_ITEMS - ctypes.sizeof(ctypes.c_ssize_t)).value
        return size == len(probe) and _list_ids(probe).tolist() == [id(x) for x in probe]
    except (ValueError, TypeError, OSError):
        return False


_ADDRESSES_ARE_IDS = platform.python_implementation() == "CPython" and np.dtype(object).itemsize == np.dtype(np.intp).itemsize
"""An object's id is its address, and an object array holds addresses one machine word each."""
_LIST_ITEMS = 3 * ctypes.sizeof(ctypes.c_ssize_t)  # PyListObject: refcount, type, size, then ob_item
LIST_LAYOUT = _list_layout_known()


def identities(values: Sequence[Any] | np.ndarray, *, portable: bool = False) -> np.ndarray:
    """`id` of every item, as machine words.

    In CPython an object's id is its address, and both a list and an object array hold exactly
    those addresses: a list's are copied straight from its item array (~0.5 ns an item, checked
    at import against `id`: `LIST_LAYOUT`), an object array's read from its buffer; filling an
    object array first cost ~10 ns an item, calling `id` item by item ~50-100 ns (at a million
    battles, 10-20 ms of a fit from Python objects). Elsewhere `id` is called per item. The list
    must not change while it is read (joust's own lists are its own; a caller's is the caller's).
    """
    m = len(values)
    if portable or not _ADDRESSES_ARE_IDS:
        return np.fromiter(map(id, values), dtype=np.intp, count=m)
    if m and LIST_LAYOUT and type(values) is list:
        return _list_ids(values)
    if m == 0:
        return np.zeros(0, dtype=np.intp)
    if isinstance(values, np.ndarray):  # an object column (a DataFrame's): its buffer already is the ids
        held = np.ascontiguousarray(values)
    else:
        held = np.fromiter(values, dtype=object, count=m)  # keeps every item alive while it is read
    return np.ctypeslib.as_array((ctypes.c_ssize_t * m).from_address(held.ctypes.data)).copy()
