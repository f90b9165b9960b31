"""Every player's win rate against one named baseline, plain and length-controlled (AlpacaEval's
columns): the board a reader wants when the question is "how often does it beat the reference?".

A judgement counts here when one side is the baseline and the other another player at the level.
Its verdict becomes the player's share (1 won, ½ tie, 0 lost) and, when both outputs are known,
the two lengths. The plain figures are `leaderboard.winrate.alpaca_metrics`; the LC win rate is
`leaderboard.length_control`: question difficulties fitted jointly over every player's verdicts
against the baseline, then one GLM per player. A player with any verdict whose outputs are
unknown (imported battles carry only who won) gets no LC win rate, and the reason why.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .length_control import LengthControlled, Run, fit_instruction_difficulty, fit_length_controlled
from .players import StyledRow, player_of
from .types import PLACEHOLDER_OUTPUT, Level, Winner
from .winrate import WinRate, alpaca_metrics


@dataclass(frozen=True)
class Verdict:
    """One judged question between a player and the baseline; lengths None when an output is unknown."""

    player: str
    question_id: str
    share: float
    player_length: int | None
    baseline_length: int | None


@dataclass(frozen=True)
class BaselineRow:
    """A player's figures against the baseline. lc_win_rate is None with `lc_unavailable` saying why."""

    player: str
    plain: WinRate
    lc: LengthControlled | None
    lc_unavailable: str | None
    avg_length: float | None


_SHARE = {Winner.A: 1.0, Winner.TIE: 0.5, Winner.B: 0.0}


def _length(output: str) -> int | None:
    return None if output == PLACEHOLDER_OUTPUT else len(output)


def players_at(rows: Iterable[StyledRow], level: Level | str) -> set[str]:
    """Every player the rows name at `level`."""
    found: set[str] = set()
    for styled in rows:
        r = styled.row
        found.update((player_of(r.a_model, r.a_scenario, level), player_of(r.b_model, r.b_scenario, level)))
    return found


def verdicts_against(rows: Iterable[StyledRow], baseline: str, level: Level | str) -> list[Verdict]:
    """The rows with the baseline on one side and another player on the other, seen from that player."""
    verdicts = []
    for styled in rows:
        r = styled.row
        a, b = player_of(r.a_model, r.a_scenario, level), player_of(r.b_model, r.b_scenario, level)
        if a == b or baseline not in (a, b):
            continue
        if b == baseline:
            verdicts.append(Verdict(a, r.question_id, _SHARE[r.winner], _length(styled.a_output),
                                    _length(styled.b_output)))
        else:
            verdicts.append(Verdict(b, r.question_id, 1.0 - _SHARE[r.winner], _length(styled.b_output),
                                    _length(styled.a_output)))
    return verdicts


def baseline_board(verdicts: Sequence[Verdict]) -> list[BaselineRow]:
    """One row per player against the baseline, best plain win rate first (then by name)."""
    by_player: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_player[v.player].append(v)
    questions = {q: i for i, q in enumerate(sorted({v.question_id for v in verdicts}))}
    measured = {p: vs for p, vs in by_player.items()
                if all(v.player_length is not None and v.baseline_length is not None for v in vs)}
    runs = {p: Run(tuple(v.share for v in vs), tuple(questions[v.question_id] for v in vs),
                   tuple(float(v.player_length) for v in vs),  # type: ignore[arg-type]
                   tuple(float(v.baseline_length) for v in vs))  # type: ignore[arg-type]
            for p, vs in measured.items()}
    difficulty = fit_instruction_difficulty(list(runs.values()), len(questions)) if runs else np.zeros(0)
    rows = []
    for player, vs in by_player.items():
        plain = alpaca_metrics([1.0 + v.share for v in vs])
        lengths = [v.player_length for v in vs if v.player_length is not None]
        avg = float(np.mean(lengths)) if lengths else None
        if player in runs:
            lc, why = fit_length_controlled(runs[player], difficulty), None
        else:
            missing = sum(v.player_length is None or v.baseline_length is None for v in vs)
            lc, why = None, (f"{missing} of {len(vs)} verdicts against the baseline lack an output "
                             "(imported battles carry only who won), so lengths cannot be controlled for")
        rows.append(BaselineRow(player, plain, lc, why, avg))
    rows.sort(key=lambda r: (-r.plain.win_rate if math.isfinite(r.plain.win_rate) else math.inf, r.player))
    return rows


def against_baseline(rows: Iterable[StyledRow], baseline: str, level: Level | str) -> list[BaselineRow]:
    """The board against `baseline` at `level` from judgements with their outputs."""
    return baseline_board(verdicts_against(rows, baseline, level))
