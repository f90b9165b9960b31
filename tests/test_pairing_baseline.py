"""Baseline mode's plan: every other player against one baseline, question by question."""
from __future__ import annotations

import random

from leaderboard.pairing import against_baseline, round_robin
from leaderboard.spec import RunSpec
from leaderboard.types import Level, Mode, Pair, Submission


def sub(id_: int, question: str, model: str, scenario: str = "default") -> Submission:
    return Submission(id=id_, question_id=question, question=f"text of {question}", model=model, scenario=scenario,
                      output=f"out {id_}")


# q1: base, a, b, c; q2: a, base, b; q3: a, b (no baseline); q4: base alone. Ids interleaved.
SUBS = [sub(1, "q1", "a"), sub(2, "q2", "base"), sub(3, "q1", "base"), sub(4, "q2", "a"), sub(5, "q1", "b"),
        sub(6, "q3", "a"), sub(7, "q1", "c"), sub(8, "q3", "b"), sub(9, "q2", "b"), sub(10, "q4", "base")]


def test_every_other_player_meets_the_baseline_once_per_question() -> None:
    assert against_baseline(SUBS, "base", Level.MODEL) == [
        Pair(1, 3), Pair(3, 5), Pair(3, 7),  # q1: 4 players, 3 pairs (round robin: 6)
        Pair(2, 4), Pair(2, 9),  # q2: 3 players, 2 pairs
    ]  # q3 has no baseline, q4 no other player


def test_it_is_n_minus_1_per_question_where_round_robin_is_n_choose_2() -> None:
    models = [f"m{i}" for i in range(8)]
    subs = [sub(q * 10 + i, f"q{q}", m) for q in range(5) for i, m in enumerate(models)]
    assert len(against_baseline(subs, "m3", "model")) == 5 * 7
    assert len(round_robin(subs)) == 5 * 28


def test_the_plan_does_not_depend_on_input_order() -> None:
    shuffled = SUBS[:]
    random.Random(7).shuffle(shuffled)
    assert against_baseline(shuffled, "base", Level.MODEL) == against_baseline(SUBS, "base", Level.MODEL)


def test_the_baseline_is_a_player_at_the_level() -> None:
    subs = [sub(1, "q", "x", "terse"), sub(2, "q", "x", "chatty"), sub(3, "q", "y", "terse"),
            sub(4, "q", "y", "chatty")]
    # model level: both of x's answers are the baseline's, y's two meet each of them; x never meets x
    assert against_baseline(subs, "x", Level.MODEL) == [Pair(1, 3), Pair(1, 4), Pair(2, 3), Pair(2, 4)]
    # scenario level: the terse answers are the baseline's
    assert against_baseline(subs, "terse", Level.SCENARIO) == [Pair(1, 2), Pair(1, 4), Pair(2, 3), Pair(3, 4)]
    # a system: one submission
    assert against_baseline(subs, "x + terse", Level.SYSTEM) == [Pair(1, 2), Pair(1, 3), Pair(1, 4)]
    assert against_baseline(subs, "nobody", Level.MODEL) == []


def test_the_spec_keeps_mode_level_and_baseline() -> None:
    spec = RunSpec(judge="offline/rubric", mode=Mode.BASELINE, baseline="base", level=Level.SCENARIO)
    stored = spec.as_dict()
    assert (stored["mode"], stored["baseline"], stored["level"]) == ("baseline", "base", "scenario")
    assert "anchors" not in stored and "round_size" not in stored
    assert RunSpec.from_json(spec.to_json()) == spec and spec.against_baseline
    assert "baseline" not in RunSpec(judge="offline/rubric").as_dict()  # other modes' specs read as before
