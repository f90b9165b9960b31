"""Judge panels (leaderboard/panel.py): the majority rule, checked specs, agreement with people;
then bench/panel_agreement.py's inputs on the real LLMFAO and Comparative-QA data."""
from __future__ import annotations

from collections import Counter

import pytest

from leaderboard.panel import (
    Aggregation,
    PanelError,
    agreement,
    as_votes,
    derived_name,
    majority,
    panel_of,
    panel_verdicts,
    pooled,
)
from leaderboard.types import Winner
from tests.required import shared_data

A, B, T = Winner.A, Winner.B, Winner.TIE


@pytest.mark.parametrize(("outcomes", "expected"), [
    ([A, A, B], A),  # two of three agree
    ([A, A, T], A),
    ([B, T, B], B),
    ([T, T, A], T),  # a majority for the tie is a tie too
    ([A, B, T], T),  # a three-way split: no majority
    ([A, B], T),  # two members who disagree always tie
    ([A, A], A),
    ([A, A, B, B], T),
    ([A, A, B, T], T),  # 2 of 4 is not a strict majority
    ([A, A, A, B], A),
    ([B], B),
])
def test_majority(outcomes: list[Winner], expected: Winner) -> None:
    assert majority(outcomes) is expected
    assert majority([o.flipped() for o in outcomes]) is expected.flipped()  # sides swapped, verdict swapped


def test_majority_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no verdicts"):
        majority([])


def test_panel_name_is_derived_from_the_sorted_members() -> None:
    one = panel_of(["openai/gpt-4o", "anthropic/claude-x", "openai/llama"])
    two = panel_of(["openai/llama", "openai/gpt-4o", "anthropic/claude-x"])
    assert one == two
    assert one.members == ("anthropic/claude-x", "openai/gpt-4o", "openai/llama")
    assert one.judge == "panel/anthropic/claude-x+openai/gpt-4o+openai/llama"
    assert one.aggregation is Aggregation.MAJORITY
    assert derived_name(["b/x", "a/y"]) == "a/y+b/x"
    named = panel_of(["a/x", "b/y"], "separate", name="jury")
    assert (named.judge, named.aggregation) == ("panel/jury", Aggregation.SEPARATE)


@pytest.mark.parametrize(("judges", "aggregation", "name", "message"), [
    ([], "majority", None, "'judges' is empty"),
    (["a/x", "b/y", "a/x"], "majority", None, "'a/x' more than once"),
    (["a/x", "b/y"], "mean", None, "'aggregation' 'mean' is unknown"),
    (["a/x", "nomodel"], "majority", None, "'nomodel' is not a judge spec"),
    (["a/x", "panel/other"], "majority", None, "'panel/other' is a panel"),
    ("a/x", "majority", None, "must be a list"),
    (["a/x", 3], "majority", None, "3 is not a judge spec"),
    (["a/x", "b/y"], "majority", "bad name!", "'panel' name 'bad name!'"),
])
def test_bad_panels_name_the_problem(judges: object, aggregation: str, name: str | None, message: str) -> None:
    with pytest.raises(PanelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        panel_of(judges, aggregation, name)  # type: ignore[arg-type]


def test_panel_verdicts_need_every_member_unless_told() -> None:
    first = {"p1": A, "p2": A, "p3": B}
    second = {"p1": A, "p2": B}
    third = {"p1": B, "p2": B, "p3": B}
    assert panel_verdicts([first, second, third]) == {"p1": A, "p2": B}
    assert panel_verdicts([first, second, third], complete=False) == {"p1": A, "p2": B, "p3": B}
    assert panel_verdicts([{"p": A}, {"q": B}], complete=False) == {}  # one verdict is no panel verdict


def test_agreement_with_ties_counted_and_excluded() -> None:
    people = {"p1": Counter({A: 2, T: 1}), "p2": Counter({B: 1, T: 1}), "p3": Counter({T: 2}), "p4": Counter({A: 1})}
    verdicts = {"p1": A, "p2": T, "p3": T, "p5": A}  # p5: nobody voted, p4: the judge did not judge
    counted = agreement(verdicts, people)
    assert (counted.rate, counted.pairs, counted.votes) == (5 / 7, 3, 7)
    decided = agreement(verdicts, people, decided=True)  # only p1's two winner votes against its A
    assert (decided.rate, decided.pairs, decided.votes) == (1.0, 1, 2)
    assert agreement({"p1": B}, people).rate == 0.0
    assert agreement({}, people).rate is None


def test_a_member_against_its_panel() -> None:
    members = [{"p1": A, "p2": A, "p3": T}, {"p1": A, "p2": B, "p3": B}, {"p1": B, "p2": B, "p3": B}]
    panel = as_votes(panel_verdicts(members))
    assert [agreement(m, panel).rate for m in members] == [pytest.approx(1 / 3), 1.0, pytest.approx(2 / 3)]


def test_a_pooled_board_counts_each_members_verdict_once() -> None:
    battles = pooled({"b/y": [("x", "y", A)], "a/x": [("x", "y", B), ("x", "z", T)]})
    assert battles == [("x", "y", B), ("x", "z", T), ("x", "y", A)]


# ---- the bench's inputs on the real data ---------------------------------------------------


def test_llmfao_two_member_panel_ties_exactly_where_gpt4_and_gpt35_disagree() -> None:
    from bench import panel_agreement as bench

    judges, crowd, names = bench.llmfao(shared_data("llmfao"))
    gpt4, gpt35 = (judges[j] for _, j in bench.LLMFAO_JUDGES)
    assert len(crowd) == 2139 and sum(sum(v.values()) for v in crowd.values()) == 8931
    panel = panel_verdicts([gpt4, gpt35])
    assert set(panel) == set(gpt4) & set(gpt35)
    assert {p for p, w in panel.items() if w is T} == {p for p in panel if gpt4[p] != gpt35[p] or gpt4[p] is T}
    # GPT-4's board against the crowd's: the LLMFAO notebook's published rank correlation 0.730918
    human = bench.board([(p, w) for p, votes in crowd.items() for w, n in votes.items() for _ in range(n)], names)
    assert bench.rho(bench.board(gpt4, names), human) == pytest.approx(0.730918, abs=0.005)


def test_cqa_rubric_judges_give_one_verdict_per_pair_of_systems_on_a_question() -> None:
    from bench import panel_agreement as bench

    judges, experts, systems = bench.cqa(shared_data("cqa_evaluation"))
    assert sorted(judges) == sorted([bench.LENGTH, bench.OFFLINE, "rubric/gpt-3.5", "rubric/gpt-4-fewshot",
                                     "rubric/perplexity"])
    assert all(p[1] < p[2] and systems[p[1]] != systems[p[2]] for p in experts)
    assert all(sum(v.values()) == 1 for v in experts.values())
    members = [judges[j] for j in sorted(judges) if j != bench.LENGTH]
    panel = panel_verdicts(members)
    for pair, verdict in list(panel.items())[:500]:
        counted = Counter(m[pair] for m in members)
        top, votes = counted.most_common(1)[0]
        assert verdict is (top if votes >= 3 else T)  # four members: three make a majority


def test_agreement_between_two_judges_beside_their_alpha() -> None:
    from leaderboard.judge_alpha import judge_alphas

    said = [("x", (1, 2), A), ("y", (1, 2), A), ("x", (1, 3), B), ("y", (1, 3), T), ("x", (2, 3), A), ("y", (2, 3), B)]
    [figure] = judge_alphas(said)
    assert (figure.judge, figure.other, figure.pairs) == ("x", "y", 3)
    assert figure.agreement == pytest.approx(1 / 3)  # only (1, 2) agrees; a tie agrees only with a tie
    assert figure.agreement_decided == 0.5  # (1, 3) has a tie: left out
