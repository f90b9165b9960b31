"""Players: grouping sides into models, scenarios or systems."""
from __future__ import annotations

import pytest

from leaderboard.players import PlayerKey, SideRow, battles_at_level, keys_of, player_of
from leaderboard.types import Battle, Level, Winner


def test_player_of_each_level() -> None:
    assert player_of("claude", "concise", Level.MODEL) == "claude"
    assert player_of("claude", "concise", Level.SCENARIO) == "concise"
    assert player_of("claude", "concise", Level.SYSTEM) == "claude + concise"
    assert player_of("claude", "concise", "model+scenario") == "claude + concise"


def test_player_of_rejects_unknown_level() -> None:
    with pytest.raises(ValueError):
        player_of("claude", "concise", "judge")  # type: ignore[arg-type]


def test_keys_of_a_player_name_it_back() -> None:
    assert keys_of("claude", Level.MODEL) == [PlayerKey("claude", None)]
    assert keys_of("concise", "scenario") == [PlayerKey(None, "concise")]
    assert keys_of("claude + concise", Level.SYSTEM) == [PlayerKey("claude", "concise")]
    # a separator inside a name: every split that player_of names back, overlapping ones too
    assert keys_of("a + b + c", Level.SYSTEM) == [PlayerKey("a", "b + c"), PlayerKey("a + b", "c")]
    assert keys_of("a + + b", Level.SYSTEM) == [PlayerKey("a", "+ b"), PlayerKey("a +", "b")]
    for name in ("a + b + c", "a + + b", "x + y"):
        assert {player_of(k.model, k.scenario, Level.SYSTEM) for k in keys_of(name, Level.SYSTEM)} == {name}
    assert keys_of("claude", Level.SYSTEM) == []  # no separator: no system has that name


ROWS = [
    SideRow("m1", "s1", "m2", "s1", Winner.A, "q1"),  # models differ, scenarios equal
    SideRow("m1", "s1", "m1", "s2", Winner.B, "q2"),  # scenarios differ, models equal
    SideRow("m1", "s1", "m2", "s2", Winner.TIE, "q3"),  # both differ
]


def test_battles_at_model_level_skip_same_model() -> None:
    assert battles_at_level(ROWS, Level.MODEL) == [
        Battle("m1", "m2", Winner.A, "q1"),
        Battle("m1", "m2", Winner.TIE, "q3"),
    ]


def test_battles_at_scenario_level_skip_same_scenario() -> None:
    assert battles_at_level(ROWS, Level.SCENARIO) == [
        Battle("s1", "s2", Winner.B, "q2"),
        Battle("s1", "s2", Winner.TIE, "q3"),
    ]


def test_battles_at_system_level_keep_every_distinct_system() -> None:
    assert battles_at_level(ROWS, "model+scenario") == [
        Battle("m1 + s1", "m2 + s1", Winner.A, "q1"),
        Battle("m1 + s1", "m1 + s2", Winner.B, "q2"),
        Battle("m1 + s1", "m2 + s2", Winner.TIE, "q3"),
    ]


def test_battles_at_level_skips_identical_sides_everywhere() -> None:
    same = [SideRow("m", "s", "m", "s", Winner.A, "q")]
    assert all(battles_at_level(same, level) == [] for level in Level)


def test_battles_at_level_coerces_string_winners() -> None:
    rows = [SideRow("m1", "s", "m2", "s", "B", "q")]  # type: ignore[arg-type]
    (battle,) = battles_at_level(rows, Level.MODEL)
    assert battle.winner is Winner.B
