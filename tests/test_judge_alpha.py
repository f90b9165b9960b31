"""Krippendorff's alpha in judge health (leaderboard.judge_alpha): the same figure as
`krippendorff_alpha` on each pair counted from both sides, whichever side a pair calls A; the
report's judge-to-judge figures from every record, and from a running tally alike."""
from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from leaderboard.agreement import krippendorff_alpha
from leaderboard.judge_alpha import VoteTable, human_alpha, judge_alphas
from leaderboard.judge_health import JudgementRecord, health_report, human_votes, pair_verdict
from leaderboard.judge_health_tally import HealthTally
from leaderboard.types import Winner

FLIP = {"A": "B", "B": "A", "TIE": "TIE"}


def records(seed: int) -> list[JudgementRecord]:
    """Two LLM judges and two voters over 150 pairs, agreeing with a hidden truth now and then."""
    rng = random.Random(seed)
    out = []
    for p in range(150):
        a, b = (2 * p, 2 * p + 1) if rng.random() < 0.5 else (2 * p + 1, 2 * p)  # either side first
        truth = rng.choice([Winner.A, Winner.B, Winner.TIE])
        for judge, skill, share in (("llm/one", 0.7, 1.0), ("llm/two", 0.5, 0.8), ("human/p", 0.8, 0.6),
                                    ("human/q", 0.8, 0.4)):
            if rng.random() < share:
                verdict = truth if rng.random() < skill else rng.choice([Winner.A, Winner.B, Winner.TIE])
                out.append(JudgementRecord(judge=judge, a_id=a, b_id=b, outcome=verdict, calls=()))
    return out


def by_hand(found: list[JudgementRecord], *groups: set[str]) -> float:
    """`krippendorff_alpha` over the pairs every group judged, each pair twice (as is, flipped)."""
    values: list[dict[tuple[int, int], list[str]]] = [{} for _ in groups]
    for r in found:
        pair, verdict = pair_verdict(r)
        for seen, group in zip(values, groups):
            if r.judge in group:
                seen.setdefault(pair, []).append(verdict.value)
    units = []
    for pair in sorted(set.intersection(*(set(v) for v in values))):
        unit = [x for v in values for x in v[pair]]
        units += [unit, [FLIP[x] for x in unit]]
    slots = max(map(len, units))
    return krippendorff_alpha([[u[i] if i < len(u) else None for u in units] for i in range(slots)]).alpha


def test_human_alpha_is_krippendorffs_on_the_pairs_both_judged() -> None:
    found = records(3)
    humans = {"human/p", "human/q"}
    votes = human_votes(found)
    alpha = human_alpha((pair_verdict(r) for r in found if r.judge == "llm/one"), VoteTable(votes))
    assert alpha.alpha == pytest.approx(by_hand(found, {"llm/one"}, humans), abs=1e-12)
    assert alpha.units == len({pair_verdict(r)[0] for r in found if r.judge == "llm/one"} & set(votes))
    assert alpha.low < alpha.alpha < alpha.high
    report = {h.judge: h for h in health_report(found).judges}
    assert report["llm/one"].human_alpha == alpha.alpha and report["human/p"].human_alpha is None


def test_alpha_does_not_depend_on_which_side_a_pair_calls_a() -> None:
    found = records(5)
    swapped = [JudgementRecord(judge=r.judge, a_id=r.a_id ^ 1, b_id=r.b_id ^ 1, outcome=r.outcome, calls=())
               for r in found]  # every pair's ids exchanged: the lower id is now the other side
    one, two = health_report(found), health_report(swapped)
    assert [h.human_alpha for h in one.judges] == pytest.approx([h.human_alpha for h in two.judges], abs=1e-12)
    assert one.judge_alphas[0].alpha == pytest.approx(two.judge_alphas[0].alpha, abs=1e-12)


def test_judges_pairwise_from_records_and_from_the_tally() -> None:
    found = records(7)
    report = health_report(found)
    [between] = report.judge_alphas  # the voters are compared with the judges, not in here
    assert (between.judge, between.other) == ("llm/one", "llm/two")
    assert between.alpha == pytest.approx(by_hand(found, {"llm/one"}, {"llm/two"}), abs=1e-12)
    tally = HealthTally()
    tally.add(found[:100])
    tally.add(found[100:])
    assert tally.report() == report
    shuffled = random.Random(1).sample(found, len(found))
    one_by_one = HealthTally()
    for start in range(0, len(shuffled), 7):  # a pair's verdicts land in different batches, in any order
        one_by_one.add(shuffled[start:start + 7])
    assert one_by_one.judge_alphas() == report.judge_alphas
    assert health_report(found, judges=["human/p"]).judge_alphas == ()


def test_a_copy_is_one_and_nothing_shared_is_nothing() -> None:
    verdicts = [(judge, (p, p + 1), w) for judge in ("y", "x") for p, w in zip((1, 3, 5), (Winner.A, Winner.B, Winner.TIE))]
    [copy] = judge_alphas(verdicts + [("z", (9, 10), Winner.A)])
    assert (copy.judge, copy.other, copy.alpha, copy.ci_low, copy.ci_high, copy.pairs, copy.ci_missing) == \
           ("x", "y", 1.0, None, None, 3, "no_spread")  # resamples of pairs that all agree never vary alpha
    assert judge_alphas(verdicts[:3]) == () and judge_alphas([]) == ()
    alone = human_alpha([((1, 2), Winner.A)], VoteTable({(3, 4): Counter({Winner.A: 2})}))
    assert alone.units == 0 and np.isnan(alone.alpha)
