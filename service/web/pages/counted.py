"""What the tournaments pages read by counting every match of a tournament (its counts by status,
its spend), kept per key at the store's page mark it was read at.

Why: those counts scan every match of the tournaments shown (about 130 ms for one tournament of
200k matches), and a page asks for them at every request. A result read at the current mark
(`Store.page_mark`) is served as is. Past that mark, a result that counted fewer than `STALE_FROM`
matches is read again in the request (milliseconds); a bigger one is served at once, stale (the
page says so by being `pending`), while one background thread reads the newer one
(`service.usecases.refreshes`). So small tournaments are always current and a big one never makes a
page wait.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar
from weakref import WeakKeyDictionary

from service.store import Store
from service.usecases.refreshes import Refreshes

STALE_FROM = 20_000  # matches counted from which a stale result is served while a newer one is read
KEPT = 64  # results kept, the least recently read first out

T = TypeVar("T")


@dataclass(frozen=True)
class Marked(Generic[T]):
    """A value read at the page mark `mark`, having counted `matches` matches."""

    value: T
    mark: str
    matches: int


class Counted(Generic[T]):
    """Values by key, each kept with the page mark it was read at."""

    def __init__(self, name: str) -> None:
        self.refreshes = Refreshes(name)
        # by store (a process may serve several: the tests), then by key
        self._latest: WeakKeyDictionary[Store, OrderedDict[Hashable, Marked[T]]] = WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, store: Store, key: Hashable, mark: str, read: Callable[[], tuple[T, int]]) -> Marked[T]:
        """The value of `key` in `store` (`read` gives it with the matches it counted): current
        at `mark`, or a stale one of a big tournament (its `mark` differs) while a newer one is read."""
        latest = self._of(store, key)
        if latest is not None and (latest.mark == mark or latest.matches >= STALE_FROM):
            found = self.refreshes.soon((id(store), key), lambda: self._of(store, key), lambda m: m.mark == mark,
                                        lambda: self._read(store, key, read))
            if found is not None:
                return found
        return self._read(store, key, read, mark)

    def _of(self, store: Store, key: Hashable) -> Marked[T] | None:
        with self._lock:
            return self._latest.get(store, {}).get(key)

    def _read(self, store: Store, key: Hashable, read: Callable[[], tuple[T, int]],
              mark: str | None = None) -> Marked[T]:
        """`read` at `mark` (the store's, read first, when not given), and kept."""
        at = mark if mark is not None else store.page_mark().mark
        value, matches = read()
        fresh = Marked(value, at, matches)
        with self._lock:
            kept = self._latest.setdefault(store, OrderedDict())
            kept[key] = fresh
            kept.move_to_end(key)
            while len(kept) > KEPT:
                kept.popitem(last=False)
        return fresh
