"""What `joust up`'s children write on stderr (their logs, a traceback): passed on to `joust up`'s
own stderr line by line as it comes, and the last lines of each run of a child kept, so that a
child that keeps dying at start can be named with its own error."""
from __future__ import annotations

import sys
import threading
from collections import deque
from typing import IO

TAIL_LINES = 30  # a Python traceback with its chained cause fits
_WRITING = threading.Lock()  # one child's line at a time on the shared stderr


class Tail:
    """Reads one child's stderr on a thread of its own until the child (and whatever it forked)
    closes it: each line is written through to this process's stderr, the last `lines` kept."""

    def __init__(self, stream: IO[bytes], lines: int = TAIL_LINES) -> None:
        self._stream = stream
        self._kept: deque[bytes] = deque(maxlen=lines)
        self._thread = threading.Thread(target=self._pump, name="child-stderr", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            for line in self._stream:
                self._kept.append(line)
                _write(line)
        except (OSError, ValueError):  # the pipe was closed under us: nothing more to read
            pass
        finally:
            self._stream.close()

    def text(self, wait_s: float = 2.0) -> str:
        """The last lines the child wrote, once it has closed its stderr (waiting up to
        `wait_s` for the last of them)."""
        self._thread.join(wait_s)
        return b"".join(self._kept).decode("utf-8", "replace").rstrip()


def _write(line: bytes) -> None:
    """Write a child's line to this process's stderr; a stderr that is gone loses it (the child
    must not block on a full pipe because nobody reads our stderr)."""
    with _WRITING:
        try:
            out = getattr(sys.stderr, "buffer", None)
            if out is not None:
                out.write(line)
            else:  # a stderr replaced by text (a test's capture)
                sys.stderr.write(line.decode("utf-8", "replace"))
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
