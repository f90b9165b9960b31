"""A running health tally reports what `health_report` computes from scratch over the same records,
however they arrive: in batches, human votes before and after the verdicts they are compared
with, against every human judge or a chosen reference set."""
from __future__ import annotations

import random

import pytest

from leaderboard.judge_health import CallRecord, JudgementRecord, health_report
from leaderboard.judge_health_tally import HealthTally
from leaderboard.types import Winner

JUDGES = ("anthropic/a", "anthropic/b", "import/c", "human/x", "human/y")
REFERENCES = (None, ["human/x"], ["human/y", "human/nobody"])
FAILURES = {"anthropic/a": 2, "anthropic/silent": 1}


def random_record(rng: random.Random) -> JudgementRecord:
    a, b = rng.sample(range(1, 9), 2)  # few submissions: pairs repeat across judges
    judge = rng.choice(JUDGES)
    calls = tuple(
        CallRecord(first=rng.choice((a, b, None)), winner=rng.choice(list(Winner)),
                   reminded=rng.choice((None, False, True)))
        for _ in range(1 if judge.startswith("human/") else rng.choice((1, 2, 2)))
    )
    lengths = rng.choice(((None, None), (10, 10), (rng.randint(1, 50), rng.randint(1, 50))))
    return JudgementRecord(judge=judge, a_id=a, b_id=b, outcome=rng.choice(list(Winner)), calls=calls,
                           a_length=lengths[0], b_length=lengths[1])


@pytest.mark.parametrize("seed", range(6))
def test_the_tally_reports_what_a_computation_from_scratch_gives(seed: int) -> None:
    rng = random.Random(seed)
    tally, seen = HealthTally(), []
    while len(seen) < 400:
        batch = [random_record(rng) for _ in range(rng.choice((1, 3, 40)))]
        tally.add(batch)
        seen.extend(batch)
        for humans in REFERENCES:
            assert tally.report(FAILURES, humans) == health_report(seen, FAILURES, None, humans)
    assert tally.records == len(seen)
    report = tally.report(FAILURES)
    assert any(h.human_votes for h in report.judges) and report.voters.votes  # the human figures were exercised


def test_a_vote_after_the_verdicts_is_compared_with_them() -> None:
    verdicts = [JudgementRecord("anthropic/a", 1, 2, Winner.A, (CallRecord(1, Winner.A),)),
                JudgementRecord("anthropic/a", 2, 1, Winner.A, (CallRecord(2, Winner.A),))]  # b of (1, 2) wins
    tally = HealthTally()
    tally.add(verdicts)
    assert tally.report().judges[0].human_votes == 0
    tally.add([JudgementRecord("human/x", 1, 2, Winner.A, (CallRecord(1, Winner.A),))])
    judge = tally.report().judges[0]
    assert (judge.human_votes, judge.human_pairs, judge.human_agreement) == (2, 1, 0.5)
    tally.add([JudgementRecord("anthropic/a", 1, 2, Winner.A, ())])  # after the vote: kept at once
    assert tally.report().judges[0].human_votes == 3


def test_a_reference_set_holds_human_judges_only() -> None:
    tally = HealthTally()
    tally.add([JudgementRecord("anthropic/a", 1, 2, Winner.A, ())])
    with pytest.raises(ValueError, match="anthropic/a"):
        tally.report(humans=["human/x", "anthropic/a"])
