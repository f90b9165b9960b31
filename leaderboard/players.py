"""Players: how the two sides of a judgement are grouped into leaderboard entries.

One judgement compares two submissions, each a (model, scenario). The same judgement can rank
models, prompt scenarios or whole systems (model + scenario); at each level it counts only when
the two sides are different players there, so a judgement between two scenarios of one model
says nothing about that model.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .types import Battle, Level, Winner

SYSTEM_SEPARATOR = " + "


def player_of(model: str, scenario: str, level: Level | str) -> str:
    """The player a submission belongs to at `level`.

    `model` → the model name; `scenario` → the scenario name; `model+scenario` (a system) →
    f"{model} + {scenario}", e.g. "claude-3 + concise". The system key is meant for display
    and grouping, not for parsing back: a model name may itself contain " + ".
    """
    level = Level(level)
    if level is Level.MODEL:
        return model
    if level is Level.SCENARIO:
        return scenario
    return f"{model}{SYSTEM_SEPARATOR}{scenario}"


@dataclass(frozen=True)
class PlayerKey:
    """The submissions of one player at one level: those with this model and this scenario,
    None standing for any."""

    model: str | None
    scenario: str | None


def keys_of(player: str, level: Level | str) -> list[PlayerKey]:
    """Every (model, scenario) whose submissions are `player` at `level`, so a store can find
    them by its columns without parsing a name back.

    A model or a scenario is its own name. A system's name is split at each separator, and a
    split is kept when `player_of` gives the name back: "a + b + c" is both ("a", "b + c") and
    ("a + b", "c"), which the boards count as one player too.
    """
    level = Level(level)
    if level is Level.MODEL:
        return [PlayerKey(player, None)]
    if level is Level.SCENARIO:
        return [PlayerKey(None, player)]
    keys = []
    start = player.find(SYSTEM_SEPARATOR)
    while start >= 0:
        model, scenario = player[:start], player[start + len(SYSTEM_SEPARATOR):]
        if player_of(model, scenario, level) == player:
            keys.append(PlayerKey(model, scenario))
        start = player.find(SYSTEM_SEPARATOR, start + 1)
    return keys


@dataclass(frozen=True)
class SideRow:
    """One judgement seen as its two sides: winner "A" means side a won."""

    a_model: str
    a_scenario: str
    b_model: str
    b_scenario: str
    winner: Winner
    question_id: str


@dataclass(frozen=True)
class StyledRow:
    """A judgement's sides with both outputs, which style control measures."""

    row: SideRow
    a_output: str
    b_output: str


def battles_at_level(rows: Iterable[SideRow], level: Level | str) -> list[Battle]:
    """The battles a set of judgements yields at `level`, in the rows' order.

    Rows whose two sides are the same player at this level are skipped: they carry no
    information about that player against another.
    """
    level = Level(level)
    battles: list[Battle] = []
    for row in rows:
        a = player_of(row.a_model, row.a_scenario, level)
        b = player_of(row.b_model, row.b_scenario, level)
        if a != b:
            battles.append(Battle(a=a, b=b, winner=Winner(row.winner), question_id=row.question_id))
    return battles
