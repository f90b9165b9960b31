"""Imported verdicts keep their consistency in judge health (issue 24, item 3): an MT-Bench-style
file whose judge gave `tie (inconsistent)` on some pairs (each row judged in both orders) is
imported through the real importer into the app's store (SQLite, then PostgreSQL); the verdicts
`/api/judgements?filter=inconsistent` lists are the ones `GET /api/judges` counts as inconsistent,
its `calls` counts every verdict and its tie rate is over all of them. A file of one-call votes
beside it keeps a null consistency (nothing says how two orders compared)."""
from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from service.usecases.importers.battles import load_battles
from tests.api_fixtures import store_of

# (question, a, b, winner): two inconsistent ties, a tie both orders agreed on, two wins.
MT_BENCH = [(81, "m1", "m2", "tie (inconsistent)"), (82, "m1", "m2", "model_a"), (83, "m1", "m3", "model_b"),
            (84, "m2", "m3", "tie"), (85, "m2", "m3", "tie (inconsistent)")]
ARENA = "question_id,model_a,model_b,winner\nq1,m1,m2,model_a\nq2,m2,m3,tie\n"


def test_inconsistent_ties_count_in_consistency_calls_and_tie_rate(client: TestClient, tmp_path: Path) -> None:
    store = store_of(client)
    mt_bench = tmp_path / "mt_bench.jsonl"
    mt_bench.write_text("".join(json.dumps({"question_id": q, "model_a": a, "model_b": b, "winner": w,
                                            "judge": "gpt4_pair", "turn": 1}) + "\n" for q, a, b, w in MT_BENCH))
    arena = tmp_path / "arena.csv"
    arena.write_text(ARENA)
    load_battles(store, mt_bench)
    load_battles(store, arena)

    listed = client.get("/api/judgements", params={"judge": "import/gpt4_pair", "filter": "inconsistent"})
    assert listed.status_code == 200, listed.text
    assert len(listed.json()["judgements"]) == 2

    response = client.get("/api/judges")
    assert response.status_code == 200, response.text
    judges = {j["judge"]: j for j in response.json()["judges"]}
    gpt4 = judges["import/gpt4_pair"]
    # Five verdicts of both orders, two of them inconsistent: consistency 3/5, as the list says.
    assert gpt4["judgements"] == 5 and gpt4["consistency"] == 3 / 5
    # Each verdict stored without its calls counts as one call, its stored verdict: three ties.
    assert gpt4["calls"] == 5 and gpt4["tie_rate"] == 3 / 5
    votes = judges["import/arena"]
    assert (votes["judgements"], votes["calls"], votes["consistency"], votes["tie_rate"]) == (2, 2, None, 1 / 2)
    # The store's own computation from scratch says the same.
    assert {h.judge: (h.consistency, h.calls, h.tie_rate) for h in store.judge_health()} == {
        name: (j["consistency"], j["calls"], j["tie_rate"]) for name, j in judges.items()}
