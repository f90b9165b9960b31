"""What a failed match paid is counted: a match that fails after some calls (a compqa side
scored, factsim sources extracted, pairwise verdicts unreadable) charges their cost to the
match, and the tournament's `spent_usd` and its budget check include it. End to end: a real RQ
burst worker, real Redis and SQLite, the real anthropic SDK against the fake Messages API, a
price from a JOUST_PRICES file; the 4 -> 5 migration is tested in tests/test_schema.py."""
from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from service.config import Settings
from service.store import Store
from tests.fake_anthropic import FakeAnthropic
from tests.fake_policies import (
    block,
    fact_lines,
    rubric_points,
    rubric_scores,
    verdict_json,
)
from tests.test_criteria_compqa import scores
from tests.test_criteria_factsim import SUMMARIES
from tests.test_criteria_factsim import submit as submit_summaries
from tests.worker_fixtures import assert_calls_fit, start, submit, work
from workers.budget import Meter
from workers.criteria.compqa_prompt import ANSWER_TAG
from workers.gate import Gate, GatedJudge
from workers.providers.anthropic_judge import AnthropicJudge
from workers.providers.offline_judge import OfflineJudge

JUDGE = "anthropic/fake-judge"
PER_MTOK = 1000.0  # USD per million tokens in and out: one compqa call costs about $1.5
TOTALS = {"good": 17, "mid": 12, "bad": 5}


@pytest.fixture
def env_vars(tmp_path: Path) -> dict[str, str]:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({JUDGE: {"input": PER_MTOK, "output": PER_MTOK}}))
    return {"JOUST_PRICES": str(prices), "HF_HUB_OFFLINE": "1", "JOUST_RETRY_BACKOFF": "0.05",
            "JOUST_JOB_RETRIES": "1", "JOUST_WORKER_MATCHES": "1", "JOUST_JUDGE_CONCURRENCY": "1"}


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(rubric_scores(TOTALS)) as server:
        yield server


def billed(fake: FakeAnthropic) -> float:
    """What the fake's answered requests cost (errors carry no tokens)."""
    return sum(r.input_tokens + r.output_tokens for r in fake.received) * PER_MTOK / 1e6


def failed_costs(db: Store) -> list[tuple[str, float | None]]:
    with db.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text("select status, failed_cost_usd from matches order by id"))]


def unreadable_for(model: str) -> object:
    """A rubric judge whose score of `model`'s answer is out of range, every time."""
    right = rubric_scores(TOTALS)

    def decide(system: str, users: list[str]) -> str:
        if f"[{model}]" in (block(users[0], ANSWER_TAG) or ""):
            return json.dumps({**rubric_points(10), "9": 4})
        return right(system, users)

    return decide


def test_a_compqa_match_failing_after_one_score_charges_it_and_keeps_the_score(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    fake.decide = unreadable_for("good")
    submit(db, questions=1)
    tid = start(db, env, judge=JUDGE, criteria="compqa", models=["good", "mid"])
    view = work(env, db, tid)
    assert (view.status, view.matches_failed) == ("failed", 1)
    assert fake.replies == 3  # mid scored once, good asked twice (the reminder)
    assert db.tournament_judgements(tid) == []  # no judgement records these calls ...
    assert view.spent_usd == pytest.approx(billed(fake)) and view.spent_usd > 0  # ... the match does
    assert failed_costs(db) == [("failed", pytest.approx(billed(fake)))]
    assert db.tournament_spend(tid) == pytest.approx(billed(fake))
    # The side that was scored kept its score: the next run over it pays for the other side only.
    models = {s.id: s.model for s in db.list_submissions()}
    assert [models[sid] for sid, *_ in scores(db)] == ["mid"]
    paid = fake.replies
    again = work(env, db, start(db, env, judge=JUDGE, criteria="compqa", models=["mid", "bad"]))
    assert again.matches_done == 1 and fake.replies == paid + 1


@pytest.mark.xdist_group("minilm_encoder")  # the model loads once, in the process that runs its tests
def test_a_factsim_match_failing_after_its_extractions_charges_them(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    fake.decide = fact_lines()
    submit_summaries(db, {m: SUMMARIES[m] for m in ("covering", "partial")}, sources=["No facts here, only prose."])
    tid = start(db, env, judge=JUDGE, criteria="factsim")
    view = work(env, db, tid)
    assert (view.status, view.matches_failed, fake.replies) == ("failed", 1, 3)  # the source, both summaries
    assert view.spent_usd == pytest.approx(billed(fake)) and view.spent_usd > 0
    assert db.get_tournament(tid).spent_usd == db.list_tournaments()[0].spent_usd == view.spent_usd


def test_the_budget_counts_what_a_failed_match_paid(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    fake.decide = unreadable_for("good")
    submit(db, questions=1)  # matches (good, mid), (good, bad), (mid, bad), one at a time
    budget = 7.0  # room for the three calls the first match pays before it fails, and a little more
    tid = start(db, env, judge=JUDGE, criteria="compqa", budget=budget)
    view = work(env, db, tid)
    assert (view.status, view.stopped_reason) == ("cancelled", "budget")
    assert view.matches_failed >= 1 and view.matches_done < 3
    # Every call was sent only when what was paid before it (the failed match's calls included)
    # and its own reservation fitted: a budget blind to failed matches would have sent more.
    paid = assert_calls_fit(fake, budget, PER_MTOK)
    assert view.spent_usd == pytest.approx(paid) == pytest.approx(billed(fake))
    # what the judgements did not record, the failed matches did
    recorded = sum(j["cost_usd"] for j in db.tournament_judgements(tid))
    assert sum(cost or 0 for _, cost in failed_costs(db)) == pytest.approx(billed(fake) - recorded)
    assert billed(fake) - recorded >= 3 * min(r.input_tokens for r in fake.received) * PER_MTOK / 1e6  # 3 calls at least


def test_a_retried_attempt_charges_what_it_paid_before_the_provider_error(
    db: Store, env: Settings, fake: FakeAnthropic, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each attempt sends the failing call three times; the waits between sends (1-2 s and 2-4 s
    in production) are shortened here: the engine runs in this process."""
    monkeypatch.setenv("JOUST_CALL_BACKOFF", "0.05")
    right = rubric_scores(TOTALS)

    def decide(system: str, users: list[str]) -> str:
        if "[good]" in (block(users[0], ANSWER_TAG) or ""):
            raise RuntimeError("the fake answers 500 for good's answer")  # a provider error, every time
        return right(system, users)

    fake.decide = decide
    submit(db, questions=1)
    tid = start(db, env, judge=JUDGE, criteria="compqa", models=["good", "mid"])
    view = work(env, db, tid)
    capsys.readouterr()  # the fake's tracebacks of the 500s
    assert (view.status, view.matches_failed, fake.replies) == ("failed", 1, 1)  # mid's score, once
    with db.engine.connect() as conn:
        assert conn.execute(text("select last_error from matches")).scalar_one().startswith("gave up after 2 attempts")
    assert view.spent_usd == pytest.approx(billed(fake)) and view.spent_usd > 0


def test_the_gated_judge_meters_every_reply_and_hides_nothing_else(fake: FakeAnthropic) -> None:
    fake.queue_replies(json.dumps(rubric_points(12)), verdict_json("A"))
    meter = Meter()
    judge = GatedJudge(AnthropicJudge("fake-judge", Settings(anthropic_base_url=fake.url, anthropic_api_key="k")),
                       Gate(spec=JUDGE, meter=meter, max_tokens=512))

    async def ask() -> None:
        await judge.complete("system", [{"role": "user", "content": "<answer>\n[mid] text\n</answer>"}])
        await judge.compare("Q?", "one", "two")

    asyncio.run(ask())
    assert (meter.calls, meter.input_tokens, meter.output_tokens) == (
        2, sum(r.input_tokens for r in fake.received), sum(r.output_tokens for r in fake.received))
    assert meter.cost(JUDGE, {}) is None  # no price: no cost, never a guess
    offline = GatedJudge(OfflineJudge("rubric"), Gate(spec="offline/rubric", meter=Meter(), max_tokens=512))
    assert getattr(offline, "complete", None) is None and offline.score_compqa and offline.version


def test_an_unreadable_pairwise_verdict_charges_both_orders_and_their_reminders(
    db: Store, env: Settings, fake: FakeAnthropic
) -> None:
    """overall: each order asks, then reminds, and gets no verdict; the match fails with four
    paid calls no judgement records. The order that failed second still finishes and counts."""
    fake.decide = lambda system, users: "Both answers have their merits."
    submit(db, questions=1)
    tid = start(db, env, judge=JUDGE)
    view = work(env, db, tid)
    matches = view.matches_total
    assert (view.status, view.matches_failed) == ("failed", matches)
    assert fake.replies == 4 * matches  # two orders, each asked and reminded
    assert db.tournament_judgements(tid) == []
    assert [status for status, _ in failed_costs(db)] == ["failed"] * matches
    assert sum(cost for _, cost in failed_costs(db)) == pytest.approx(billed(fake)) and billed(fake) > 0
    assert view.spent_usd == pytest.approx(billed(fake))
