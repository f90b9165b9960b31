"""Free space on the disk of a SQLite database: below MIN_FREE_BYTES a write is refused before
it begins (`store.StoreFull`), rather than left to SQLite, whose write may still fit in its WAL
file while the next checkpoint, or the next writer, fails: one rule, the same for every writer."""
from __future__ import annotations

import os
from pathlib import Path

MIN_FREE_BYTES = 1 << 20  # a batch of submissions and a WAL's growth, with room to spare


def free_bytes(path: Path) -> int:
    """Bytes this process may still write on the disk holding `path` (root may use the blocks
    the file system reserves for it)."""
    info = os.statvfs(path)
    blocks = info.f_bfree if os.geteuid() == 0 else info.f_bavail
    return blocks * info.f_frsize


def shortage(path: Path, minimum: int = MIN_FREE_BYTES) -> str | None:
    """Why the disk holding `path` is full for joust (its free bytes), or None."""
    try:
        free = free_bytes(path)
    except OSError:  # gone, or not ours to look at: the write itself will tell
        return None
    return None if free >= minimum else f"{free} bytes free on its disk (joust keeps {minimum} free)"
