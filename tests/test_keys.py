"""leaderboard/keys.py directly: a judgement's key is order-free and changes with each thing it
covers (judge, template version, criteria, question, either output, the order policy where the
judge sees an order), so a stored verdict is reused exactly when nothing that could change it
changed; content hashes and default question ids are stable across processes; `orient`
re-expresses a stored winner for a swapped match."""
from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from leaderboard.keys import (
    SCORED_ALONE,
    answering_keys,
    content_hash,
    default_question_id,
    judgement_key,
    orient,
)
from leaderboard.types import OrderPolicy, Winner
from tests.required import REPO

BASE = {"judge": "anthropic/claude-sonnet-4-5", "template_version": "pairwise-v1", "criteria": "overall",
        "question": "What is 2+2?", "output_a": "4", "output_b": "2+2 equals 4."}


def key(**changes: str) -> str:
    return judgement_key(**{**BASE, **changes})


def test_content_hash_is_the_sha256_of_the_utf8_text() -> None:
    assert content_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert content_hash("thé") == hashlib.sha256("thé".encode()).hexdigest() != content_hash("the")


def test_the_key_is_order_free() -> None:
    assert key() == key(output_a=BASE["output_b"], output_b=BASE["output_a"])
    assert key(output_a="same", output_b="same") == key(output_a="same", output_b="same")


@pytest.mark.parametrize("field", sorted(BASE))
def test_the_key_changes_with_each_thing_it_covers(field: str) -> None:
    assert key(**{field: BASE[field] + " "}) != key()  # one trailing space is enough
    assert key(**{field: BASE[field].upper() + "x"}) != key()


def test_fields_do_not_run_into_each_other() -> None:
    """A separator keeps ("ab", "c") and ("a", "bc") apart."""
    assert key(judge="openai/m", template_version="x-v1") != key(judge="openai/mx", template_version="-v1")
    assert key(template_version="v1", criteria="overall") != key(template_version="v1o", criteria="verall")


def test_a_changed_output_is_another_key_whichever_side_it_is_on() -> None:
    a, b = BASE["output_a"], BASE["output_b"]
    keys = [key(), key(output_a="5"), key(output_b="5")]  # {a, b}, {5, b}, {a, 5}
    assert len(set(keys)) == 3
    assert key(output_a="5", output_b=a) == keys[2] and key(output_a=b, output_b="5") == keys[1]


def test_the_key_is_stable_across_processes_and_pinned() -> None:
    """Stored judgements are found by key: a changed key would re-judge (and pay for) every pair."""
    code = ("from leaderboard.keys import judgement_key; "
            f"print(judgement_key(*{tuple(BASE.values())!r}))")
    other = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                           env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert other.stdout.strip() == key(), other.stderr
    parts = [BASE["judge"], BASE["template_version"], BASE["criteria"], content_hash(BASE["question"]),
             *sorted(content_hash(BASE[o]) for o in ("output_a", "output_b"))]
    assert key() == hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    assert key() == "4f3582df88c99e5bdc1d4b6a746f49bde9add6aaf5825836e44e150e2b39a6ec"


def test_the_order_policy_counts_where_the_judge_sees_an_order() -> None:
    both, single = key(order=OrderPolicy.BOTH), key(order=OrderPolicy.SINGLE)
    assert both == key() != single  # `both` is the default, and the key from before the policy joined it
    assert key(order="single") == single
    assert key(output_a=BASE["output_b"], output_b=BASE["output_a"], order="single") == single  # order-free still
    for criteria in sorted(SCORED_ALONE):  # each output scored alone: no order to key by
        assert key(criteria=criteria, order="single") == key(criteria=criteria, order="both") != key(criteria=criteria + "x")


def test_a_both_judgement_answers_a_single_request_never_the_reverse() -> None:
    texts = tuple(BASE.values())
    assert answering_keys(*texts, OrderPolicy.BOTH) == (key(),)
    assert answering_keys(*texts, OrderPolicy.SINGLE) == (key(), key(order="single"))  # best first, its own last
    assert answering_keys(*(texts[:2] + ("compqa",) + texts[3:]), "single") == (key(criteria="compqa"),)


def test_default_question_id_is_a_prefixed_hash_of_the_stripped_text() -> None:
    assert default_question_id("What is 2+2?") == "q-" + content_hash("What is 2+2?")[:16]
    assert default_question_id("  What is 2+2?\n") == default_question_id("What is 2+2?")
    assert default_question_id("What is 2+3?") != default_question_id("What is 2+2?")


def test_orient_flips_the_winner_for_a_swapped_match() -> None:
    judged_a = content_hash("4")
    for winner in Winner:
        assert orient(winner, judged_a, "4") is winner
        assert orient(winner, judged_a, "2+2 equals 4.") is winner.flipped()
    assert orient(Winner.TIE, judged_a, "other") is Winner.TIE
