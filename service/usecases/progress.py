"""Progress bars for the long local commands (`joust import`, `joust export`): tqdm on stderr,
drawn only when asked (`--progress`) or when stderr is a terminal, so logs and pipes stay clean.

A disabled bar is tqdm's own no-op (`disable=True`): the million-row paths pay one attribute
check per row. An enabled one redraws at most ten times a second."""
from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


def wanted(flag: bool | None) -> bool:
    """--progress / --no-progress, else whether stderr is a terminal."""
    return flag if flag is not None else sys.stderr.isatty()


def tracked(items: Iterable[T], *, show: bool, desc: str, unit: str = " rows", total: int | None = None) -> Iterator[T]:
    """`items`, counted on a bar on stderr when `show`."""
    if not show:
        yield from items
        return
    with tqdm(items, desc=desc, unit=unit, total=total, file=sys.stderr, mininterval=0.1,
              dynamic_ncols=True, leave=True) as bar:
        yield from bar
