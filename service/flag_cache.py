"""Gaming flags (`leaderboard.flags`) for the boards, computed once and kept.

Why two parts: the text flags (near-constant outputs, addressing the judge, copying the
question) depend only on the submissions, so they are computed per level once per submission
mark (`Store.submission_mark`: the newest submission's id), reading a seeded sample of at most
`leaderboard.flags.SAMPLE` outputs per player. The length flag depends on the board's verdicts:
it is computed from the board's pair counts and the players' mean output lengths, once per board
revision, in milliseconds. A player with only an import's placeholders (battles without outputs)
has no text and no length: it is never flagged.

The text pass costs about a second per level at 100 players x 500 questions (`bench/flags.py`).
The page (`soon=True`) serves the last pass at once while the new one runs in the background
(`service.refreshes`), and says so by `BoardFlags.current` (the page is then rendered pending, so
the live script fetches it again); `GET /api/leaderboard` waits up to `API_WAIT_S` for it, then
answers with the last pass and `flags_current: false`: a board is never held seconds behind a
text pass that only annotates it.
"""
from __future__ import annotations

import dataclasses
import threading
import zlib
from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from leaderboard.flags import Flag, length_flags, sample, text_flags
from leaderboard.players import player_of
from leaderboard.types import Level
from service.boards import Board
from service.pages.board_view import mean_lengths
from service.refreshes import Refreshes
from service.revisioned import Lru
from service.store import OutputLength, Store

FLAG_SEED = 0  # the same submissions always give the same sample, so the same flags
KEPT = 32  # boards' flags kept (by level, judge, tournament, dimension)
WAIT_S = 1.0  # how long a page waits for the first text pass before showing the board without it
API_WAIT_S = 2.0  # how long GET /api/leaderboard waits for a new text pass before answering with the last


@dataclass(frozen=True)
class BoardFlags:
    """Each flagged player's flags on one board, up to `revision`."""

    revision: int
    flags: dict[str, tuple[Flag, ...]] = field(default_factory=dict)
    current: bool = True  # False: text flags from before the newest submissions (a page's, being refreshed)

    def of(self, player: str) -> tuple[Flag, ...]:
        """The player's flags, empty for an honest one."""
        return self.flags.get(player, ())


@dataclass(frozen=True)
class _Texts:
    mark: int
    flags: dict[str, list[Flag]]
    lengths: dict[str, float]


@dataclass(frozen=True)
class _Submissions:
    """What every level reads once per submission mark: (id, model, scenario) of every
    submission with an output, and each (model, scenario)'s output lengths."""

    mark: int
    keys: list[tuple[int, str, str]]
    lengths: list[OutputLength]


class FlagCache:
    """Flags per board, thread-safe (the API's routes run in a thread pool)."""

    def __init__(self, store: Store, seed: int = FLAG_SEED) -> None:
        self.store = store
        self.seed = seed
        self._texts: dict[Level, _Texts] = {}
        self._submissions: _Submissions | None = None
        self._lock = threading.Lock()  # one text pass at a time: it reads outputs
        self._boards: Lru[BoardFlags] = Lru(KEPT)
        self._refreshes = Refreshes("flags")

    def of(self, board: Board, key: Hashable, *, soon: bool = False, wait_s: float = WAIT_S,
           stale_ok: bool = True) -> BoardFlags:
        """The flags of `board`'s players (`key`: what else names the board, such as its judge and
        tournament), computed once per board revision and submission mark. `soon` (the pages):
        the text flags of the last pass at once while a newer one runs in the background (none
        while the first pass takes over `WAIT_S`)."""
        if soon:
            mark = self.store.submission_mark()
            kept = self._refreshes.soon(board.level, lambda: self._kept(board.level),
                                        lambda texts: texts.mark >= mark,
                                        lambda: self._text_flags(board.level), wait_s, stale_ok=stale_ok)
            texts = kept if kept is not None else _Texts(-1, {}, {})
            current = texts.mark >= mark
        else:
            texts, current = self._text_flags(board.level), True
        full = (board.level, key, texts.mark)
        cached = self._boards.get(full, board.revision)
        if cached is not None:
            return cached if current else dataclasses.replace(cached, current=False)
        by_length = {} if board.counts is None else length_flags(board.counts, texts.lengths)
        flags: dict[str, tuple[Flag, ...]] = {}
        for row in board.rows:
            found = [*texts.flags.get(row.player, ()), *([by_length[row.player]] if row.player in by_length else [])]
            if found:
                flags[row.player] = tuple(found)
        made = BoardFlags(board.revision, flags)
        self._boards.put(full, made)
        return made if current else dataclasses.replace(made, current=False)

    def _kept(self, level: Level) -> _Texts | None:
        """The last text pass at `level`, without waiting for one running (one dict read)."""
        return self._texts.get(level)

    def _text_flags(self, level: Level) -> _Texts:
        with self._lock:
            mark = self.store.submission_mark()
            kept = self._texts.get(level)
            if kept is not None and kept.mark == mark:
                return kept
            if self._submissions is None or self._submissions.mark != mark:
                self._submissions = _Submissions(mark, self.store.submission_keys(), self.store.output_lengths()[0])
            ids: dict[str, list[int]] = defaultdict(list)
            for sid, model, scenario in self._submissions.keys:
                ids[player_of(model, scenario, level)].append(sid)
            rngs = {player: np.random.default_rng([self.seed, zlib.crc32(player.encode())]) for player in ids}
            chosen = {player: sample(found, rngs[player]) for player, found in ids.items()}
            answers = self.store.answers([i for picked in chosen.values() for i in picked])
            flags = {player: text_flags([answers[i] for i in picked if i in answers], rngs[player],
                                        total=len(ids[player]))
                     for player, picked in chosen.items()}
            made = _Texts(mark, {p: f for p, f in flags.items() if f},
                          mean_lengths(self._submissions.lengths, level))
            self._texts[level] = made
            return made
