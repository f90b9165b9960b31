"""The store on a real SQLite file: idempotent submissions, atomic batches, keyed judgements."""
from __future__ import annotations

import pytest

from leaderboard.keys import content_hash
from leaderboard.spec import RunSpec
from leaderboard.types import Pair, Winner
from service.store import Conflict, NewJudgement, NewSubmission, NotFound, Store
from service.store.tournament_rows import StaleMatch


def sub(qid: str, model: str, output: str, scenario: str = "default", question: str = "Q?") -> NewSubmission:
    return NewSubmission(question_id=qid, question=question, model=model, scenario=scenario, output=output)


def judgement(store: Store, a: int, b: int, key: str, winner: Winner = Winner.A) -> int:
    subs = store.list_submissions()
    out_a = next(s.output for s in subs if s.id == a)
    jid, _ = store.save_judgement(
        NewJudgement(key=key, judge="anthropic/x", criteria="overall", template_version="t", a_id=a, b_id=b,
                     a_hash=content_hash(out_a), outcome=winner, consistent=True,
                     calls=[{"first": a, "winner": "A", "reason": "r"}])
    )
    return jid


def test_same_content_is_not_duplicated(store: Store) -> None:
    first = store.add_submissions([sub("q1", "m1", "hello")])
    again = store.add_submissions([sub("q1", "m1", "hello")])
    assert first == [(first[0][0], True)]
    assert again == [(first[0][0], False)]
    assert len(store.list_submissions()) == 1


def test_conflict_rejects_the_whole_batch(store: Store) -> None:
    store.add_submissions([sub("q1", "m1", "hello")])
    with pytest.raises(Conflict, match="q1.*m1.*output"):
        store.add_submissions([sub("q2", "m1", "new one"), sub("q1", "m1", "different")])
    assert [s.question_id for s in store.list_submissions()] == ["q1"]


def test_filters(store: Store) -> None:
    store.add_submissions([sub("q1", "m1", "a"), sub("q1", "m2", "b", scenario="s2"), sub("q2", "m1", "c")])
    assert {s.question_id for s in store.list_submissions(model="m1")} == {"q1", "q2"}
    assert [s.model for s in store.list_submissions(scenario="s2")] == ["m2"]
    assert len(store.select_submissions(models=["m1"], questions=["q2"])) == 1


def test_tournament_lifecycle_and_counts(store: Store) -> None:
    (a, _), (b, _), (c, _) = store.add_submissions([sub("q1", "m1", "a"), sub("q1", "m2", "b"), sub("q1", "m3", "c")])
    tid = store.create_tournament("t", RunSpec(judge="anthropic/x"), [Pair(a, b), Pair(a, c), Pair(b, c)])
    matches = store.pending_matches(tid)
    assert store.get_tournament(tid).status == "queued"
    assert store.start_match(matches[0])
    assert store.get_tournament(tid).status == "running"
    jid = judgement(store, a, b, "k1")
    assert store.resolve_match(matches[0], jid, Winner.A, True)
    assert not store.resolve_match(matches[0], jid, Winner.A, True)  # resolved once
    store.fail_match(matches[1], "boom", final=True)
    view = store.get_tournament(tid)
    assert (view.matches_total, view.matches_done, view.matches_failed) == (3, 1, 1)
    assert view.status == "running"
    store.cancel_tournament(tid)
    assert store.get_tournament(tid).status == "cancelled"
    assert not store.start_match(matches[2])


def test_tournament_finishes_when_no_match_is_active(store: Store) -> None:
    (a, _), (b, _) = store.add_submissions([sub("q1", "m1", "a"), sub("q1", "m2", "b")])
    tid = store.create_tournament("t", RunSpec(judge="anthropic/x"), [Pair(a, b)])
    (m,) = store.pending_matches(tid)
    store.fail_match(m, "transient", final=False)
    assert store.get_tournament(tid).status == "queued"
    store.fail_match(m, "parse", final=True)
    assert store.get_tournament(tid).status == "failed"
    assert store.create_tournament("empty", RunSpec(judge="anthropic/x"), [])
    assert store.list_tournaments()[0].status == "done"


def test_judgement_is_stored_once_per_key(store: Store) -> None:
    (a, _), (b, _) = store.add_submissions([sub("q1", "m1", "a"), sub("q1", "m2", "b")])
    first = judgement(store, a, b, "same-key")
    second = judgement(store, a, b, "same-key", Winner.B)
    assert first == second
    assert store.find_judgement("same-key").outcome == "A"
    assert store.find_judgement("other") is None


def test_a_judgement_counts_once_across_tournaments(store: Store) -> None:
    (a, _), (b, _) = store.add_submissions([sub("q1", "m1", "a"), sub("q1", "m2", "b")])
    jid = judgement(store, a, b, "k")
    for name in ("first", "second"):
        tid = store.create_tournament(name, RunSpec(judge="anthropic/x"), [Pair(a, b)])
        (m,) = store.pending_matches(tid)
        store.resolve_match(m, jid, Winner.A, True)
    rows = store.side_rows()
    assert len(rows) == 1 and rows[0].winner is Winner.A and rows[0].a_model == "m1"
    assert len(store.side_rows(tournament_id=tid)) == 1
    assert store.side_rows(judge="someone/else") == []


def test_stale_matches_and_unknown_ids(store: Store) -> None:
    (a, _), (b, _) = store.add_submissions([sub("q1", "m1", "a"), sub("q1", "m2", "b")])
    now = [1000.0]
    st = Store(store.url, clock=lambda: now[0])
    tid = st.create_tournament("t", RunSpec(judge="anthropic/x"), [Pair(a, b)])
    (m,) = st.pending_matches(tid)
    assert st.stale_matches(1010.0, 300) == []  # within the grace period
    assert [x.id for x in st.stale_matches(1100.0, 300)] == [m]
    st.mark_queued({m: "job-1"})
    assert st.stale_matches(1200.0, 300) == []
    assert st.stale_matches(1400.0, 300) == [StaleMatch(id=m, status="queued", job_id="job-1")]
    with pytest.raises(NotFound):
        st.get_tournament(999)
    with pytest.raises(NotFound):
        st.match_context(999)
    st.close()
