"""Gaming flags (`leaderboard.flags`) for the boards, computed once and kept.

Why two parts: the text flags (near-constant outputs, addressing the judge, copying the
question) depend only on the submissions, so they are computed per level once per submission
mark (`Store.submission_mark`: the newest submission's id), reading a seeded sample of at most
`leaderboard.flags.SAMPLE` outputs per player. The length flag depends on the board's verdicts
and on a second opinion: it is computed from the board's pair counts, the players' mean output
lengths and the pair counts of the other judges on the same scope and level (`Opinions`, which
the caller gets from `BoardCache.second_opinions`), once per board revision and other judges'
revisions, in milliseconds. Without another judge (or human votes) on the scope, no player
carries it: one judge's verdicts cannot tell a much stronger player from one gaming that judge.
A player with only an import's placeholders (battles without outputs) has no text and no
length: it is never flagged.

The text pass costs about a second per level at 100 players x 500 questions (`bench/flags.py`).
The page (`soon=True`) serves the last pass at once while the new one runs in the background
(`service.usecases.refreshes`), and says so by `BoardFlags.current` (the page is then rendered pending, so
the live script fetches it again); `GET /api/leaderboard` waits up to `API_WAIT_S` for it, then
answers with the last pass and `flags_current: false`: a board is never held seconds behind a
text pass that only annotates it.
"""
from __future__ import annotations

import dataclasses
import threading
import zlib
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from leaderboard.flags import SAMPLE, Flag, bottom_k, text_flags
from leaderboard.length_flag import length_flags
from leaderboard.players import player_of
from leaderboard.types import Level
from service.store import OutputLength, Store
from service.usecases.boards import Board, Opinions
from service.usecases.lengths import mean_lengths
from service.usecases.refreshes import Refreshes
from service.usecases.revisioned import Lru

FLAG_SEED = 0  # the same submissions always give the same sample, so the same flags
KEPT = 32  # boards' flags kept (by level, judge, tournament, dimension)
WAIT_S = 1.0  # how long a page waits for the first text pass before showing the board without it
API_WAIT_S = 2.0  # how long GET /api/leaderboard waits for a new text pass before answering with the last
NO_OPINIONS = Opinions()  # no other judge on the scope: no length flag


@dataclass(frozen=True)
class BoardFlags:
    """Each flagged player's flags on one board, up to `revision`."""

    revision: int
    flags: dict[str, tuple[Flag, ...]] = field(default_factory=dict)
    current: bool = True  # False: text flags from before the newest submissions (a page's, being refreshed)
    opinions: tuple[tuple[str, int], ...] = ()  # the other judges' (judge, revision) the length flag was checked against

    def of(self, player: str) -> tuple[Flag, ...]:
        """The player's flags, empty for an honest one."""
        return self.flags.get(player, ())


@dataclass(frozen=True)
class _Texts:
    mark: int
    flags: dict[str, list[Flag]]
    lengths: dict[str, float]


@dataclass(frozen=True)
class _Lengths:
    """Each (model, scenario)'s output lengths, read once per submission mark for every level."""

    mark: int
    lengths: list[OutputLength]


@dataclass
class _Samples:
    """One level's running state (under `FlagCache._lock`): the submissions read up to `upto`,
    each player's output count, its sample as (rank, id) pairs, and its text flags."""

    upto: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    picked: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    flags: dict[str, list[Flag]] = field(default_factory=dict)


class FlagCache:
    """Flags per board, thread-safe (the API's routes run in a thread pool)."""

    def __init__(self, store: Store, seed: int = FLAG_SEED) -> None:
        self.store = store
        self.seed = seed
        self._texts: dict[Level, _Texts] = {}
        self._levels: dict[Level, _Samples] = {}
        self._lengths: _Lengths | None = None
        self._lock = threading.Lock()  # one text pass at a time: it reads outputs
        self._boards: Lru[BoardFlags] = Lru(KEPT)
        self._refreshes = Refreshes("flags")

    def of(self, board: Board, key: Hashable, *, opinions: Opinions = NO_OPINIONS, soon: bool = False,
           wait_s: float = WAIT_S, stale_ok: bool = True) -> BoardFlags:
        """The flags of `board`'s players (`key`: what else names the board, such as its judge and
        tournament), computed once per board revision, other judges' revisions (`opinions`: what
        the length flag is checked against; none, no length flag) and submission mark. `soon` (the pages):
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
        if cached is not None and cached.opinions == opinions.stamp:
            return cached if current else dataclasses.replace(cached, current=False)
        by_length = {} if board.counts is None else length_flags(board.counts, texts.lengths, opinions.opinions)
        flags: dict[str, tuple[Flag, ...]] = {}
        for row in board.rows:
            found = [*texts.flags.get(row.player, ()), *([by_length[row.player]] if row.player in by_length else [])]
            if found:
                flags[row.player] = tuple(found)
        made = BoardFlags(board.revision, flags, opinions=opinions.stamp)
        self._boards.put(full, made)
        return made if current else dataclasses.replace(made, current=False)

    def _kept(self, level: Level) -> _Texts | None:
        """The last text pass at `level`, without waiting for one running (one dict read)."""
        return self._texts.get(level)

    def _text_flags(self, level: Level) -> _Texts:
        """The text flags at `level` as of the newest submission: only the submissions added
        since the last pass are read, and only the players whose sample they changed are looked
        at again (`leaderboard.flags.bottom_k`), so a pass after a few new outputs costs a few
        players' checks, not every player's."""
        with self._lock:
            mark = self.store.submission_mark()
            kept = self._texts.get(level)
            if kept is not None and kept.mark == mark:
                return kept
            state = self._levels.setdefault(level, _Samples())
            if self._lengths is None or self._lengths.mark != mark:
                self._lengths = _Lengths(mark, self.store.output_lengths()[0])
            dirty: set[str] = set()
            for sid, model, scenario in self.store.submission_keys(after_id=state.upto, upto=mark):
                player = player_of(model, scenario, level)
                state.counts[player] = state.counts.get(player, 0) + 1
                changed = bottom_k(state.picked.setdefault(player, []), sid, self.seed)
                if changed or state.counts[player] <= SAMPLE + 1:  # "of n outputs" until sampled
                    dirty.add(player)
            state.upto = mark
            if dirty:
                answers = self.store.answers([i for p in dirty for _, i in state.picked[p]])
                for player in dirty:
                    rng = np.random.default_rng([self.seed, zlib.crc32(player.encode())])
                    found = text_flags([answers[i] for _, i in state.picked[player] if i in answers], rng,
                                       total=state.counts[player])
                    if found:
                        state.flags[player] = found
                    else:
                        state.flags.pop(player, None)
            made = _Texts(mark, dict(state.flags), mean_lengths(self._lengths.lengths, level))
            self._texts[level] = made
            return made
