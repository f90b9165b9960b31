"""The API process's garbage collector, set for a server that keeps a large heap for its life.

Why: CPython's cyclic collector runs a young collection every 700 new container objects and now
and then a full one over every tracked object. An API process holding the boards of a million
judgements keeps a few hundred thousand long-lived objects (tallies, rosters, caches), and its
start reads every judgement once, making millions of short-lived ones. Measured with
`bench/leaderboard.py` at a million judgements under the defaults: 41 full collections, the
longest 519 ms, 13.7 s of collection in all, and full collections went on while judgements
arrived, each one a pause for whichever request held the interpreter lock. So the young
threshold is raised (`YOUNG`: fewer, still short, young collections), and once the boards are
warm everything alive is moved out of the collector's sight (`gc.freeze`): those objects live as
long as the process, and a later full collection scans only what came after. Reference counting
still frees every object that is not part of a cycle, frozen or not.
"""
from __future__ import annotations

import gc

YOUNG = 20_000  # new container objects between young collections (CPython's default: 700)
OLDER = 10  # young collections per middle one, middle ones per full one (default: 10, 10)


def tune() -> None:
    """Set the collector's thresholds for this process (call once, at start)."""
    gc.set_threshold(YOUNG, OLDER, OLDER)


def settle() -> None:
    """Collect once, then freeze what survives: call when the long-lived state is built."""
    gc.collect()
    gc.freeze()
