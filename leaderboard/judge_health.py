"""Judge health: how far each judge's verdicts can be trusted, read from the records it left.

A judge is the instrument of every board, so its biases are reported beside the ratings. All
statistics are shares; a share with nothing to count (no denominator) is None, never 0.

Per judge, over its stored judgements and their calls (one call = one verdict of the judge on
one order of one pair; `winner` is positional, "A" = the answer shown first):

- `consistency`: among both-order judgements (two calls that showed different answers first),
  the share whose two verdicts, re-expressed relative to the pair, agree. An imported verdict
  whose calls do not show both orders counts as the file stated it when it states how two
  orders compared (stored inconsistent, or stored with order policy `both`): MT-Bench's
  `tie (inconsistent)` is an inconsistent both-order verdict without calls.
- `first_position_win_rate`: among calls with a winner (A or B) and a known first answer, the
  share won by the answer shown first. 0.5 is no position bias.
- `tie_rate`: among all calls, the share answering TIE. An imported verdict stored without
  calls counts as one call, its stored verdict (position unknown): the file gave nothing else,
  and so `calls` is never below `judgements` and the tie rate covers every verdict.
- `parse_failure_rate`: (calls whose first reply was unparseable, so the reminder was needed
  (`reminded`), + matches that failed with `VerdictParseError`) / (calls whose `reminded` flag
  was recorded + those failed matches). A failed match counts as one call attempted and failed:
  the call whose reply stayed unreadable after the reminder (its sibling call's reply is not
  stored). Calls without the flag (imported verdicts, which joust never parsed) are left out,
  so an imported judge's rate is None.
- `longer_wins_rate`: among calls with a winner whose two answers differ in length (characters),
  the share won by the longer one. The winner of a call with an unknown first answer is the
  judgement's outcome when the judgement has that one call. Imported battles carry no outputs
  (equal placeholders), so their rate is None.
- `human_agreement`: for a judge that is not human, every (judgement, human vote) on the same
  two submissions is one comparison, in either display order; it agrees when both name the same
  winner or both say tie (a tie agrees only with a tie). The share of agreeing comparisons,
  with `human_pairs` distinct pairs and `human_votes` comparisons. Comparing with each vote
  rather than with a majority needs no tie-break for split votes, and is the probability that
  the judge and a random voter on a random compared pair agree, weighted by votes (the
  convention of MT-Bench's human-agreement tables). A judge is human when its name starts with
  "human/".
- `human_agreement_decided`: the same over the comparisons where both name a winner (a tie on
  either side, a vote of "both bad" included, leaves the comparison out), with its own
  `human_decided_pairs` and `human_decided_votes`: the "without ties" figure MT-Bench publishes,
  which reads how often two verdicts pick the same answer apart from how often each says tie.
- `human_alpha` (`_low`, `_high`, `human_alpha_pairs`): Krippendorff's alpha (nominal) between
  the judge's verdicts and the reference set's votes on the pairs both judged, with a seeded 95%
  bootstrap interval over pairs (`leaderboard.judge_alpha`): agreement beyond what the verdicts'
  frequencies give by chance. No interval, `human_alpha_ci_missing` "no_spread", where every
  resample of the pairs gives the same alpha (one pair, or pairs all alike): a zero-width
  interval the data cannot support. Between judges that are not human, pairwise on the pairs
  both judged: the report's `judge_alphas` (`ci_missing` likewise).

The human reference set: the votes agreement is measured against are those of every human judge,
or of the human judges named (`humans`). A judge in the reference set has no agreement figures
(its votes are the reference); every other judge, another human judge included, is compared
with the set's votes.

Between voters (`voter_agreement`, one figure for the reference set, not per judge): every
couple of two different votes on the same pair, in either order, agrees when both name the
same verdict; `decided` counts only couples of votes that both name a winner. It is the human
baseline a judge's agreement is read against: a judge agreeing with humans as often as humans
agree with each other is as good as one more voter.

Where: the records and who is human in `leaderboard.judge_records`, a judge's own counts in
`leaderboard.judge_counts`, agreement with humans and between voters in
`leaderboard.judge_agreement`, alpha in `leaderboard.judge_alpha`; this module assembles the
report and re-exports their names, so every public name it held still imports from here.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .judge_agreement import Agreement as Agreement
from .judge_agreement import VoterAgreement as VoterAgreement
from .judge_agreement import human_agreement as human_agreement
from .judge_agreement import human_votes as human_votes
from .judge_agreement import voter_agreement as voter_agreement
from .judge_agreement import voters as voters
from .judge_alpha import JudgeAlpha, VoteTable, human_alpha, judge_alphas, measured
from .judge_counts import Counts as Counts
from .judge_counts import consistency as consistency
from .judge_counts import counted_calls as counted_calls
from .judge_counts import counts_of as counts_of
from .judge_counts import first_position_win_rate as first_position_win_rate
from .judge_counts import longer_wins_rate as longer_wins_rate
from .judge_counts import orders_agreed as orders_agreed
from .judge_counts import parse_failure_rate as parse_failure_rate
from .judge_counts import relative as relative
from .judge_counts import tie_rate as tie_rate
from .judge_records import HUMAN_PREFIX as HUMAN_PREFIX
from .judge_records import CallRecord as CallRecord
from .judge_records import JudgementRecord as JudgementRecord
from .judge_records import is_human as is_human
from .judge_records import pair_verdict as pair_verdict
from .judge_records import share as share


@dataclass(frozen=True)
class JudgeHealth:
    """The health figures of one judge (see the module docstring for each definition)."""

    judge: str
    calls: int
    judgements: int
    consistency: float | None
    first_position_win_rate: float | None
    tie_rate: float | None
    parse_failure_rate: float | None
    longer_wins_rate: float | None
    human_agreement: float | None
    human_pairs: int
    human_votes: int
    human_agreement_decided: float | None
    human_decided_pairs: int
    human_decided_votes: int
    human_alpha: float | None = None
    human_alpha_low: float | None = None
    human_alpha_high: float | None = None
    human_alpha_pairs: int = 0
    human_alpha_ci_missing: str | None = None



@dataclass(frozen=True)
class HealthReport:
    """Every judge's health against one human reference set (`humans`, by name), and the
    agreement between that set's votes."""

    judges: tuple[JudgeHealth, ...]
    humans: tuple[str, ...]
    voters: VoterAgreement
    judge_alphas: tuple[JudgeAlpha, ...] = ()



def health_report(
    records: Iterable[JudgementRecord],
    parse_failures: Mapping[str, int] | None = None,
    judges: Collection[str] | None = None,
    humans: Collection[str] | None = None,
) -> HealthReport:
    """The health of every judge with records or parse failures (only `judges` when given),
    sorted by name, against the votes of `humans` (every human judge among `records` when None),
    and the agreement between those votes."""
    listed = list(records)
    counts: dict[str, Counts] = defaultdict(Counts)
    for r in listed:
        counts[r.judge].add(r)
    alphas = judge_alphas((r.judge, *pair_verdict(r)) for r in listed if not is_human(r.judge))
    if judges is not None:
        alphas = tuple(a for a in alphas if a.judge in judges or a.other in judges)
    return assemble_report(counts, listed, parse_failures, judges, humans, alphas)


def assemble_report(
    counts: Mapping[str, Counts],
    compared: Iterable[JudgementRecord],
    parse_failures: Mapping[str, int] | None = None,
    judges: Collection[str] | None = None,
    humans: Collection[str] | None = None,
    alphas: Sequence[JudgeAlpha] = (),
) -> HealthReport:
    """`health_report` from each judge's counts and the records the human figures read:
    `compared` must hold every record of the reference set's judges and every record on a pair
    they voted on (every record will do; a running tally keeps only those); `alphas`, the
    judge-to-judge figures, reported as given."""
    failures = dict(parse_failures or {})
    reference = sorted(set(humans) if humans is not None else {name for name in counts if is_human(name)})
    wanted = set(reference)
    own: dict[str, list[JudgementRecord]] = defaultdict(list)
    for r in compared:
        own[r.judge].append(r)
    votes = human_votes((r for name in reference for r in own.get(name, ())), reference)
    names = {name for name, c in counts.items() if c.judgements} | {name for name, n in failures.items() if n}
    if judges is not None:
        names &= set(judges)
    nothing = Agreement(None, 0, 0)
    table = VoteTable(votes)
    out = []
    for name in sorted(names):
        mine = counts.get(name) or Counts()
        compared_here = name not in wanted
        agreement = human_agreement(own.get(name, ()), votes) if compared_here else nothing
        decided = human_agreement(own.get(name, ()), votes, decided=True) if compared_here else nothing
        alpha = human_alpha((pair_verdict(r) for r in own.get(name, ()) if compared_here), table)
        out.append(JudgeHealth(
            judge=name,
            calls=mine.calls,
            judgements=mine.judgements,
            consistency=mine.consistency,
            first_position_win_rate=mine.first_position_win_rate,
            tie_rate=mine.tie_rate,
            parse_failure_rate=mine.parse_failure_rate(failures.get(name, 0)),
            longer_wins_rate=mine.longer_wins_rate,
            human_agreement=agreement.rate,
            human_pairs=agreement.pairs,
            human_votes=agreement.votes,
            human_agreement_decided=decided.rate,
            human_decided_pairs=decided.pairs,
            human_decided_votes=decided.votes,
            human_alpha=measured(alpha.alpha),
            human_alpha_low=measured(alpha.low),
            human_alpha_high=measured(alpha.high),
            human_alpha_pairs=alpha.units,
            human_alpha_ci_missing=alpha.missing,
        ))
    return HealthReport(tuple(out), tuple(reference), voters(votes), tuple(alphas))


def judge_health(
    records: Iterable[JudgementRecord],
    parse_failures: Mapping[str, int] | None = None,
    judges: Collection[str] | None = None,
    humans: Collection[str] | None = None,
) -> list[JudgeHealth]:
    """`health_report`'s judges alone."""
    return list(health_report(records, parse_failures, judges, humans).judges)
