"""The offline judge (`offline/rubric`): no network, no key, deterministic, order-free."""
from __future__ import annotations

import asyncio
import json
import random

import pytest

from leaderboard.consistency import combine
from leaderboard.rubric import RULES_VERSION, RubricScore
from leaderboard.types import OrderPolicy, Submission, Winner
from service.config import OFFLINE_JUDGE, Settings
from tests.test_rubric import GOOD, answer
from workers.errors import PermanentJudgeError
from workers.judge import Judge
from workers.pairwise import judge_pair
from workers.providers.offline_judge import OfflineJudge, explain
from workers.registry import JudgePool, build_judge, is_known_judge

QUESTION = "Compare Python and Java"
POOR = "Python is nice. Java is also nice. Both work."


def compare(judge: Judge, first: str, second: str, question: str = QUESTION):
    return asyncio.run(judge.compare(question, first, second))


def test_the_better_built_answer_wins_in_either_position() -> None:
    judge = OfflineJudge("rubric")
    assert compare(judge, GOOD, POOR).winner is Winner.A
    assert compare(judge, POOR, GOOD).winner is Winner.B


def test_equal_totals_tie_and_say_so() -> None:
    reply = compare(OfflineJudge("rubric"), GOOD, GOOD)
    assert reply.winner is Winner.TIE
    assert reply.reason == "Structural rubric: A 11/11, B 11/11; identical on every criterion."


def test_reason_names_the_criteria_that_differ() -> None:
    no_choice = answer(choice=None)
    reply = compare(OfflineJudge("rubric"), no_choice, GOOD)
    assert reply.winner is Winner.B
    assert reply.reason == "Structural rubric: A 10/11, B 11/11; B higher on C7 (explicit final choice)."


def test_raw_records_both_scores_and_the_objects_read_from_the_question() -> None:
    reply = compare(OfflineJudge("rubric"), GOOD, POOR)
    raw = json.loads(reply.raw)
    assert raw["judge"] == "offline/rubric" and raw["winner"] == "A" and raw["rules"] == RULES_VERSION
    assert raw["objects"] == ["Python", "Java"]
    assert raw["A"]["total"] == 11 and raw["A"]["points"]["C10"] == 2
    assert raw["B"]["total"] < raw["A"]["total"] and set(raw["B"]["notes"]) == set(raw["B"]["points"])


def test_a_question_without_objects_scores_without_c10() -> None:
    raw = json.loads(compare(OfflineJudge("rubric"), GOOD, POOR, question="Which answer is best?").raw)
    assert raw["objects"] == [] and "C10" not in raw["A"]["points"] and raw["A"]["max"] == 9


def test_zero_tokens_measured_latency_and_deterministic() -> None:
    judge = OfflineJudge("rubric")
    first, second = compare(judge, GOOD, POOR), compare(judge, GOOD, POOR)
    assert (first.input_tokens, first.output_tokens, first.reminded) == (0, 0, False)
    assert first.latency_ms > 0
    assert (first.winner, first.reason, first.raw) == (second.winner, second.reason, second.raw)


def test_both_orders_always_agree() -> None:
    # Order-free by construction: the consistency rule never flags it as position-biased.
    judge = OfflineJudge("rubric")
    a = Submission(1, "q1", QUESTION, "model-a", "default", GOOD)
    b = Submission(2, "q1", QUESTION, "model-b", "default", POOR)
    calls, outcome = asyncio.run(judge_pair(judge, a, b, OrderPolicy.BOTH, random.Random(7)))
    assert len(calls) == 2 and {c.first for c in calls} == {1, 2}
    assert outcome.winner is Winner.A and outcome.consistent
    assert combine(1, 2, calls) == outcome


def test_explain_lists_each_sides_gains() -> None:
    a = RubricScore({1: 1, 7: 0, 15: 1})
    b = RubricScore({1: 0, 7: 1, 15: 1})
    assert explain(a, b) == ("Structural rubric: A 2/3, B 2/3; A higher on C1 (short introduction); "
                             "B higher on C7 (explicit final choice).")  # fmt: skip


def test_registry_needs_no_key_and_no_network() -> None:
    settings = Settings()  # no provider key, no base URL
    assert OFFLINE_JUDGE == "offline/rubric" and is_known_judge(OFFLINE_JUDGE)
    judge = build_judge(OFFLINE_JUDGE, settings)
    assert isinstance(judge, OfflineJudge) and isinstance(judge, Judge)
    pool = JudgePool(settings)
    assert pool.get(OFFLINE_JUDGE) is pool.get(OFFLINE_JUDGE)
    asyncio.run(pool.aclose())  # no client to close: must not fail
    with pytest.raises(PermanentJudgeError, match="unknown offline judge 'nope'.*offline/rubric"):
        build_judge("offline/nope", settings)


def test_the_service_knows_every_offline_judge_and_no_other() -> None:
    """The service refuses an unknown `offline/` judge without importing the workers: its list
    (service.config.OFFLINE_JUDGES) must name exactly the judges the workers have."""
    from service.config import OFFLINE_JUDGES
    from workers.providers.offline_judge import SCORERS

    assert sorted(OFFLINE_JUDGES) == sorted(f"offline/{name}" for name in SCORERS)
    for name in OFFLINE_JUDGES:
        assert isinstance(build_judge(name, Settings()), OfflineJudge)
