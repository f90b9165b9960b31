"""Reading verdicts out of judge replies: robust to formatting, never guessing a tie."""
from __future__ import annotations

import pickle

import pytest

from leaderboard.types import Winner
from workers.errors import TransientJudgeError, VerdictParseError
from workers.verdict import parse_verdict, winner_from_word

A, B, TIE = Winner.A, Winner.B, Winner.TIE

CASES = [
    ('{"winner": "A", "reason": "More accurate."}', A, "More accurate."),
    ('{"winner": "B", "reason": "Clearer."}', B, "Clearer."),
    ('{"winner": "TIE", "reason": "Same."}', TIE, "Same."),
    ('```json\n{"winner": "B", "reason": "Fenced."}\n```', B, "Fenced."),
    ('Here is my verdict:\n{"winner": "A", "reason": "x"}\nHope that helps!', A, "x"),
    ("{'winner': 'b', 'reason': 'single quotes'}", B, "single quotes"),
    ('{"winner": "a", "reason": "lower"}', A, "lower"),
    ('{"winner": "Tie", "reason": "t"}', TIE, "t"),
    ('{"winner": "tie", "reason": "t"}', TIE, "t"),
    ('{"Winner": "Response B", "Reason": "keys in caps"}', B, "keys in caps"),
    ('{"winner": "[[A]]", "reason": "odd"}', A, "odd"),
    ('{"winner": "A", "reason": "first"} on reflection {"winner": "B", "reason": "second"}', B, "second"),
    ('{"winner": "B", "reason": "kept"} {"winner": "neither", "reason": "invalid"}', B, "kept"),
    ('The format is {"winner": "A" | "B" | "TIE", "reason": "..."}.\n{"winner": "B", "reason": "r"}', B, "r"),
    ('{"winner": "A", "reason": "uses {braces} and \\"quotes\\""}', A, 'uses {braces} and "quotes"'),
    ("I don't think so. {'winner': 'A', 'reason': \"it's better\"}", A, "it's better"),
    ('{"winner": "B", "reason": "cut off by max_tok', B, ""),
    ("Both are fine, but A is more precise.\n\n[[A]]", A, None),
    ("Explanation...\nFinal verdict: [[C]]", TIE, None),
    ("reasoning\n[[B]]", B, None),
    ("Response A is thorough.\nWinner: B", B, "Response A is thorough."),
    ("Some analysis.\n\n**Verdict:** Response A", A, "Some analysis."),
    ("Long thoughts\nTIE", TIE, "Long thoughts"),
    ("B", B, ""),
]


@pytest.mark.parametrize("text, winner, reason", CASES)
def test_parses(text: str, winner: Winner, reason: str | None) -> None:
    got_winner, got_reason = parse_verdict(text)
    assert got_winner is winner
    if reason is not None:
        assert got_reason == reason


FAILURES = [
    "",
    "   \n  ",
    "I think both responses are good.",
    "Response A is better in some ways, Response B in others.",
    "{winner: A}",
    '{"winner": "both", "reason": "equal"}',
    '{"winner": null}',
    '{"verdict": "A"}',
    'The format is {"winner": "A" | "B" | "TIE", "reason": "..."}',
    "A is better than B overall, I would say.",
    "Winner: A\nActually, let me reconsider.",
    "[[D]]",
]


@pytest.mark.parametrize("text", FAILURES)
def test_unreadable_replies_raise_never_tie(text: str) -> None:
    with pytest.raises(VerdictParseError) as info:
        parse_verdict(text)
    assert info.value.raw == text


@pytest.mark.parametrize(
    "word, winner",
    [("A", A), (" b ", B), ("Tie", TIE), ("draw", TIE), ("Response_A", A), ("**B**", B), ("C", None), ("", None), (None, None), ("AB", None)],
)
def test_winner_from_word(word: object, winner: Winner | None) -> None:
    assert winner_from_word(word) is winner


def test_errors_pickle_with_their_fields() -> None:
    parse = pickle.loads(pickle.dumps(VerdictParseError("no verdict", raw="x", replies=("w", "x"))))
    assert (str(parse), parse.raw, parse.replies) == ("no verdict", "x", ("w", "x"))
    transient = pickle.loads(pickle.dumps(TransientJudgeError("slow down", 1.5)))
    assert (str(transient), transient.retry_after) == ("slow down", 1.5)
