"""Battles as columns (leaderboard.columns): arrays, an Arena DataFrame, and the bulk object path
give the same table as battle-by-battle `unpack`, with the same errors."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from leaderboard.battles import BattleTable, battle_table, points_matrix, unpack
from leaderboard.columns import (
    coded_points,
    factorize,
    from_columns,
    groups_of,
    scores_of,
)
from leaderboard.ratings import (
    bootstrap_intervals,
    bradley_terry,
    bradley_terry_intervals,
    online_elo,
)
from leaderboard.types import Battle, Winner
from tests.flat import flat

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


def test_integer_codes_are_counted_straight_to_the_same_fit() -> None:
    """`coded_points` (no table) gives the table's players and points: codes that never play
    dropped, name order ("10" before "2"), numeric winners, any integer dtype."""
    rng = np.random.default_rng(7)
    a = rng.choice([0, 2, 3, 10, 11, 25], 3000)
    b = np.where(a == 25, 2, 25)
    b[::3] = (a[::3] + 1) % 26  # also 1, 4, 11, 12, 26 % 26 = 0 ...
    b = np.where(b == a, (b + 5) % 26, b)
    winner = rng.choice([0.0, 0.5, 1.0], 3000)
    for cast in (np.int64, np.int32, np.uint16):
        columns = {"model_a": a.astype(cast), "model_b": b.astype(cast), "winner": winner}
        players, points = coded_points(columns)
        table = from_columns([str(x) for x in a.tolist()], [str(x) for x in b.tolist()], winner)
        assert players == table.players
        np.testing.assert_array_equal(points, points_matrix(table))
        assert bradley_terry(columns) == pytest.approx(bradley_terry(table), abs=1e-9)
        assert flat(bradley_terry_intervals(pd.DataFrame(columns))) == pytest.approx(flat(bradley_terry_intervals(table)), abs=1e-9)


@pytest.mark.parametrize("columns", [
    {"model_a": np.array([0, 1]), "model_b": np.array([1, 1]), "winner": np.array([1.0, 0.0])},  # 1 against itself
    {"model_a": np.array([0, 1]), "model_b": np.array([1, 0]), "winner": np.array([1.0, 0.3])},  # a bad score
    {"model_a": np.array([0, -1]), "model_b": np.array([1, 0]), "winner": np.array([1.0, 0.0])},  # a negative code
    {"model_a": np.array([0, 5000]), "model_b": np.array([1, 0]), "winner": np.array([1.0, 0.0])},  # a large code
    {"model_a": np.array([0, 1]), "model_b": np.array([1, 0]), "winner": np.array([1.0, 0.0]), "weight": np.ones(2)},
    {"model_a": np.array(["0", "1"]), "model_b": np.array(["1", "0"]), "winner": np.array([1.0, 0.0])},
    {"model_a": [0, 1], "model_b": [1, 0], "winner": [1.0, 0.0]},  # lists: never converted to find out
])
def test_other_or_malformed_columns_go_the_tables_way(columns) -> None:
    assert coded_points(columns) is None  # the table path says what is wrong, or handles it
    try:
        want = bradley_terry(battle_table(columns))
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)[:20]):
            bradley_terry(columns)
    else:
        assert bradley_terry(columns) == want


def test_list_identities_match_id_and_winners_and_weights_take_the_fast_paths() -> None:
    from leaderboard.columns import _weights_of, _winner_scores
    from leaderboard.object_ids import LIST_LAYOUT, identities
    items = [object(), "x", 3, None, Winner.A] * 3
    assert identities(items).tolist() == [id(x) for x in items]
    assert LIST_LAYOUT  # CPython 3.11 on 64-bit: the list is read directly (else only slower)
    winners = [Winner.A, Winner.TIE, Winner.B, Winner.A]
    assert _winner_scores(identities(winners)).tolist() == [1.0, 0.5, 0.0, 1.0]
    assert _winner_scores(identities([Winner.A, "A"])) is None  # a string: hashed by value instead
    assert scores_of([Winner.A, "A", "tie"]).tolist() == [1.0, 1.0, 0.5]
    assert _weights_of([1.0] * 4, 4).tolist() == [1.0] * 4
    assert _weights_of([1.0, 2.0, 1.0], 3).tolist() == [1.0, 2.0, 1.0]
    nan = float("nan")
    with pytest.raises(ValueError, match="weights must be >= 0"):
        from_columns(["a"] * 2, ["b"] * 2, ["A"] * 2, None, [nan, nan])


@pytest.mark.parametrize("portable", [False, True])
def test_both_paths_to_the_identities_give_id_of_every_item(portable: bool) -> None:
    """The ctypes fast path (a list's item array, an object array's buffer) and the portable
    one (`id` per item) agree on lists, object arrays, a DataFrame's column, tuples and empties."""
    import numpy as np
    import pandas as pd

    from leaderboard.object_ids import identities
    items = [object(), "x", 3, None, Winner.A, 2.5] * 50
    column = pd.DataFrame({"w": items})["w"].to_numpy()
    for values in (items, np.array(items, dtype=object), column, tuple(items), [], np.array([], dtype=object)):
        found = identities(values, portable=portable)
        assert found.dtype == np.intp
        assert found.tolist() == [id(x) for x in values]
