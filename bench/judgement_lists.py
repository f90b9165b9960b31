"""GET /api/judgements' store query (`Store.list_judgements`) with a million judgements stored.

Not a test: run `python bench/judgement_lists.py` (about a minute, mostly building the data;
`--judgements 100000` for a quick look; `--url postgresql+psycopg://...` to run it on an empty
PostgreSQL database instead of a temporary SQLite file).

It stores `bench/leaderboard.py`'s data (100 models x 4 scenarios, 500 questions, one judge), then
times the first page of 50 (best of three) for each kind of list the page opens: the judge's
newest, each filter, a player at each level (a board's row), two players (a matrix cell), a
question, a tournament, and a page 5,000 deep (the ways to a page: `service.store.judgement_lists`).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.leaderboard import JUDGE, populate  # noqa: E402
from leaderboard.types import Level  # noqa: E402
from service.store import JudgementQuery, Shown, Store  # noqa: E402

CASES: list[tuple[str, dict]] = [
    ("newest", {}),
    ("inconsistent (none)", {"shown": Shown.INCONSISTENT}),
    ("ties", {"shown": Shown.TIES}),
    ("a model", {"player": "model-007"}),
    ("a model, ties", {"player": "model-007", "shown": Shown.TIES}),
    ("a scenario", {"level": Level.SCENARIO, "player": "scenario-1"}),
    ("a system", {"level": Level.SYSTEM, "player": "model-007 + scenario-1"}),
    ("two models", {"player": "model-007", "opponent": "model-042"}),
    ("two scenarios", {"level": Level.SCENARIO, "player": "scenario-1", "opponent": "scenario-2"}),
    ("two systems", {"level": Level.SYSTEM, "player": "model-007 + scenario-1", "opponent": "model-042 + scenario-2"}),
    ("a question", {"question_id": "bq17"}),
    ("a model in a tournament", {"player": "model-007", "tournament_id": 1}),
    ("a model, 5,000 deep", {"player": "model-007", "offset": 5000}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgements", type=int, default=1_000_000)
    parser.add_argument("--url", default=None, help="an empty database (default: a temporary SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(args.url or f"sqlite:///{Path(tmp) / 'joust.db'}")
        try:
            populate(store, args.judgements, 100, 4, 500, 0)
            for name, params in CASES:
                query = JudgementQuery(judge=JUDGE, limit=50, **params)
                best = float("inf")
                for _ in range(3):
                    began = time.perf_counter()
                    rows = store.list_judgements(query)
                    best = min(best, time.perf_counter() - began)
                print(f"{name:26s} {best * 1000:8.1f} ms  {len(rows)} rows", flush=True)
        finally:
            store.close()


if __name__ == "__main__":
    main()
