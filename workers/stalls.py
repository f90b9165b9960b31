"""What an event loop that does not answer is doing, for the message that reports it.

A call onto the engine's loop that times out says nothing about why; this names the line the
loop's thread is on (a blocking call on the loop shows here) and, for every task, the chain of
awaits it is suspended in (a task waiting on a peer shows there). Read from another thread
without the loop's help, so it works on a loop that is stuck; a task list read while the loop
runs may miss a task that starts meanwhile, which a diagnosis can live with.
"""
from __future__ import annotations

import asyncio
import sys
import threading
import traceback
from pathlib import Path

MAX_DEPTH = 30


def awaiting(coro: object) -> list[str]:
    """Where a suspended coroutine is, down the chain of what each level awaits."""
    found = []
    while coro is not None and len(found) < MAX_DEPTH:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            found.append(f"{frame.f_code.co_name} ({Path(frame.f_code.co_filename).name}:{frame.f_lineno})")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return found


def describe(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> str:
    """The loop thread's current stack and each pending task's await chain, as text."""
    lines = []
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None:
        lines.append(f"thread {thread.name}: not running")
    else:
        stack = traceback.extract_stack(frame)[-8:]
        lines.append(f"thread {thread.name} is at: " + " <- ".join(
            f"{entry.name} ({Path(entry.filename).name}:{entry.lineno})" for entry in reversed(stack)))
    try:
        tasks = list(asyncio.all_tasks(loop))
    except RuntimeError:  # the set changed while read: once more
        tasks = list(asyncio.all_tasks(loop))
    for task in sorted(tasks, key=lambda t: t.get_name()):
        if not task.done():
            lines.append(f"task {task.get_name()} awaits: " + " -> ".join(awaiting(task.get_coro())))
    return "\n".join(lines)
