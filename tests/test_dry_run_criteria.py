"""Dry runs of the `compqa` and `factsim` criteria sets count the calls those sets really make
(one score per submission, one extraction per text, what the score book holds already free),
checked against what the fake Messages API then receives when a real RQ burst worker runs the
same tournament (real Redis and SQLite, the real anthropic SDK and MiniLM encoder); and the
pure counting in `leaderboard.callplan` on golden cases."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from leaderboard.callplan import (
    CallPlan,
    Stored,
    StoredScore,
    count_calls,
    facts_output_tokens,
    stored_score,
)
from leaderboard.keys import content_hash
from leaderboard.pricing import estimate_tokens
from leaderboard.templates import (
    ESTIMATED_OUTPUT_TOKENS,
    PROMPT_OVERHEAD_TOKENS,
    factsim_score_version,
)
from leaderboard.types import OrderPolicy, Submission
from service.config import Settings
from service.store import NewSubmission, Store
from service.store.tournament_rows import Tournament
from service.web.app import create_app
from tests.fake_anthropic import FakeAnthropic
from tests.fake_policies import fact_lines, rubric_scores
from tests.test_criteria_factsim import SOURCE, SUMMARIES
from tests.worker_fixtures import MODELS, submit, work

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
JUDGE = "anthropic/fake-judge"
PER_MTOK = 1000.0  # USD per million tokens in and out, from the JOUST_PRICES file
TOTALS = {"good": 17, "mid": 12, "bad": 5, "newcomer": 19}


def sub(sid: int, output: str = "", question: str = "Q?", qid: str = "q") -> Submission:
    return Submission(sid, qid, question, f"m{sid}", "default", output or f"answer {sid}")


# ---- leaderboard.callplan, pure --------------------------------------------------------------


def test_compqa_scores_each_submission_of_the_pairs_once_and_reuses_stored_scores() -> None:
    s = [sub(i) for i in range(1, 5)]
    todo = [(s[0], s[1]), (s[0], s[2]), (s[1], s[2]), (s[2], s[3])]
    fresh = count_calls("compqa", todo)
    one = estimate_tokens("Q?") + estimate_tokens("answer 1") + PROMPT_OVERHEAD_TOKENS["compqa"]
    assert fresh == CallPlan(4, 4 * one, 4 * ESTIMATED_OUTPUT_TOKENS)  # not 2 calls per pair: 8
    assert count_calls("compqa", todo, OrderPolicy.SINGLE) == fresh  # nothing is shown side by side
    book = {1: StoredScore("compqa-v1"), 2: StoredScore("compqa-v0"), 3: StoredScore("compqa-v1+structure-v1")}
    assert count_calls("compqa", todo, stored=Stored(scores=book)).calls == 3  # 2 (old prompt), 3 (other rules), 4
    offline = Stored(scores=book, compqa_version="compqa-v1+structure-v1")
    assert count_calls("compqa", todo, stored=offline).calls == 3  # 1, 2, 4
    assert count_calls("compqa", []) == CallPlan()


def test_pairwise_sets_count_two_calls_per_pair_in_both_orders() -> None:
    todo = [(sub(1), sub(2))]
    both, single = count_calls("overall", todo), count_calls("overall", todo, OrderPolicy.SINGLE)
    assert (both.calls, single.calls, both.input_tokens) == (2, 1, 2 * single.input_tokens)
    assert count_calls("dimensions", todo).input_tokens - both.input_tokens == 2 * (455 - 280)
    with pytest.raises(ValueError, match="no call plan for criteria 'vibes'"):
        count_calls("vibes", todo)


def test_factsim_extracts_each_summary_once_and_a_source_once_per_unscored_pair() -> None:
    s = [sub(i) for i in range(1, 6)]
    src = ("the source text",)
    sources = {i: src for i in range(1, 6)}
    round_robin = [(a, b) for i, a in enumerate(s[:4]) for b in s[i + 1:4]]
    extract = [estimate_tokens(t) + PROMPT_OVERHEAD_TOKENS["factsim"] for t in (src[0], "answer 1")]
    got = count_calls("factsim", round_robin, stored=Stored(sources=sources))
    assert got.calls == 1 + 4  # the source with the first pair; later pairs find it in a side's score
    assert got.input_tokens == extract[0] + 4 * extract[1]
    assert got.output_tokens == facts_output_tokens(src[0]) + 4 * facts_output_tokens("answer 1")
    # (1, 2) then (3, 4): no side of the second pair holds the source's facts yet.
    assert count_calls("factsim", [(s[0], s[1]), (s[2], s[3])], stored=Stored(sources=sources)).calls == 2 + 4
    # A stored score for these sources is reused, and its facts spare the opponent's pair the source.
    book = {1: stored_score({"template_version": factsim_score_version(src), "facts_version": "factsim-v1",
                             "sources": [{"hash": content_hash(src[0]), "facts": []}]})}
    assert count_calls("factsim", [(s[0], s[4])], stored=Stored(scores=book, sources=sources)).calls == 1
    # A score for other sources is redone, but the facts it holds still count.
    moved = {**sources, 1: (src[0], "a second source"), 5: (src[0], "a second source")}
    assert count_calls("factsim", [(s[0], s[4])], stored=Stored(scores=book, sources=moved)).calls == 3
    # Facts from an older prompt are not reused.
    old = {1: stored_score({"template_version": "x", "facts_version": "factsim-v0",
                            "sources": [{"hash": content_hash(src[0]), "facts": []}]})}
    assert count_calls("factsim", [(s[0], s[4])], stored=Stored(scores=old, sources=sources)).calls == 3
    # Sides with different (or unreadable) sources fail before any call.
    assert count_calls("factsim", [(s[0], s[1])], stored=Stored(sources={1: src, 2: ("other",)})).calls == 0
    assert count_calls("factsim", [(s[0], s[1])], stored=Stored(sources={1: src, 2: None})).calls == 0


def test_a_fact_list_is_estimated_about_as_long_as_its_text_and_capped() -> None:
    assert facts_output_tokens("x" * 400) == 125 + 10
    assert facts_output_tokens("x" * 40_000) == 512


# ---- end to end: the dry run against the calls the fake receives -------------------------------


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(rubric_scores(TOTALS)) as server:
        yield server


@pytest.fixture
def env_vars(tmp_path: Path) -> dict[str, str]:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({JUDGE: {"input": PER_MTOK, "output": PER_MTOK}}))
    # One match at a time: a dry run counts the calls in plan order, as they are then made. With
    # matches in flight, the order in which matches over one source take it can differ a little.
    return {"JOUST_API_KEY": KEY, "JOUST_PRICES": str(prices), "HF_HUB_OFFLINE": "1", "JOUST_WORKER_MATCHES": "1"}


@pytest.fixture
def client(env: Settings, db: Store) -> Iterator[TestClient]:
    with TestClient(create_app(env)) as client:
        yield client


def dry(client: TestClient, **body: object) -> dict:
    response = client.post("/api/tournaments?dry_run=true", json={"judge": JUDGE, **body}, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()


def run(client: TestClient, env: Settings, db: Store, **body: object) -> Tournament:
    response = client.post("/api/tournaments", json={"judge": JUDGE, **body}, headers=AUTH)
    assert response.status_code == 202, response.text
    return work(env, db, response.json()["id"])


def billed(fake: FakeAnthropic, since: int = 0) -> float:
    return sum(r.input_tokens + r.output_tokens for r in fake.received[since:]) * PER_MTOK / 1e6


def predicts(client: TestClient, env: Settings, db: Store, fake: FakeAnthropic, **body: object) -> dict:
    """Dry-run `body`, run it, and check the dry run's calls against the requests the fake got
    (and its cost against what they were billed, within the chars/4 estimate's error)."""
    before, seen = fake.requests, len(fake.received)
    got = dry(client, **body)
    view = run(client, env, db, **body)
    assert fake.requests - before == got["calls"], (got, view)
    assert got["estimated_cost_usd"] == pytest.approx(billed(fake, seen), rel=0.1, abs=1e-9)
    assert view.spent_usd == pytest.approx(billed(fake, seen))
    return got


def test_a_compqa_dry_run_counts_one_score_per_submission(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    submit(db, questions=2)  # 3 models on each of 2 questions: 6 pairs
    got = dry(client, criteria="compqa")
    assert (got["matches"], got["cached"], got["calls"], got["priced"]) == (6, 0, 6, True)
    assert dry(client, criteria="overall")["calls"] == 12  # what the pairwise formula said before
    # A first run over two models of one question scores those two ...
    assert predicts(client, env, db, fake, criteria="compqa", models=["good", "mid"], questions=["q0"])["calls"] == 2
    # ... so the full run pays for the four others only, and not for the pair already judged.
    got = predicts(client, env, db, fake, criteria="compqa")
    assert (got["matches"], got["cached"], got["calls"]) == (6, 1, 4)
    db.add_submissions([NewSubmission(question_id="q0", question="Question 0?", model="newcomer", scenario="default",
                                      output="[newcomer] answer to 0")])
    got = predicts(client, env, db, fake, criteria="compqa")
    assert (got["matches"], got["cached"], got["calls"]) == (9, 6, 1)  # three new pairs, one new score
    assert dry(client, criteria="compqa") | {"seed": None} == {
        "matches": 9, "calls": 0, "cached": 9, "estimated_cost_usd": 0.0, "judge": JUDGE, "priced": True,
        "seed": None, "placeholders_skipped": 0, "delivery": "live"}
    assert fake.requests == 2 + 4 + 1 == len(MODELS) * 2 + 1


def test_a_compqa_dry_run_with_scores_but_no_judgements_costs_nothing(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    submit(db, questions=1)
    run(client, env, db, criteria="compqa", models=["good", "mid"])
    run(client, env, db, criteria="compqa", models=["good", "bad"])
    paid = fake.requests
    got = dry(client, criteria="compqa", models=["mid", "bad"])  # a new pair of scored submissions
    assert (got["matches"], got["cached"], got["calls"], got["estimated_cost_usd"]) == (1, 0, 0, 0.0)
    run(client, env, db, criteria="compqa", models=["mid", "bad"])
    assert fake.requests == paid


def submit_summaries(db: Store, question_id: str, models: dict[str, str], *, sources: object = None,
                     question: str | None = None) -> None:
    db.add_submissions([
        NewSubmission(question_id=question_id, question=question or f"Summarise the texts of {question_id}.",
                      model=m, scenario="default", output=o,
                      metadata={} if sources is None else {"sources": sources})
        for m, o in models.items()
    ])  # fmt: skip


FOUR = {**SUMMARIES, "wordy": "In short:\n" + SUMMARIES["partial"]}


@pytest.mark.xdist_group("minilm_encoder")  # the model loads once, in the process that runs its tests
def test_a_factsim_dry_run_counts_one_extraction_per_text(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    fake.decide = fact_lines()
    submit_summaries(db, "curie", FOUR, sources=[SOURCE])
    got = dry(client, criteria="factsim")
    assert (got["matches"], got["calls"]) == (6, 5)  # the source once, four summaries: not 12
    assert predicts(client, env, db, fake, criteria="factsim")["calls"] == 5
    # A newcomer: its summary only (its opponents' scores hold the source's facts).
    submit_summaries(db, "curie", {"terse": "Marie Curie | discovered | polonium"}, sources=[SOURCE])
    got = predicts(client, env, db, fake, criteria="factsim")
    assert (got["matches"], got["cached"], got["calls"]) == (10, 6, 1)


@pytest.mark.xdist_group("minilm_encoder")  # the model loads once, in the process that runs its tests
def test_a_factsim_dry_run_follows_sources_across_questions_and_counts_failing_pairs_free(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    fake.decide = fact_lines()
    # Two questions over the same source: each question's first pair extracts it (its sides'
    # scores are where the facts travel), so 2 source extractions, not 1. (Each question its own
    # text: a factsim judgement's key holds the question and the outputs, not the sources.)
    submit_summaries(db, "curie-1", {m: SUMMARIES[m] for m in ("covering", "partial")}, sources=[SOURCE])
    submit_summaries(db, "curie-2", {m: SUMMARIES[m] for m in ("partial", "inventing")}, sources=SOURCE)
    # The question as the source, two sources, and a pair whose sides disagree on their sources.
    submit_summaries(db, "inline", {m: SUMMARIES[m] for m in ("covering", "inventing")},
                     question=f"Summarise this text:\n{SOURCE}")
    submit_summaries(db, "two", {m: SUMMARIES[m] for m in ("covering", "partial")},
                     sources=[SOURCE, "Pierre Curie | married | Marie Curie"])
    submit_summaries(db, "mixed", {"covering": SUMMARIES["covering"]}, sources=[SOURCE])
    submit_summaries(db, "mixed", {"partial": SUMMARIES["partial"]})
    got = dry(client, criteria="factsim")
    assert (got["matches"], got["calls"]) == (5, (1 + 2) + (1 + 2) + (1 + 2) + (2 + 2) + 0)
    view = run(client, env, db, criteria="factsim")
    assert fake.requests == got["calls"] and (view.matches_done, view.matches_failed) == (4, 1)
    assert got["estimated_cost_usd"] == pytest.approx(billed(fake), rel=0.1)


@pytest.mark.xdist_group("minilm_encoder")  # the model loads once, in the process that runs its tests
def test_a_sampled_factsim_dry_run_predicts_sources_extracted_again(
    client: TestClient, env: Settings, db: Store, fake: FakeAnthropic
) -> None:
    """Sampled pairs (1, 3) then (2, 4) share no side: the source is extracted by both."""
    fake.decide = fact_lines()
    submit_summaries(db, "curie", FOUR, sources=[SOURCE])
    plans = {seed: dry(client, criteria="factsim", mode="sampled", opponents=1, seed=seed) for seed in range(40)}
    again = [seed for seed, got in plans.items() if got["calls"] == 2 + 4]
    assert again, plans  # some seed pairs the four in two disjoint pairs, or reaches them in that order
    assert predicts(client, env, db, fake, criteria="factsim", mode="sampled", opponents=1, seed=again[0])["calls"] == 6
