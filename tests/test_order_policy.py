"""The order policy is part of a judgement's key (real RQ burst workers, real Redis, SQLite then
PostgreSQL, the fake Messages API): a run asking for both orders never takes a single-order
verdict (it would show a one-call "consistent" judgement), a single-order run takes a both-order
one, and a rerun of either pays nothing. Dry runs and adaptive planning see the same rule."""
from __future__ import annotations

from leaderboard.keys import answering_keys, judgement_key
from leaderboard.spec import RunSpec
from leaderboard.types import OrderPolicy
from service.config import Settings
from service.store import Store
from service.usecases.rounds import known_pairs
from service.usecases.tournaments import dry_run
from tests.fake_anthropic import FakeAnthropic
from tests.worker_fixtures import start, submit, work  # db, env, fake: fixtures of tests/conftest.py

JUDGE = "anthropic/fake-judge"
PAIRS = 6  # submit(): 2 questions, 3 models each


def calls_shown(db: Store, tid: int) -> list[int]:
    """How many calls each judgement the run shows holds."""
    return sorted(len(j["calls"]) for j in db.tournament_judgements(tid))


def dry(db: Store, order: str) -> tuple[int, int]:
    """(cached, calls) of a dry run of a round robin with `order`."""
    got = dry_run(db, RunSpec(judge=JUDGE, order=order), {})
    return got.cached, got.calls


def test_a_both_order_run_never_takes_a_single_order_judgement(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db)
    single = start(db, env, order="single")
    assert work(env, db, single).matches_done == PAIRS
    assert fake.requests == PAIRS and calls_shown(db, single) == [1] * PAIRS
    assert dry(db, "single") == (PAIRS, 0) and dry(db, "both") == (0, 2 * PAIRS)
    field = RunSpec(judge=JUDGE, mode="adaptive")
    assert known_pairs(db, field.with_(order="single"), None) == db.tournament_pairs(single)
    assert known_pairs(db, field, None) == set()  # an adaptive both-order run may still plan them

    both = start(db, env)
    view = work(env, db, both)
    assert (view.matches_done, fake.requests) == (PAIRS, PAIRS + 2 * PAIRS)  # judged again, in both orders
    assert calls_shown(db, both) == [2] * PAIRS
    assert dry(db, "both") == (PAIRS, 0) and dry(db, "single") == (PAIRS, 0)

    for order in ("single", "both", "single"):  # reruns pay nothing
        rerun = start(db, env, order=order)
        assert work(env, db, rerun).matches_done == PAIRS
        assert calls_shown(db, rerun) == [2] * PAIRS  # a single-order run takes the both-order judgement
    assert fake.requests == 3 * PAIRS


def test_a_single_order_run_takes_a_both_order_judgement(db: Store, env: Settings, fake: FakeAnthropic) -> None:
    submit(db)
    work(env, db, start(db, env))
    assert fake.requests == 2 * PAIRS
    assert dry(db, "single") == (PAIRS, 0)
    single = start(db, env, order="single")
    assert work(env, db, single).matches_done == PAIRS
    assert fake.requests == 2 * PAIRS and calls_shown(db, single) == [2] * PAIRS
    a, b = db.select_submissions()[:2]
    texts = (JUDGE, "pairwise-v1", "overall", a.question, a.output, b.output)
    assert db.find_judgement(judgement_key(*texts, OrderPolicy.SINGLE)) is None  # nothing new was stored
    assert db.find_judgement(*answering_keys(*texts, OrderPolicy.SINGLE)) is not None
