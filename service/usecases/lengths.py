"""Each player's mean output length, which the board shows and its gaming flags read: one
computation for the page (`service.web.pages.prepared`) and the flags' cache
(`service.usecases.flag_cache`)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from leaderboard.players import player_of
from leaderboard.types import Level
from service.store import OutputLength


def mean_lengths(lengths: Iterable[OutputLength], level: Level) -> dict[str, float]:
    """Each player's mean output length in characters at `level`, weighted by outputs."""
    chars: dict[str, float] = defaultdict(float)
    outputs: dict[str, int] = defaultdict(int)
    for length in lengths:
        player = player_of(length.model, length.scenario, level)
        chars[player] += length.mean_chars * length.outputs
        outputs[player] += length.outputs
    return {player: chars[player] / outputs[player] for player in chars if outputs[player]}
