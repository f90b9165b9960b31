"""The values a board cache serves, and the stream that keeps one judge's boards current: the
judge's rows added one resolve at a time to a `Tally` per level (`Stream`), and the boards,
styled, tied, bootstrapped and effects fits made from them; and how a result made from scratch
is kept and known current (`filter_key`, `fresh`, `scoped`). `service.usecases.boards` holds the
cache that serves them (its docstring says how they stay current)."""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from leaderboard.battles import BattleLike, PairCounts
from leaderboard.board import with_intervals
from leaderboard.board_slice import WHOLE, BoardSlice
from leaderboard.effects import Effects
from leaderboard.flags import SecondOpinion
from leaderboard.players import SideRow, player_of
from leaderboard.resampled import board_bootstrap
from leaderboard.style_board import ComponentCoefficient
from leaderboard.tally import Tally
from leaderboard.tie_board import TieParameter
from leaderboard.types import Level, Rating
from service.store import Store
from service.usecases.judge_roster import Roster
from service.usecases.revisioned import Lru

log = logging.getLogger(__name__)

LEVELS = (Level.MODEL, Level.SCENARIO, Level.SYSTEM)
CHUNK = 100_000  # rows read per query while catching up, to bound memory on a cold start
BOOTSTRAP_ROUNDS = 200  # resamples of the questions behind a board's bootstrap intervals
BOOTSTRAP_SEED = 0  # the same judgements always give the same bootstrap intervals


@dataclass(frozen=True)
class Board:
    """A leaderboard, how many judgements it counts, and the revision it includes everything up to.

    `counts`: the pair counts it was fitted on, players in name order (the win-rate and battle
    matrices), when it was fitted rather than assembled another way (an anchored board). `seq`:
    over a tournament, the newest resolve seq of its matches when its rows were read, so the
    board is known current at a later revision while that seq has not moved."""

    level: Level
    rows: list[Rating]
    judgements: int
    revision: int
    counts: PairCounts | None = field(default=None, compare=False, repr=False)
    seq: int | None = field(default=None, compare=False, repr=False)  # over a tournament: `Store.tournament_seq`


@dataclass(frozen=True)
class Opinions:
    """Other judges' pair counts on a board's scope and level, what its length flag is checked
    against (`leaderboard.length_flag.length_flags`), and the revision each includes everything up to."""

    opinions: tuple[SecondOpinion, ...] = ()
    revisions: tuple[int, ...] = ()

    @property
    def stamp(self) -> tuple[tuple[str, int], ...]:
        """(judge, revision) of each: flags made against the same stamp still hold."""
        return tuple(zip((o.judge for o in self.opinions), self.revisions))


S = TypeVar("S", Board, Roster)  # a result over a tournament, rebuilt from scratch when its matches resolve


def _verdicts(found: Board | Roster) -> int:
    """The verdicts a board or a roster counts: what rebuilding it reads."""
    if isinstance(found, Board):
        return found.judgements
    return sum(judge.verdicts for judge in found.judges)


@dataclass(frozen=True)
class Styled:
    """A board with style control (`leaderboard.style_board`), or why it cannot have it
    (`unavailable`: battles without outputs), at `revision`."""

    board: Board
    coefficients: list[ComponentCoefficient]
    unavailable: str | None

    @property
    def revision(self) -> int:
        return self.board.revision


@dataclass(frozen=True)
class Tied:
    """A board rated by Davidson's tie model (`leaderboard.tie_board`) with each component's
    tie parameter, or why it cannot be (`unavailable`: weighted battles), at `revision`."""

    board: Board
    tie_parameters: list[TieParameter]
    unavailable: str | None

    @property
    def revision(self) -> int:
        return self.board.revision


@dataclass(frozen=True)
class Bootstrapped:
    """A board whose intervals and rank ranges come from resampling questions: `rounds`
    resamples drawn with `seed`, within each component."""

    board: Board
    rounds: int
    seed: int

    @property
    def revision(self) -> int:
        return self.board.revision


@dataclass(frozen=True)
class EffectsAt:
    """Model and scenario effects fitted on the judgements up to `revision`."""

    effects: Effects
    revision: int


class Players:
    """Each submission's player names at every level, made once and shared by every battle."""

    def __init__(self) -> None:
        self._names: dict[tuple[str, str], tuple[str, str, str]] = {}
        self.systems: dict[str, tuple[str, str] | None] = {}  # system player → (model, scenario); None: two share it

    def names(self, model: str, scenario: str) -> tuple[str, str, str]:
        """(model player, scenario player, system player), as `player_of` names them."""
        key = (model, scenario)
        names = self._names.get(key)
        if names is None:
            names = self._names[key] = (
                player_of(model, scenario, Level.MODEL),
                player_of(model, scenario, Level.SCENARIO),
                player_of(model, scenario, Level.SYSTEM),
            )
            self.systems[names[2]] = key if self.systems.get(names[2], key) == key else None
        return names

    def battles(self, rows: Iterable[SideRow]) -> dict[Level, list[BattleLike]]:
        """`leaderboard.players.battles_at_level` for every level in one pass, as plain tuples:
        a cold start turns millions of rows into battles, and a tuple costs a fraction of a `Battle`."""
        found: list[list[BattleLike]] = [[] for _ in LEVELS]
        model, scenario, system = (battles.append for battles in found)
        for row in rows:
            a = self.names(row.a_model, row.a_scenario)
            b = self.names(row.b_model, row.b_scenario)
            winner, question = row.winner, row.question_id
            if a[0] != b[0]:
                model((a[0], b[0], winner, question))
            if a[1] != b[1]:
                scenario((a[1], b[1], winner, question))
            if a[2] != b[2]:
                system((a[2], b[2], winner, question))
        return dict(zip(LEVELS, found))


def board_from_rows(rows: Sequence[SideRow], level: Level, *, k: float, revision: int) -> Board:
    """A board from scratch (for filters that cannot be followed incrementally)."""
    tally = Tally(k=k)
    battles = Players().battles(rows)[level]
    tally.add(battles)
    counts = tally.counts()
    return Board(level=level, rows=tally.board(counts), judgements=len(battles), revision=revision, counts=counts)


def bootstrap_from_rows(rows: Sequence[SideRow], level: Level, *, k: float, revision: int) -> Bootstrapped:
    """A board from scratch with bootstrap intervals (`BOOTSTRAP_ROUNDS` rounds, `BOOTSTRAP_SEED`),
    per connected group, none where the resamples cannot bound a rating or do not vary it
    (`leaderboard.resampled`)."""
    battles = Players().battles(rows)[level]
    tally = Tally(k=k)
    tally.add(battles)
    counts = tally.counts()
    intervals = board_bootstrap(battles, np.random.default_rng(BOOTSTRAP_SEED), rounds=BOOTSTRAP_ROUNDS)
    board = Board(level, with_intervals(tally.board(counts), intervals), len(battles), revision, counts)
    return Bootstrapped(board, BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED)


class Stream:
    """The counted judgements of one judge (or of all), folded into one Tally per level."""

    def __init__(self, store: Store, k: float, judge: str | None = None) -> None:
        self.store = store
        self.k = k
        self.judge = judge
        self.lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self.seq = 0
        self._players = Players()
        self._tallies = {level: Tally(k=self.k) for level in Level}
        self._boards: dict[Level, Board] = {}
        self._counts: dict[Level, PairCounts] = {}  # made without a fit (another board's second opinion)
        self._last: dict[Level, Board] = {}  # the newest board fitted per level, kept across catch-ups
        self._fit_s: dict[Level, float] = {}  # how long the newest fit per level took

    def board(self, level: Level, revision: int) -> Board:
        """The board including every judgement resolved up to `revision` (or later)."""
        with self.lock:
            if revision > self.seq:
                self._catch_up()
            board = self._boards.get(level)
            if board is None:
                began = time.perf_counter()
                tally = self._tallies[level]
                counts = tally.counts()
                board = self._boards[level] = Board(level, tally.board(counts), tally.battles, self.seq, counts)
                self._fit_s[level] = time.perf_counter() - began
                self._last[level] = board
            return board

    def counts(self, level: Level, revision: int) -> tuple[PairCounts, int]:
        """The pair counts at `level` up to `revision` (or later) and the seq they include, without
        fitting a board when none is kept: what another judge's length flag is checked against."""
        with self.lock:
            if revision > self.seq:
                self._catch_up()
            board = self._boards.get(level)
            if board is not None and board.counts is not None:
                return board.counts, self.seq
            counts = self._counts.get(level)
            if counts is None:
                counts = self._counts[level] = self._tallies[level].counts()
            return counts, self.seq

    def system_counts(self, revision: int) -> tuple[list[tuple[str, str]], PairCounts, int] | None:
        """The system level's pair counts up to `revision` (or later), each system as its (model,
        scenario), and the judgements counted: what `fit_effects_counts` needs, without a fit of the
        board. None when two (model, scenario) share one system name (a model named "a + b")."""
        with self.lock:
            if revision > self.seq:
                self._catch_up()
            tally = self._tallies[Level.SYSTEM]
            counts = tally.counts()
            systems = [self._players.systems.get(name) for name in counts.players]
            if any(system is None for system in systems):
                return None
            return systems, counts, tally.battles  # type: ignore[return-value]

    def latest(self, level: Level) -> tuple[Board, float] | None:
        """The newest board fitted at `level`, however old, and how long its fit took."""
        with self.lock:
            board = self._last.get(level)
            return None if board is None else (board, self._fit_s[level])

    def _catch_up(self) -> None:
        """Add the rows resolved since `seq`; on any error start over rather than half-add."""
        try:
            while True:
                rows, seq = self.store.side_rows_since(self.seq, judge=self.judge, limit=CHUNK)
                for level, battles in self._players.battles(rows).items():
                    self._tallies[level].add(battles)
                if seq != self.seq:
                    self.seq = seq
                    self._boards.clear()
                    self._counts.clear()
                if len(rows) < CHUNK:
                    return
        except BaseException:
            self._reset()
            raise


def _board_of(latest: tuple[Board, float] | None) -> Board | None:
    return None if latest is None else latest[0]


def filter_key(level: Level, tournament_id: int | None, judge: str | None, dimension: str | None,
               part: BoardSlice = WHOLE) -> tuple[object, ...]:
    """The key a board made from scratch is kept under: its level, scope, judge and slice."""
    sliced = () if part.whole else (part,)
    if dimension is not None:
        return ("dimension", dimension, level, tournament_id, judge, *sliced)
    return (level, tournament_id, judge, *sliced)


def fresh(store: Store, lru: Lru[S], key: Hashable, tournament_id: int | None, revision: int) -> S | None:
    """The result kept for `key` if it is current at `revision`: made at it or later, or over
    a tournament none of whose matches resolved since it was made (then stamped `revision`:
    other tournaments' judgements move the revision without changing it)."""
    cached = lru.get(key, revision)
    if cached is not None or tournament_id is None:
        return cached
    latest = lru.latest(key)
    if latest is None or latest.seq is None or latest.seq != store.tournament_seq(tournament_id):
        return None
    restamped = dataclasses.replace(latest, revision=revision)
    lru.put(key, restamped)
    return restamped


def scoped(store: Store, lru: Lru[S], key: Hashable, tournament_id: int | None, revision: int,
           read: Callable[[int | None], S]) -> S:
    """The result for `key` current at `revision`: kept, or `read` (given the tournament's seq,
    taken before it reads) and kept."""
    found = fresh(store, lru, key, tournament_id, revision)
    if found is not None:
        return found
    made = read(None if tournament_id is None else store.tournament_seq(tournament_id))
    lru.put(key, made)
    return made
