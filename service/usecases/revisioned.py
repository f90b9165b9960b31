"""Results tagged with the revision they include everything up to, kept by key.

Why: boards, rosters and effect fits are views of the judgements, current as of the store's
revision (the `resolved` counter); a result computed at one revision serves every request that
read that revision or an older one, and no other. Several kinds of result share this one cache.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar


class Revisioned(Protocol):
    """A result that knows the revision it includes everything up to."""

    @property
    def revision(self) -> int: ...


R = TypeVar("R", bound=Revisioned)


class Lru(Generic[R]):
    """Results by key, each tagged with its revision; the least recently used go past `size`."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, R] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, revision: int) -> R | None:
        """The entry if it includes everything up to `revision`."""
        with self._lock:
            item = self._items.get(key)
            if item is None or item.revision < revision:
                return None
            self._items.move_to_end(key)
            return item

    def latest(self, key: Hashable) -> R | None:
        """The entry whatever its revision (a page may serve it stale while a newer one is made)."""
        with self._lock:
            return self._items.get(key)

    def put(self, key: Hashable, item: R) -> None:
        """Keep `item` unless a thread that finished first left a newer one."""
        with self._lock:
            old = self._items.get(key)
            if old is None or old.revision <= item.revision:
                self._items[key] = item
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
