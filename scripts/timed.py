"""Run a command and say, after it ends, how long it took: wall time, CPU time of everything it
started (children and their children, once reaped) and the CPU floor, that CPU time spread over
every core. scripts/test runs the suite through it; the exit status is the command's."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    start = time.monotonic()
    status = subprocess.call(argv)
    wall = time.monotonic() - start
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = used.ru_utime + used.ru_stime
    cores = len(os.sched_getaffinity(0))
    print(f"suite time: {wall:.0f} s wall, {cpu:.0f} s CPU ({used.ru_utime:.0f} user + {used.ru_stime:.0f} "
          f"system), CPU floor on {cores} cores {cpu / cores:.0f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
