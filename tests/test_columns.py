"""Battles as columns (leaderboard.columns): arrays, an Arena DataFrame, and the bulk object path
give the same table as battle-by-battle `unpack`, with the same errors."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from leaderboard.battles import BattleTable, battle_table, unpack
from leaderboard.columns import factorize, from_columns, groups_of
from leaderboard.ratings import bootstrap_intervals, bradley_terry, online_elo
from leaderboard.types import Battle, Winner

BATTLES = [
    Battle("b", "a", Winner.A, "q1"),
    Battle("a", "c", Winner.TIE, None, 2.0),
    Battle("c", "b", Winner.B, "q2"),
    Battle("a", "b", Winner.B, "q1"),
    Battle("c", "a", Winner.A),
]


def reference_table(battles: list[Battle]) -> BattleTable:
    """The table built the old way, battle by battle, as the golden figure."""
    rows = [unpack(x) for x in battles]
    players = sorted({r[0] for r in rows} | {r[1] for r in rows})
    index = {p: i for i, p in enumerate(players)}
    # group numbering: a question's first appearance, or the battle itself, in battle order
    groups, numbers = [], {}
    for k, r in enumerate(rows):
        key = ("q", r[4]) if r[4] is not None else ("alone", k)
        groups.append(numbers.setdefault(key, len(numbers)))
    return BattleTable(players, np.array([index[r[0]] for r in rows]), np.array([index[r[1]] for r in rows]),
                       np.array([r[2] for r in rows]), np.array([r[3] for r in rows]), np.array(groups))


def same(x: BattleTable, y: BattleTable) -> None:
    assert x.players == y.players
    for field in ("a", "b", "score", "weight", "group"):
        assert getattr(x, field).tolist() == getattr(y, field).tolist(), field


def test_objects_tuples_frames_and_arrays_give_the_same_table() -> None:
    golden = reference_table(BATTLES)
    assert golden.group.tolist() == [0, 1, 2, 0, 3]
    assert golden.score.tolist() == [1.0, 0.5, 0.0, 0.0, 1.0]
    same(battle_table(BATTLES), golden)
    same(battle_table([(x.a, x.b, x.winner.value, x.question_id, x.weight) for x in BATTLES]), golden)
    frame = pd.DataFrame({
        "model_a": [x.a for x in BATTLES], "model_b": [x.b for x in BATTLES],
        "winner": ["model_a", "tie", "model_b", "model_b", "model_a"],
        "question_id": ["q1", np.nan, "q2", "q1", None], "weight": [1, 2, 1, 1, 1],
    })
    same(battle_table(frame), golden)
    arrays = {"model_a": np.array([x.a for x in BATTLES]), "model_b": np.array([x.b for x in BATTLES]),
              "winner": np.array([1.0, 0.5, 0.0, 0.0, 1.0]), "question_id": np.array(["q1", None, "q2", "q1", None], dtype=object),
              "weight": np.array([1.0, 2.0, 1.0, 1.0, 1.0])}
    same(battle_table(arrays), golden)


def test_equal_names_in_different_string_objects_are_one_player() -> None:
    a = ["".join(["mod", "el"]) for _ in range(3)]
    assert len({id(x) for x in a}) == 3
    codes, uniques = factorize(a + ["other", None])
    assert codes.tolist() == [0, 0, 0, 1, -1] and uniques == ["model", "other"]


def test_integer_player_codes_are_named_by_their_strings() -> None:
    table = from_columns(np.array([2, 10, 2]), np.array([10, 3, 3]), np.array(["A", "B", "TIE"]))
    assert table.players == ["10", "2", "3"]  # name order, as for any other names
    assert table.a.tolist() == [1, 0, 1] and table.b.tolist() == [0, 2, 2]


def test_groups_number_questions_and_lone_battles_by_first_appearance() -> None:
    assert groups_of(["x", None, "y", "x", None, "y"], 6).tolist() == [0, 1, 2, 0, 3, 2]
    assert groups_of([None, None], 2).tolist() == [0, 1]
    assert groups_of(None, 3).tolist() == [0, 1, 2]


@pytest.mark.parametrize("bad, message", [
    ([Battle("a", "a", Winner.A)], "two different players"),
    ([("a", "b", "X")], "unknown winner 'X'"),
    ([Battle("a", "b", Winner.A, weight=-1.0)], "weights must be >= 0"),
])
def test_malformed_battles_raise_as_unpack_does(bad, message) -> None:
    with pytest.raises(ValueError, match=message):
        battle_table(bad)


def test_column_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="missing winner"):
        battle_table(pd.DataFrame({"model_a": ["a"], "model_b": ["b"]}))
    with pytest.raises(ValueError, match="unknown winner 0.3"):
        from_columns(np.array([0]), np.array([1]), np.array([0.3]))
    with pytest.raises(ValueError, match="differ in length"):
        from_columns(["a", "b"], ["b"], ["A", "A"])
    with pytest.raises(ValueError, match="two different players, got 'a' twice"):
        battle_table({"model_a": np.array(["a"]), "model_b": np.array(["a"]), "winner": np.array(["tie"])})


def test_rating_functions_take_columns() -> None:
    frame = pd.DataFrame({"model_a": ["x", "y", "x", "z"], "model_b": ["y", "z", "z", "y"],
                          "winner": ["model_a", "tie (bothbad)", "model_b", "model_a"]})
    as_battles = [("x", "y", "A"), ("y", "z", "TIE"), ("x", "z", "B"), ("z", "y", "A")]
    assert bradley_terry(frame) == bradley_terry(as_battles)
    assert online_elo(frame, k=16) == online_elo(as_battles, k=16)
    assert online_elo(frame, k=16) == pytest.approx({"x": 999.81159, "y": 984.54819, "z": 1015.64022}, abs=1e-4)  # by hand
    rng = np.random.default_rng(0)
    assert bootstrap_intervals(frame, rng, rounds=5) == bootstrap_intervals(as_battles, np.random.default_rng(0), rounds=5)
