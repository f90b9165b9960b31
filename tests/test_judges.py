"""The rule that picks a board's judge: named, latest tournament, most verdicts, humans apart."""
from __future__ import annotations

import pytest

from leaderboard.judges import (
    HUMANS,
    ChosenBy,
    JudgeChoice,
    JudgeSummary,
    UnknownJudge,
    choose_judge,
    is_human,
    merge,
    second_judges,
    with_humans_pooled,
)

CLAUDE = JudgeSummary("anthropic/claude", 40, latest_tournament=3)
LLAMA = JudgeSummary("openai/llama", 90, latest_tournament=7)
ALICE = JudgeSummary("human/alice", 5, latest_tournament=9)
BOB = JudgeSummary("human/bob", 2, latest_tournament=8)


def test_no_judge_named_takes_the_latest_tournaments_never_a_human() -> None:
    choice = choose_judge([CLAUDE, LLAMA, ALICE, BOB])
    assert (choice.judge, choice.chosen_by) == ("openai/llama", ChosenBy.LATEST_TOURNAMENT)
    # every judge with verdicts is listed, most verdicts first, the humans pooled among them
    assert [s.judge for s in choice.judges] == ["openai/llama", "anthropic/claude", HUMANS, "human/alice", "human/bob"]
    assert [s.judge for s in choice.others] == ["anthropic/claude", HUMANS, "human/alice", "human/bob"]
    assert JudgeSummary(HUMANS, 7, 9) in choice.judges
    newer = JudgeSummary("anthropic/claude", 40, latest_tournament=8)
    assert choose_judge([newer, LLAMA, ALICE]).judge == "anthropic/claude"


def test_without_a_tournament_the_judge_with_most_verdicts() -> None:
    undated = [JudgeSummary("b/two", 10), JudgeSummary("a/one", 10), JudgeSummary("c/three", 3), ALICE]
    assert choose_judge(undated) == JudgeChoice("a/one", ChosenBy.MOST_VERDICTS, tuple(with_humans_pooled(undated)))


def test_only_humans_pools_every_voter_and_nothing_gives_no_judge() -> None:
    assert (choose_judge([ALICE, BOB]).judge, choose_judge([ALICE, BOB]).chosen_by) == (HUMANS, ChosenBy.HUMANS_ONLY)
    assert choose_judge([]) == JudgeChoice(None, ChosenBy.NO_VERDICTS, ())
    assert choose_judge([JudgeSummary("a/idle", 0, 4)]).judge is None  # no verdicts: not a judge of the board


def test_a_named_judge_needs_verdicts() -> None:
    for name in ("anthropic/claude", "human/bob", HUMANS):
        choice = choose_judge([CLAUDE, LLAMA, ALICE, BOB], name)
        assert (choice.judge, choice.chosen_by) == (name, ChosenBy.NAMED)
    with pytest.raises(UnknownJudge) as caught:
        choose_judge([CLAUDE, LLAMA], "openai/nobody")
    assert caught.value.known == ["openai/llama", "anthropic/claude"]
    assert str(caught.value) == ("no verdicts from judge 'openai/nobody' here; judges with verdicts: "
                                 "openai/llama, anthropic/claude")
    with pytest.raises(UnknownJudge, match="judges with verdicts: anthropic/claude$"):
        choose_judge([CLAUDE], HUMANS)  # no human voted: no human board
    with pytest.raises(UnknownJudge, match="judges with verdicts: none$"):
        choose_judge([], "anthropic/claude")


def test_merge_adds_verdicts_and_keeps_the_newest_tournament() -> None:
    merged = merge({"anthropic/claude": CLAUDE}, [JudgeSummary("anthropic/claude", 2, 1), ALICE,
                                                  JudgeSummary("anthropic/claude", 1, None)])
    assert merged == {"anthropic/claude": JudgeSummary("anthropic/claude", 43, 3), "human/alice": ALICE}


def test_who_is_human() -> None:
    assert is_human("human/alice") and is_human(HUMANS)
    assert not is_human("humane/judge") and not is_human("anthropic/human")


def test_second_judges_count_human_votes_once_and_never_on_a_humans_board() -> None:
    judges = [CLAUDE, LLAMA, ALICE, BOB, JudgeSummary("openai/qwen", 3)]
    assert second_judges(choose_judge(judges), 5) == ["anthropic/claude", HUMANS, "openai/qwen"]
    assert second_judges(choose_judge(judges), 2) == ["anthropic/claude", HUMANS]  # most verdicts first
    assert second_judges(choose_judge(judges, "human/alice"), 5) == ["openai/llama", "anthropic/claude", "openai/qwen"]
    assert second_judges(choose_judge(judges, HUMANS), 5) == ["openai/llama", "anthropic/claude", "openai/qwen"]
    assert second_judges(choose_judge([CLAUDE]), 5) == [] and second_judges(choose_judge([]), 5) == []
