"""Agreement with people: a judge's verdicts against the human reference set's votes
(`human_votes`, `human_agreement`, with ties and without) and the votes against each other
(`voter_agreement`, `voters`), as `leaderboard.judge_health`'s docstring defines them.

Apart from a judge's own counts (`leaderboard.judge_counts`) because these compare records of
different judges on the same pair, through the votes counted per pair.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from .judge_records import JudgementRecord, is_human, pair_verdict, share
from .types import Winner


@dataclass(frozen=True)
class Agreement:
    """Agreement with human votes: the share (None without comparisons), pairs and votes compared."""

    rate: float | None
    pairs: int
    votes: int



@dataclass(frozen=True)
class VoterAgreement:
    """Agreement between human votes on the same pairs: `rate` over every couple of votes on
    `pairs` pairs holding `votes` votes (pairs with two votes or more); `decided` over the couples
    that both name a winner, on `decided_pairs` pairs holding `decided_votes` such votes."""

    rate: float | None
    pairs: int
    votes: int
    decided: float | None
    decided_pairs: int
    decided_votes: int



def human_votes(
    records: Iterable[JudgementRecord], humans: Collection[str] | None = None
) -> dict[tuple[int, int], Counter[Winner]]:
    """Per unordered pair, the human verdicts on it (relative to the smaller id), counted: of
    every human judge, or only of the judges named in `humans`."""
    wanted = is_human if humans is None else set(humans).__contains__
    votes: dict[tuple[int, int], Counter[Winner]] = defaultdict(Counter)
    for r in records:
        if wanted(r.judge):
            pair, verdict = pair_verdict(r)
            votes[pair][verdict] += 1
    return votes


def human_agreement(
    records: Iterable[JudgementRecord], votes: Mapping[tuple[int, int], Counter[Winner]], *, decided: bool = False
) -> Agreement:
    """Share of (judgement, human vote) comparisons on the same pair that name the same verdict.

    `decided` keeps only comparisons where both name a winner: how often they pick the same
    one, apart from how often each says tie (MT-Bench's agreement "without ties").
    """
    # votes compared per pair (without ties when `decided`), counted once rather than per record
    sizes = {pair: sum(n for w, n in counted.items() if not decided or w is not Winner.TIE)
             for pair, counted in votes.items()}
    agree = total = 0
    pairs: set[tuple[int, int]] = set()
    for r in records:
        pair, verdict = pair_verdict(r)
        size = sizes.get(pair, 0)
        if not size or (decided and verdict is Winner.TIE):
            continue
        pairs.add(pair)
        total += size
        agree += votes[pair][verdict]
    return Agreement(share(agree, total), len(pairs), total)


def _couples(votes: Mapping[tuple[int, int], Counter[Winner]], decided: bool) -> tuple[int, int, int, int]:
    """(agreeing ordered couples, ordered couples, pairs with a couple, votes on those pairs)."""
    agree = total = pairs = counted_votes = 0
    for counted in votes.values():
        kept = [k for w, k in counted.items() if not decided or w is not Winner.TIE]
        n = sum(kept)
        if n < 2:
            continue
        pairs += 1
        counted_votes += n
        total += n * (n - 1)
        agree += sum(k * (k - 1) for k in kept)
    return agree, total, pairs, counted_votes


def voter_agreement(votes: Mapping[tuple[int, int], Counter[Winner]], *, decided: bool = False) -> float | None:
    """How often two different human votes on the same pair agree (every ordered couple of
    votes counted; with `decided`, only couples that both name a winner): the human baseline a
    judge's `human_agreement` is read against."""
    agree, total, _, _ = _couples(votes, decided)
    return share(agree, total)


def voters(votes: Mapping[tuple[int, int], Counter[Winner]]) -> VoterAgreement:
    """`voter_agreement` with ties and without, with the pairs and votes each rests on."""
    agree, total, pairs, counted = _couples(votes, False)
    d_agree, d_total, d_pairs, d_counted = _couples(votes, True)
    return VoterAgreement(share(agree, total), pairs, counted, share(d_agree, d_total), d_pairs, d_counted)

