"""Judge health served from the shared cache against computing it on every request.

Not a test: run `python bench/judges_cache.py` (`--judgements 1000000` for the README's scale;
the default 200,000 takes under a minute, mostly the import).

It imports `--judgements` verdicts (two calls each, with positions and reminder flags, plus some
human votes) into a SQLite store in a temporary directory with the store's own bulk import, then
times in-process:

- `scratch`: `Store.judge_health()`, what GET /api/judges did on every request before the cache;
- `hit`: `JudgeHealthCache.current()` with nothing new (a revision read and a parse-failure count);
- `after`: the first `current()` after one more judgement lands, which refreshes once (reading
  that judgement only, then reporting from the running tally).

The last line prints `ratio <scratch p50 / hit p95>`. Everything is deleted on exit.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboard.types import Winner
from service.store import NewSubmission, Store
from service.store.imports import ImportedJudgement
from service.usecases.judge_health_cache import JudgeHealthCache

MODELS = 100


def build(store: Store, judgements: int) -> tuple[list[int], int]:
    """`judgements` verdicts of one judge over MODELS answers per question, 1% of them also as
    human votes; the submission ids of question 0 and the number of questions."""
    pairs = MODELS * (MODELS - 1) // 2
    questions = max(1, -(-judgements // pairs))
    created = store.add_submissions_bulk([
        NewSubmission(question_id=f"q{q}", question=f"Question {q}?", model=f"m{m}", scenario="default",
                      output="x" * (10 + m))
        for q in range(questions) for m in range(MODELS)
    ])
    ids = [sid for sid, _ in created]
    rows, votes = [], []
    for n in range(judgements):
        q, k = divmod(n, pairs)
        i, j = _pair(k)
        a, b = ids[q * MODELS + i], ids[q * MODELS + j]
        first_wins = n % 3 != 0
        calls: list[dict] = [{"first": a, "winner": "A" if first_wins else "B", "reminded": n % 50 == 0},
                             {"first": b, "winner": "B", "reminded": False}]
        # a wins in both orders, or each order's second answer wins: a position-biased tie
        outcome = Winner.A if first_wins else Winner.TIE
        rows.append(ImportedJudgement(key=f"j{n}", a_id=a, b_id=b, outcome=outcome, calls=calls,
                                      consistent=first_wins))
        if n % 100 == 0:
            votes.append(ImportedJudgement(key=f"v{n}", a_id=a, b_id=b, outcome=Winner.B,
                                           calls=[{"first": a, "winner": "B"}]))
    store.import_judgements(name="bench", source="bench", judge="import/bench", criteria="overall", rows=rows)
    store.import_judgements(name="votes", source="bench", judge="human/bench", criteria="overall", rows=votes)
    return ids[:MODELS], questions


def _pair(k: int) -> tuple[int, int]:
    """The k-th unordered pair (i < j) of MODELS players."""
    i = 0
    while k >= MODELS - 1 - i:
        k -= MODELS - 1 - i
        i += 1
    return i, i + 1 + k


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    """Seconds per call of `fn`, `repeat` times."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgements", type=int, default=200_000)
    parser.add_argument("--hits", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="joust-bench-") as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'joust.db'}")
        try:
            t0 = time.perf_counter()
            first, _ = build(store, args.judgements)
            print(f"built {args.judgements} judgements in {time.perf_counter() - t0:.1f} s")
            scratch = timed(store.judge_health, 3)
            cache = JudgeHealthCache(store)
            cache.current()
            hits = sorted(timed(cache.current, args.hits))
            store.import_judgements(name="late", source="bench", judge="import/bench", criteria="overall", rows=[
                ImportedJudgement(key="late", a_id=first[0], b_id=first[-1], outcome=Winner.A,
                                  calls=[{"first": first[0], "winner": "A"}])])
            after = timed(cache.current, 1)[0]
            assert cache.computations == 2, cache.computations
        finally:
            store.close()
    scratch_p50 = statistics.median(scratch)
    hit_p50, hit_p95 = statistics.median(hits), hits[int(0.95 * (len(hits) - 1))]
    print(f"scratch p50 {scratch_p50 * 1000:.1f} ms (3 runs)")
    print(f"hit     p50 {hit_p50 * 1000:.2f} ms, p95 {hit_p95 * 1000:.2f} ms ({args.hits} requests)")
    print(f"after one new judgement: {after * 1000:.1f} ms (one refresh)")
    print(f"ratio {scratch_p50 / hit_p95:.0f}")


if __name__ == "__main__":
    main()
