"""Boards served from memory and kept current one judgement at a time.

Why: rebuilding a board from a million stored judgements costs seconds, and the page and the API
ask for one on every request. So the overall board lives in a `Tally` per level, and each request
first reads the store's revision (one indexed single-row read, taken at request time): if
judgements were resolved since the cache last looked, only those rows are read and added, under
the cache's lock, before the board is served. A request that arrives after a resolve therefore
always sees it, and a row is never added twice: the store hands out rows by resolve seq together
with the seq it read up to. Boards are memoised per level until the seq moves, so repeated
requests at one revision cost the revision read and nothing else.

Every board served holds one judge's verdicts (`leaderboard.judges`): `judged` chooses the judge
from the roster of judges with verdicts (`service.usecases.judge_roster`, kept current the same way) and
serves that judge's board. A judge is a stream of its own (the same incremental path, a few kept
in an LRU); the stream of all judges at once (`judge=None`) is for callers inside joust only.
A tournament dedupes judgements over its own runs, so its board is rebuilt from scratch when one
of its matches resolves (`Store.tournament_seq`; other tournaments' judgements only re-stamp it)
and a few are kept in an LRU keyed by (level, filters); the pages ask `judged_soon`, which serves
the last such board at once while a newer one is made in the background (`service.usecases.refreshes`). So is a board
by one dimension of the `dimensions` criteria set, whose outcomes are derived from the stored
calls at read time, a board of one turn or of each pair's majority (`leaderboard.board_slice`),
and a board with bootstrap intervals (`bootstrapped`: it resamples the
questions, which the tallies do not keep), computed once per revision with a fixed seed. A
board rated by Davidson's tie model (`tied`) is refitted from the plain board's pair counts,
once per revision. `second_opinions` hands the gaming flags the pair counts of the other judges
on a board's scope (`leaderboard.length_flag.length_flags` needs a second judge), from their streams
without a fit.

Judge health, for the page and GET /api/judges, is cached apart: `service.usecases.judge_health_cache`.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from leaderboard.battles import PairCounts
from leaderboard.board_slice import WHOLE, BoardSlice
from leaderboard.effects import fit_effects, fit_effects_counts
from leaderboard.flags import SecondOpinion
from leaderboard.judges import JudgeChoice, choose_judge, second_judges
from leaderboard.style import StyleUnavailable
from leaderboard.style_board import styled_board
from leaderboard.tie_board import tied_board
from leaderboard.types import Level
from service.store import Store
from service.usecases.board_stream import (
    BOOTSTRAP_ROUNDS,
    BOOTSTRAP_SEED,
    Board,
    Bootstrapped,
    EffectsAt,
    Opinions,
    Players,
    S,
    Stream,
    Styled,
    Tied,
    _board_of,
    _verdicts,
    board_from_rows,
    bootstrap_from_rows,
    filter_key,
    fresh,
    scoped,
)
from service.usecases.judge_roster import OverallRoster, Roster, tournament_roster
from service.usecases.refreshes import GAP_S, Refreshes
from service.usecases.revisioned import Lru

log = logging.getLogger(__name__)

STREAMS = 8  # judge-filtered streams kept
FILTERED = 32  # tournament-filtered boards and effect fits kept
SLOW_FIT_S = 0.02  # an overall board whose fit takes longer is refitted in the background for the pages
STALE_FROM = 5_000  # verdicts from which a page serves a tournament's last board while a newer one is made
SECOND_OPINIONS = 3  # other judges (most verdicts first) a board's length flag is checked against

# The cache is what this module defines; the values it serves come from board_stream and are
# taken from here by the routes and pages as well.
__all__ = ["BOOTSTRAP_ROUNDS", "BOOTSTRAP_SEED", "Board", "BoardCache", "EffectsAt", "Opinions", "Players"]


class BoardCache:
    """Current boards for the API and the page: incremental per judge, cached by revision otherwise.

    Thread-safe: FastAPI runs sync routes in a thread pool, and a background thread may warm it.
    """

    def __init__(self, store: Store, k: float) -> None:
        self.store = store
        self.k = k
        self._streams: OrderedDict[str | None, Stream] = OrderedDict()  # by judge, least recent first
        self._lock = threading.Lock()
        self._roster = OverallRoster(store)
        self._rosters: Lru[Roster] = Lru(FILTERED)  # by tournament
        self._filtered: Lru[Board] = Lru(FILTERED)
        self._bootstraps: Lru[Bootstrapped] = Lru(FILTERED)
        self._bootstrap_lock = threading.Lock()  # one resampling at a time: it takes seconds on big boards
        self._styled: Lru[Styled] = Lru(FILTERED)
        self._tied: Lru[Tied] = Lru(FILTERED)
        self._effects: Lru[EffectsAt] = Lru(FILTERED)
        self._latest_effects: OrderedDict[str | None, EffectsAt] = OrderedDict()  # by judge, for the page
        self.slow_fit_s = SLOW_FIT_S
        self._refreshes = Refreshes("boards", gap_s=GAP_S)  # the pages' background refreshes, by what they refresh

    def choose(self, *, tournament_id: int | None = None, judge: str | None = None) -> JudgeChoice:
        """The judge of a board on this scope: `judge` if it has verdicts there, else the one
        `leaderboard.judges.choose_judge` picks. NotFound for an unknown tournament;
        `leaderboard.judges.UnknownJudge` for a named judge without verdicts there."""
        if tournament_id is not None:
            self.store.tournament_spec(tournament_id)  # NotFound for an unknown id (one indexed row)
        return self._choose(tournament_id, judge, self.store.revision())

    def judged(
        self, level: Level, *, tournament_id: int | None = None, judge: str | None = None,
        dimension: str | None = None, part: BoardSlice = WHOLE,
    ) -> tuple[JudgeChoice, Board]:
        """The judge chosen as `choose` does, and that judge's board (empty when no judge has
        verdicts) of the verdicts `part` counts, current as of this call."""
        if tournament_id is not None:
            self.store.tournament_spec(tournament_id)  # NotFound for an unknown id (one indexed row)
        revision = self.store.revision()
        choice = self._choose(tournament_id, judge, revision)
        if choice.judge is None:
            return choice, Board(level, [], 0, revision, PairCounts.empty())
        return choice, self._board_at(level, tournament_id, choice.judge, dimension, revision, part)

    def judged_soon(
        self, level: Level, *, tournament_id: int | None = None, judge: str | None = None,
        dimension: str | None = None, wait_s: float = 1.0,
    ) -> tuple[JudgeChoice, Board] | None:
        """For the pages: `judged`, except that a board rebuilt from scratch when its judgements
        change (over a tournament, by a dimension) and a tournament's roster are served at once
        from their last computation, however old (the board's `revision` says up to where), while
        newer ones are computed in the background (`service.usecases.refreshes`); None while the very first
        is still computing after `wait_s`. Why: that rebuild reads every judgement of the scope
        (seconds at a million), and a page during a tournament must not wait for it at each new
        judgement. The overall boards are kept current one judgement at a time, but their fit is
        redone at each new judgement: one whose fit takes longer than `slow_fit_s` is refitted the
        same way, behind the page (`_overall_soon`). `GET /api/leaderboard` promises current
        boards and asks `judged`."""
        if tournament_id is None and dimension is None:
            return self._overall_soon(level, judge, wait_s)
        if tournament_id is not None:
            self.store.tournament_spec(tournament_id)  # NotFound for an unknown id (one indexed row)
        revision = self.store.revision()
        if tournament_id is None:
            roster: Roster | None = self._roster.at(revision)
        else:
            roster = self._soon(self._rosters, tournament_id, tournament_id, revision, wait_s,
                                lambda seq: self._read_roster(tournament_id, seq))
        if roster is None:
            return None
        choice = choose_judge(roster.judges, judge)
        if choice.judge is None:
            return choice, Board(level, [], 0, roster.revision, PairCounts.empty())
        chosen = choice.judge
        board = self._soon(self._filtered, filter_key(level, tournament_id, chosen, dimension), tournament_id,
                           revision, wait_s, lambda seq: self._read_board(level, tournament_id, chosen, dimension, seq))
        return None if board is None else (choice, board)

    def board(
        self, level: Level, *, tournament_id: int | None = None, judge: str | None = None,
        dimension: str | None = None,
    ) -> Board:
        """The board for exactly these filters, current as of this call; NotFound for an unknown
        tournament. `judge=None` pools every judge: for joust's own checks, never served (the
        API and the page serve `judged`).

        With `dimension`, the board ranks by that dimension of the `dimensions` judgements only,
        rebuilt from scratch when the revision moves (like a tournament's board)."""
        if tournament_id is not None:
            self.store.tournament_spec(tournament_id)  # NotFound for an unknown id (one indexed row)
        return self._board_at(level, tournament_id, judge, dimension, self.store.revision())

    def second_opinions(self, level: Level, choice: JudgeChoice, revision: int, *, tournament_id: int | None = None,
                        dimension: str | None = None, part: BoardSlice = WHOLE) -> Opinions:
        """The pair counts of up to `SECOND_OPINIONS` other judges with verdicts on the scope of
        `choice`'s board (`leaderboard.judges.second_judges`), at `level` and at least `revision`:
        overall, the counts the judges' streams keep current (no fit, no judgement read again
        once warm); over a tournament or a dimension, their boards kept like any other."""
        opinions: list[SecondOpinion] = []
        revisions: list[int] = []
        for judge in second_judges(choice, SECOND_OPINIONS):
            if tournament_id is None and dimension is None and part.whole:
                counts, seen = self._stream(judge).counts(level, revision)
            else:
                other = self._board_at(level, tournament_id, judge, dimension, revision, part)
                counts, seen = (other.counts if other.counts is not None else PairCounts.empty()), other.revision
            opinions.append(SecondOpinion(judge, counts))
            revisions.append(seen)
        return Opinions(tuple(opinions), tuple(revisions))

    def bootstrapped(
        self, level: Level, *, judge: str, tournament_id: int | None = None, dimension: str | None = None,
        part: BoardSlice = WHOLE,
    ) -> Bootstrapped:
        """One judge's board with bootstrap intervals, computed once per revision (questions
        resampled `BOOTSTRAP_ROUNDS` times with `BOOTSTRAP_SEED`, within each component), so
        the same judgements always give the same numbers."""
        if tournament_id is not None:
            self.store.tournament_spec(tournament_id)  # NotFound for an unknown id (one indexed row)
        key = (level, tournament_id, judge, dimension, part)
        with self._bootstrap_lock:
            revision = self.store.revision()
            cached = self._bootstraps.get(key, revision)
            if cached is not None:
                return cached
            if dimension is not None:
                rows = self.store.dimension_side_rows(dimension, tournament_id=tournament_id, judge=judge,
                                                      turn=part.turn)
            elif tournament_id is not None or not part.whole:
                rows = self.store.side_rows(tournament_id=tournament_id, judge=judge, turn=part.turn)
            else:  # the rows and the revision they include, read together
                rows, revision = self.store.side_rows_since(0, judge=judge)
            result = bootstrap_from_rows(part.rows(rows), level, k=self.k, revision=revision)
            self._bootstraps.put(key, result)
            return result

    def styled(self, level: Level, plain: Board, *, judge: str, tournament_id: int | None = None,
               turn: int | None = None) -> Styled:
        """One judge's `plain` board with style control, computed once per revision (it reads
        every output the board's judgements compared, and fits per battle); `turn`: of that turn's."""
        key = (level, tournament_id, judge, turn)
        with self._bootstrap_lock:
            cached = self._styled.get(key, plain.revision)
            if cached is not None:
                return cached
            rows = self.store.styled_side_rows(tournament_id=tournament_id, judge=judge, turn=turn)
            try:
                found = styled_board(rows, level, plain.rows)
                result = Styled(dataclasses.replace(plain, rows=found.rows), found.coefficients, None)
            except StyleUnavailable as exc:
                result = Styled(plain, [], str(exc))
            self._styled.put(key, result)
            return result

    def tied(self, plain: Board, *, judge: str, tournament_id: int | None = None, dimension: str | None = None,
             part: BoardSlice = WHOLE) -> Tied:
        """One judge's `plain` board rated by Davidson's tie model, computed once per revision
        from the pair counts the plain board was fitted on (no judgement is read again)."""
        key = (plain.level, tournament_id, judge, dimension, part)
        cached = self._tied.get(key, plain.revision)
        if cached is not None:
            return cached
        counts = plain.counts if plain.counts is not None else PairCounts.empty()
        try:
            found = tied_board(plain.rows, counts)
            result = Tied(dataclasses.replace(plain, rows=found.rows), found.tie_parameters, None)
        except ValueError as exc:
            result = Tied(plain, [], str(exc))
        self._tied.put(key, result)
        return result

    def _choose(self, tournament_id: int | None, judge: str | None, revision: int) -> JudgeChoice:
        if tournament_id is None:
            roster = self._roster.at(revision)
        else:
            roster = scoped(self.store, self._rosters, tournament_id, tournament_id, revision,
                                  lambda seq: self._read_roster(tournament_id, seq))
        return choose_judge(roster.judges, judge)

    def _board_at(
        self, level: Level, tournament_id: int | None, judge: str | None, dimension: str | None, revision: int,
        part: BoardSlice = WHOLE,
    ) -> Board:
        if tournament_id is None and dimension is None and part.whole:
            return self._stream(judge).board(level, revision)
        return scoped(self.store, self._filtered, filter_key(level, tournament_id, judge, dimension, part),
                            tournament_id, revision,
                            lambda seq: self._read_board(level, tournament_id, judge, dimension, seq, part))

    def _read_board(self, level: Level, tournament_id: int | None, judge: str | None, dimension: str | None,
                    seq: int | None, part: BoardSlice = WHOLE) -> Board:
        """A board from scratch over a tournament, by a dimension, or of the verdicts `part`
        counts (`seq`: the tournament's, read before its rows), at the revision read before them."""
        revision = self.store.revision()
        if dimension is not None:
            rows = self.store.dimension_side_rows(dimension, tournament_id=tournament_id, judge=judge, turn=part.turn)
        else:
            rows = self.store.side_rows(tournament_id=tournament_id, judge=judge, turn=part.turn)
        return dataclasses.replace(board_from_rows(part.rows(rows), level, k=self.k, revision=revision), seq=seq)

    def _read_roster(self, tournament_id: int, seq: int | None) -> Roster:
        return dataclasses.replace(tournament_roster(self.store, tournament_id), seq=seq)

    def _overall_soon(self, level: Level, judge: str | None, wait_s: float) -> tuple[JudgeChoice, Board] | None:
        """An overall board for a page: current, unless its last fit took longer than `SLOW_FIT_S`
        (hundreds of players): then the last one at once while the refit runs in the background,
        so that a page during a tournament never waits for a fit at each new judgement."""
        revision = self.store.revision()
        choice = self._choose(None, judge, revision)
        if choice.judge is None:
            return choice, Board(level, [], 0, revision, PairCounts.empty())
        stream = self._stream(choice.judge)
        last = stream.latest(level)
        if last is None or last[1] < self.slow_fit_s or last[0].revision >= revision:
            return choice, stream.board(level, revision)
        board = self._refreshes.soon(
            ("overall", level, choice.judge), lambda: _board_of(stream.latest(level)),
            lambda found: found.revision >= revision, lambda: stream.board(level, self.store.revision()), wait_s)
        return None if board is None else (choice, board)

    def _soon(self, lru: Lru[S], key: Hashable, tournament_id: int | None, revision: int, wait_s: float,
              read: Callable[[int | None], S]) -> S | None:
        """`scoped`, but past `STALE_FROM` verdicts a stale result is served at once while the newer
        one is made in the background (before the first, that one is waited for up to `wait_s`)."""
        found = fresh(self.store, lru, key, tournament_id, revision)
        if found is not None:
            return found
        latest = lru.latest(key)
        if latest is not None and _verdicts(latest) < STALE_FROM:  # rebuilt in the request: milliseconds
            return scoped(self.store, lru, key, tournament_id, revision, read)
        return self._refreshes.soon(
            key, lambda: lru.latest(key), lambda found: found.revision >= revision,
            lambda: scoped(self.store, lru, key, tournament_id, self.store.revision(), read), wait_s)

    def effects(self, *, tournament_id: int | None = None, judge: str | None = None,
                part: BoardSlice = WHOLE) -> EffectsAt:
        """Model and scenario effects over the filtered judgements (`part`: of one turn, each
        pair's majority, as the board counts them), refitted when the revision moves
        (`judge=None` pools every judge: for joust's own checks, like `board`)."""
        if tournament_id is not None:
            self.store.tournament_spec(tournament_id)  # NotFound for an unknown id (one indexed row)
        revision = self.store.revision()
        key = (tournament_id, judge) if part.whole else (tournament_id, judge, part)
        cached = self._effects.get(key, revision)
        if cached is not None:
            return cached
        kept = self._stream(judge).system_counts(revision) if tournament_id is None and part.whole else None
        if kept is not None:  # the counts the overall boards keep current: no judgement read again
            fitted = EffectsAt(fit_effects_counts(*kept), revision)
        else:
            rows = self.store.side_rows(tournament_id=tournament_id, judge=judge, turn=part.turn)
            fitted = EffectsAt(fit_effects(part.rows(rows)), revision)
        self._effects.put(key, fitted)
        if tournament_id is None and part.whole:
            with self._lock:
                latest = self._latest_effects.get(judge)
                if latest is None or latest.revision < revision:
                    self._latest_effects[judge] = fitted
                    self._latest_effects.move_to_end(judge)
                    while len(self._latest_effects) > STREAMS:
                        self._latest_effects.popitem(last=False)
        return fitted

    def effects_soon(self, wait_s: float = 1.0, *, judge: str | None = None, stale_ok: bool = False,
                     ) -> EffectsAt | None:
        """One judge's effects over all tournaments, for the page: current when they can be
        fitted within `wait_s`, else the last fit (its revision says how old; None before the
        first) while the refit goes on in the background. `stale_ok`: once there is a fit, never
        wait, serve it (a page during a tournament must not wait for each refit). Why: the fit
        reads every judgement of the judge (seconds at a million), and the page must not wait for
        it; the boards themselves are always current.
        """
        revision = self.store.revision()
        return self._refreshes.soon(("effects", judge), lambda: self._latest_effect(judge),
                                    lambda latest: latest.revision >= revision, lambda: self.effects(judge=judge),
                                    wait_s, stale_ok=stale_ok)

    def _latest_effect(self, judge: str | None) -> EffectsAt | None:
        with self._lock:
            return self._latest_effects.get(judge)

    def warm(self) -> None:
        """Build the default judge's boards now, and the counts of the other judges its length
        flag is checked against, so the first request does not pay for a cold start."""
        try:
            for level in Level:
                choice, board = self.judged(level)
                self.second_opinions(level, choice, board.revision)
        except Exception:  # a failed warm-up only means the first request builds the board
            log.exception("warming the leaderboard cache failed")

    def _stream(self, judge: str | None) -> Stream:
        """A judge's stream, or all judges' (made on first use; the least recent beyond STREAMS go)."""
        with self._lock:
            stream = self._streams.get(judge)
            if stream is None:
                stream = self._streams[judge] = Stream(self.store, self.k, judge)
                while len(self._streams) > STREAMS:
                    self._streams.popitem(last=False)
            self._streams.move_to_end(judge)
            return stream
