"""The rules of a human vote (leaderboard.votes) on hand-made submissions: what is refused and
why, the call a vote records, its key and ballot in either orientation."""
from __future__ import annotations

import pytest

from leaderboard.types import PLACEHOLDER_OUTPUT, Submission, Winner
from leaderboard.votes import VOTER_MAX, Ballot, Verdict, Vote, VoteRefused, check_vote, vote_key, voter_problem


def sub(id: int, model: str, question: str = "q1", scenario: str = "default", output: str | None = None) -> Submission:
    return Submission(id=id, question_id=question, question=f"text of {question}", model=model, scenario=scenario,
                      output=f"answer of {model}" if output is None else output)


A1, A2, A3 = sub(1, "m1"), sub(2, "m2"), sub(3, "m1", scenario="terse")
OTHER_QUESTION = sub(4, "m2", question="q2")
SAME_PLAYER = sub(5, "m1", question="q1", output="another answer of m1")  # m1/default again
PLACEHOLDER = sub(6, "m3", output=PLACEHOLDER_OUTPUT)


@pytest.mark.parametrize(("vote", "field", "words"), [
    (Vote("alice", A1, A1, Verdict.A), "b", "same submission"),
    (Vote("alice", A1, OTHER_QUESTION, Verdict.A), "b", "different questions"),
    (Vote("alice", A1, SAME_PLAYER, Verdict.A), "b", "cannot play itself"),
    (Vote("alice", A1, PLACEHOLDER, Verdict.A), "b", "placeholder"),
    (Vote("alice", PLACEHOLDER, A1, Verdict.A), "a", "placeholder"),
    (Vote("alice", A1, A2, Verdict.A, first=3), "first", "neither a (1) nor b (2)"),
    (Vote("al/ice", A1, A2, Verdict.A), "voter", "'/'"),
])
def test_a_vote_that_means_nothing_is_refused_naming_its_field(vote: Vote, field: str, words: str) -> None:
    with pytest.raises(VoteRefused) as refused:
        check_vote(vote)
    assert refused.value.field == field and words in refused.value.message


@pytest.mark.parametrize("other", [OTHER_QUESTION, SAME_PLAYER])
def test_a_blind_refusal_names_no_model_scenario_or_question(other: Submission) -> None:
    """A voter's key in a private joust must not learn who wrote which answer from a refusal."""
    with pytest.raises(VoteRefused) as told:
        check_vote(Vote("alice", A1, other, Verdict.A))
    with pytest.raises(VoteRefused) as blind:
        check_vote(Vote("alice", A1, other, Verdict.A), blind=True)
    assert told.value.field == blind.value.field == "b"
    assert any(word in told.value.message for word in ("'m1'", "'q2'"))
    assert not any(word in blind.value.message for word in ("m1", "m2", "default", "q1", "q2"))


def test_two_scenarios_of_one_model_may_meet() -> None:
    check_vote(Vote("alice", A1, A3, Verdict.B, first=3))  # m1/default against m1/terse: a scenario comparison


@pytest.mark.parametrize(("name", "words"), [
    ("", "empty"), ("x" * (VOTER_MAX + 1), f"at most {VOTER_MAX}"), (" alice", "whitespace"), ("alice\n", "whitespace"),
    ("a/b", "'/'"), ("a,b", "','"), ("a\tb", "U+0009"), ("a\x7fb", "U+007F"), ("a\u202eb", "U+202E"),
    ("a\u2028b", "U+2028"), ("a\ud800b", "U+D800"),
])
def test_a_voter_name_is_a_plain_name(name: str, words: str) -> None:
    problem = voter_problem(name)
    assert problem is not None and words in problem


@pytest.mark.parametrize("name", ["alice", "Zoë Ångström", "x" * VOTER_MAX, "rater 7 (night shift)"])
def test_plain_names_are_voters(name: str) -> None:
    assert voter_problem(name) is None


def test_the_call_is_positional_when_the_first_shown_is_known() -> None:
    # a won; shown b first, the winner was the answer shown second
    assert Vote("alice", A1, A2, Verdict.A, first=2).call()["winner"] == "B"
    assert Vote("alice", A1, A2, Verdict.A, first=1).call()["winner"] == "A"
    unknown = Vote("alice", A1, A2, Verdict.B).call()
    assert (unknown["first"], unknown["winner"]) == (None, "B")  # relative to a, as imported battles record it


def test_both_bad_is_a_tie_that_remembers_it_was_both_bad() -> None:
    vote = Vote("alice", A1, A2, Verdict.BOTH_BAD, first=2)
    assert vote.outcome is Winner.TIE
    assert (vote.call()["winner"], vote.call()["both_bad"]) == ("TIE", True)
    assert Vote("alice", A1, A2, Verdict.TIE).call()["both_bad"] is False
    assert vote.ballot() != Vote("alice", A1, A2, Verdict.TIE, first=2).ballot()


def test_one_key_and_one_ballot_per_vote_in_either_orientation() -> None:
    vote = Vote("alice", A1, A2, Verdict.A, first=2)
    swapped = Vote("alice", A2, A1, Verdict.B, first=2)
    assert vote.key == swapped.key == vote_key("human/alice", 2, 1)
    assert vote.ballot() == swapped.ballot() == Ballot((1, 2), Winner.A, False, 2)
    assert vote.key != Vote("bob", A1, A2, Verdict.A, first=2).key  # each voter votes once per pair
    assert vote.ballot() != Vote("alice", A1, A2, Verdict.B, first=2).ballot()  # another verdict
    assert vote.ballot() != Vote("alice", A1, A2, Verdict.A, first=1).ballot()  # shown the other way round
    assert vote.ballot() != Vote("alice", A1, A2, Verdict.A).ballot()  # order not given
    stored = Ballot.of(2, 1, Winner.B, vote.call())  # as the store reads it back, stored b-first
    assert stored == vote.ballot()
    assert stored.describe() == "submission 1 won, 2 shown first"
