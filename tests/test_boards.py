"""The board cache over a real store (SQLite and PostgreSQL), fed the way workers feed it
(create_tournament, save_judgement, resolve_match): incremental boards equal from-scratch ones at
every revision; the judges' roster, read in parts, equals one read; a board is one judge's."""
from __future__ import annotations

import bisect
import random
import threading
from collections.abc import Sequence

import pytest
from sqlalchemy import select

from leaderboard.board import build_board
from leaderboard.effects import Effects, fit_effects
from leaderboard.judges import HUMANS, ChosenBy, JudgeSummary, UnknownJudge, merge
from leaderboard.keys import content_hash
from leaderboard.players import SideRow, battles_at_level
from leaderboard.spec import RunSpec
from leaderboard.types import Level, Pair, Rating, Winner
from service.store import NewJudgement, NewSubmission, NotFound, Store, schema
from service.store.imports import ImportedJudgement
from service.usecases.boards import BOOTSTRAP_ROUNDS, Board, BoardCache, EffectsAt, Players

K = 16.0
MODELS = ("m0", "m1", "m2", "m3", "m4")
SCENARIOS = ("plain", "cot")
JUDGES = ("anthropic/x", "openai/y")


class World:
    """Submissions for every (model, scenario, question) and a worker that judges pairs."""

    def __init__(self, store: Store, questions: int = 6, seed: int = 0) -> None:
        self.store = store
        self.rng = random.Random(seed)
        batch = [
            NewSubmission(question_id=f"q{q}", question=f"Q{q}?", model=m, scenario=s, output=f"{m}/{s}/{q}")
            for q in range(questions) for m in MODELS for s in SCENARIOS
        ]
        ids = [sid for sid, _ in store.add_submissions(batch)]
        self.by_question: dict[str, list[tuple[int, str]]] = {}
        for sub, sid in zip(batch, ids):
            self.by_question.setdefault(sub.question_id, []).append((sid, sub.output))
        self.judged: list[tuple[int, int, int, Winner]] = []  # (a, b, judgement id, winner)
        self.keys = 0

    def plan(self, count: int, *, judge: str = JUDGES[0], rejudge: int = 0) -> int:
        """A tournament of `count` new random pairs plus `rejudge` pairs judged before."""
        pairs = []
        for _ in range(count):
            subs = self.rng.choice(list(self.by_question.values()))
            (a, _), (b, _) = self.rng.sample(subs, 2)
            pairs.append(Pair(a, b))
        pairs += [Pair(a, b) for a, b, _, _ in self.rng.sample(self.judged, min(rejudge, len(self.judged)))]
        unique = list(dict.fromkeys(pairs))
        return self.store.create_tournament(f"t{self.keys}", RunSpec(judge=judge), unique)

    def work(self, tournament_id: int, *, judge: str = JUDGES[0], limit: int | None = None) -> int:
        """Judge (or reuse the judgement of) the tournament's pending matches; how many resolved."""
        done = 0
        for match_id in self.store.pending_matches(tournament_id)[:limit]:
            self.resolve(match_id, judge)
            done += 1
        return done

    def resolve(self, match_id: int, judge: str = JUDGES[0]) -> None:
        ctx = self.store.match_context(match_id)
        previous = next((j for j in self.judged if {j[0], j[1]} == {ctx.a.id, ctx.b.id}), None)
        if previous is not None and judge == JUDGES[0]:
            a, _, jid, winner = previous
            assert self.store.resolve_match(match_id, jid, winner if a == ctx.a.id else winner.flipped(), True)
            return
        assert self.store.start_match(match_id)
        strength = lambda sub: MODELS.index(sub.model) + 0.7 * SCENARIOS.index(sub.scenario)
        gap = strength(ctx.b) - strength(ctx.a) + self.rng.gauss(0, 1.5)
        winner = Winner.TIE if abs(gap) < 0.3 else (Winner.A if gap > 0 else Winner.B)
        self.keys += 1
        jid, created = self.store.save_judgement(
            NewJudgement(key=f"key-{self.keys}-{judge}", judge=judge, criteria="overall", template_version="t",
                         a_id=ctx.a.id, b_id=ctx.b.id, a_hash=content_hash(ctx.a.output), outcome=winner,
                         consistent=True, calls=[{"first": ctx.a.id, "winner": winner.value, "reason": "r"}])
        )
        assert created
        if judge == JUDGES[0]:
            self.judged.append((ctx.a.id, ctx.b.id, jid, winner))
        assert self.store.resolve_match(match_id, jid, winner, True)


def from_scratch(rows: Sequence[SideRow], level: Level) -> list[Rating]:
    return build_board(battles_at_level(rows, level), k=K)


def assert_same(got: list[Rating], want: list[Rating]) -> None:
    assert [r.player for r in got] == [r.player for r in want]
    for g, w in zip(got, want):
        assert (g.wins, g.losses, g.ties, g.matches) == (w.wins, w.losses, w.ties, w.matches), g.player
        assert (g.rating, g.ci_low, g.ci_high, g.elo) == pytest.approx((w.rating, w.ci_low, w.ci_high, w.elo), abs=1e-6, nan_ok=True)


def counted_seqs(store: Store) -> list[int]:
    """The seq of each counted match, aligned with store.side_rows() (both in seq order)."""
    m = schema.matches
    with store.engine.connect() as conn:
        return list(conn.execute(
            select(m.c.seq).where(m.c.status == "done", m.c.counted.is_(True)).order_by(m.c.seq)
        ).scalars())


def test_the_incremental_board_equals_a_rebuild_after_every_batch(store: Store) -> None:
    world, cache = World(store), BoardCache(store, k=K)
    for level in Level:
        assert cache.board(level) == Board(level, [], 0, 0)
    for round_ in range(5):
        world.work(world.plan(12 + round_, rejudge=4))  # rejudged pairs must not count twice
        rows = store.side_rows()
        for level in Level:
            board = cache.board(level)
            assert board.revision == store.revision()
            assert board.judgements == len(battles_at_level(rows, level))
            assert_same(board.rows, from_scratch(rows, level))
            assert None not in (board.rows[0].rank, board.rows[0].rank_low, board.rows[0].rank_high)
    assert store.revision() > len(rows)  # some resolved matches reused a counted judgement


def test_side_rows_since_reads_every_row_once(store: Store) -> None:
    world = World(store)
    for _ in range(3):
        world.work(world.plan(10, rejudge=3))
    everything, seq = store.side_rows_since(0)
    assert everything == store.side_rows() and seq == store.revision()
    assert store.side_rows_since(seq) == ([], seq)
    got, after = [], 0
    while True:  # in chunks of 4, resuming from the returned seq
        rows, after = store.side_rows_since(after, limit=4)
        got += rows
        if len(rows) < 4:
            break
    assert got == everything and after == seq
    judged = store.side_rows_since(0, judge=JUDGES[1])
    assert judged == ([], seq)


def test_a_request_after_a_resolve_sees_it(store: Store) -> None:
    world, cache = World(store), BoardCache(store, k=K)
    tid = world.plan(6)
    for expected in range(1, 7):
        world.work(tid, limit=1)
        board = cache.board(Level.SYSTEM)  # no waiting, no invalidation call: the revision moved
        assert (board.judgements, board.revision) == (expected, store.revision())
        assert sum(r.matches for r in board.rows) == 2 * expected


def test_repeated_requests_at_one_revision_reuse_the_board(store: Store) -> None:
    world, cache = World(store), BoardCache(store, k=K)
    world.work(world.plan(8))
    first = cache.board(Level.MODEL)
    assert cache.board(Level.MODEL) is first
    world.work(world.plan(1))
    assert cache.board(Level.MODEL) is not first


def test_filtered_boards_follow_the_revision(store: Store) -> None:
    world, cache = World(store), BoardCache(store, k=K)
    first = world.plan(8)
    world.work(first)
    second = world.plan(8, judge=JUDGES[1], rejudge=3)
    world.work(second, judge=JUDGES[1], limit=4)
    filters = [{"tournament_id": first}, {"tournament_id": second}, {"judge": JUDGES[1]},
               {"tournament_id": second, "judge": JUDGES[1]}, {"judge": "nobody/none"}]
    before = {i: cache.board(Level.MODEL, **f) for i, f in enumerate(filters)}
    assert cache.board(Level.MODEL, tournament_id=second) is before[1]  # cached at this revision
    world.work(second, judge=JUDGES[1])  # the rest of the second tournament
    for i, f in enumerate(filters):
        board = cache.board(Level.MODEL, **f)
        assert board.revision == store.revision()
        rows = store.side_rows(**f)
        assert board.judgements == len(battles_at_level(rows, Level.MODEL))
        assert_same(board.rows, from_scratch(rows, Level.MODEL))
        if i in (1, 2, 3):  # the second tournament's judge and runs gained judgements
            assert board.judgements > before[i].judgements
        else:
            assert board.rows == before[i].rows
    with pytest.raises(NotFound):
        cache.board(Level.MODEL, tournament_id=999)


def test_concurrent_requests_while_resolving_never_double_count(store: Store) -> None:
    world, cache = World(store, questions=10), BoardCache(store, k=K)
    world.work(world.plan(20))
    tid = world.plan(60, rejudge=10)
    seen: list[Board] = []
    errors: list[Exception] = []
    stop = threading.Event()

    def read(level: Level) -> None:
        try:
            while not stop.is_set():
                revision = store.revision()
                board = cache.board(level)
                assert board.revision >= revision  # never older than the request
                seen.append(board)
        except Exception as exc:  # noqa: BLE001 (reported below: an assert in a thread would vanish)
            errors.append(exc)

    readers = [threading.Thread(target=read, args=(level,)) for level in (Level.MODEL, Level.MODEL, Level.SYSTEM)]
    for thread in readers:
        thread.start()
    try:
        world.work(tid)
    finally:
        stop.set()
        for thread in readers:
            thread.join(timeout=60)
    assert not errors, errors
    rows, seqs = store.side_rows(), counted_seqs(store)
    revisions = {(b.level, b.revision) for b in seen}
    assert len(revisions) > 10  # the readers really ran while matches were resolved
    for board in {(b.level, b.revision): b for b in seen}.values():
        upto = rows[: bisect.bisect_right(seqs, board.revision)]
        assert board.judgements == len(battles_at_level(upto, board.level))
        assert_same(board.rows, from_scratch(upto, board.level))


def assert_same_effects(got: Effects, want: Effects, tol: float = 1e-6) -> None:
    """Equal effects up to the fit's tolerance (systems counted in another order round differently)."""
    assert got.battles == want.battles
    assert [(g.component, g.systems, g.battles) for g in got.groups] == [
        (g.component, g.systems, g.battles) for g in want.groups]
    for ours, theirs_group in zip(got.groups, want.groups):
        for mine, theirs in ((ours.models, theirs_group.models), (ours.scenarios, theirs_group.scenarios)):
            assert list(mine) == list(theirs)
            for name, effect in mine.items():
                assert effect.bounded == theirs[name].bounded, name
                assert effect[:3] == pytest.approx(theirs[name][:3], abs=tol, nan_ok=True), name


def test_effects_are_refitted_when_the_revision_moves(store: Store) -> None:
    world, cache = World(store), BoardCache(store, k=K)
    assert cache.effects_soon(wait_s=30) == EffectsAt(fit_effects([]), 0)
    for _ in range(3):
        world.work(world.plan(15))
        fitted = cache.effects()
        assert fitted.revision == store.revision()
        assert_same_effects(fitted.effects, fit_effects(store.side_rows()))  # from the kept counts, no reread
        assert cache.effects() is fitted  # one fit per revision
        assert cache.effects_soon(wait_s=30) is fitted
        assert set(fitted.effects.group(1).scenarios) == set(SCENARIOS) and fitted.effects.battles > 0
    tid = world.plan(4)
    world.work(tid)
    assert cache.effects_soon(wait_s=30).revision == store.revision()  # refitted in the background
    assert cache.effects(tournament_id=tid).effects == fit_effects(store.side_rows(tournament_id=tid))


def test_judge_summaries_read_in_parts_equal_one_read(store: Store) -> None:
    world = World(store)
    merged: dict[str, JudgeSummary] = {}
    seq = 0
    for _ in range(3):
        world.work(world.plan(8, rejudge=3))  # rejudged pairs reuse a judgement: not counted again
        world.work(world.plan(5, judge=JUDGES[1]), judge=JUDGES[1])
        more, seq = store.judge_summaries(after_seq=seq)
        merged = merge(merged, more)
        assert seq == store.revision()
    whole, upto = store.judge_summaries()
    assert upto == seq and {s.judge: s for s in whole} == merged
    t = schema.tournaments
    with store.engine.connect() as conn:
        specs = conn.execute(select(t.c.spec, t.c.id)).all()
    for judge in JUDGES:
        assert merged[judge].verdicts == len(store.side_rows(judge=judge))
        assert merged[judge].latest_tournament == max(i for spec, i in specs if judge in spec)
    assert store.judge_summaries(after_seq=seq) == ([], seq)
    # a tournament's verdicts: one per judgement and pair, over the tournament alone
    tid = world.plan(4, rejudge=4)
    world.work(tid)
    (own,), _ = store.judge_summaries(tournament_id=tid)
    assert own == JudgeSummary(JUDGES[0], len(store.side_rows(tournament_id=tid)), tid)
    with pytest.raises(ValueError):
        store.judge_summaries(tournament_id=tid, after_seq=1)


def test_the_cache_serves_one_judge_and_pools_humans_with_humans_only(store: Store) -> None:
    world, cache = World(store), BoardCache(store, k=K)
    world.work(world.plan(12))
    world.work(world.plan(6, judge=JUDGES[1]), judge=JUDGES[1])
    choice, board = cache.judged(Level.MODEL)
    assert (choice.judge, choice.chosen_by) == (JUDGES[1], ChosenBy.LATEST_TOURNAMENT)
    assert_same(board.rows, from_scratch(store.side_rows(judge=JUDGES[1]), Level.MODEL))
    assert [s.judge for s in choice.others] == [JUDGES[0]]
    # human votes (newer tournaments) on pairs the LLM judged: their own board, never the default
    (a, b, _, _), (c, d, _, _) = world.judged[:2]
    for voter, pairs in (("alice", [(a, b), (c, d)]), ("bob", [(b, a)])):
        store.import_judgements(name=voter, source="test", judge=f"human/{voter}", criteria="overall", rows=[
            ImportedJudgement(f"{voter}-{i}", x, y, Winner.A, [{"first": x, "winner": "A"}])
            for i, (x, y) in enumerate(pairs)
        ])
    assert cache.judged(Level.MODEL)[0].judge == JUDGES[1]
    humans = store.side_rows(judge=HUMANS)
    assert humans == store.side_rows(judge="human/alice") + store.side_rows(judge="human/bob") and len(humans) == 3
    human_choice, human_board = cache.judged(Level.SYSTEM, judge=HUMANS)
    assert human_choice.chosen_by is ChosenBy.NAMED and human_board.judgements == 3
    assert_same(human_board.rows, from_scratch(humans, Level.SYSTEM))
    with pytest.raises(UnknownJudge):
        cache.judged(Level.MODEL, judge="human/carol")


def test_bootstrapped_boards_are_kept_per_revision(store: Store) -> None:
    world, cache = World(store), BoardCache(store, k=K)
    world.work(world.plan(20))
    first = cache.bootstrapped(Level.SYSTEM, judge=JUDGES[0])
    assert cache.bootstrapped(Level.SYSTEM, judge=JUDGES[0]) is first
    assert (first.rounds, first.revision) == (BOOTSTRAP_ROUNDS, store.revision())
    plain = cache.board(Level.SYSTEM, judge=JUDGES[0])
    assert [(r.player, r.rating) for r in first.board.rows] == [(r.player, r.rating) for r in plain.rows]
    world.work(world.plan(3))
    second = cache.bootstrapped(Level.SYSTEM, judge=JUDGES[0])
    assert second is not first and second.revision == store.revision() > first.revision
    assert second.board.judgements == first.board.judgements + 3


def test_a_system_name_two_submissions_share_is_not_mapped_back() -> None:
    """Effects are fitted from the kept system counts only when every system name stands for one
    (model, scenario); "a + b" under "c" and "a" under "b + c" both print as "a + b + c"."""
    players = Players()
    players.names("m", "plain")
    players.names("a + b", "c")
    assert players.systems == {"m + plain": ("m", "plain"), "a + b + c": ("a + b", "c")}
    players.names("a", "b + c")
    assert players.systems["a + b + c"] is None and players.systems["m + plain"] == ("m", "plain")
    players.names("a + b", "c")
    assert players.systems["a + b + c"] is None  # once ambiguous, always
