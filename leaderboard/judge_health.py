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
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .judge_alpha import JudgeAlpha, VoteTable, human_alpha, judge_alphas, measured
from .types import OrderPolicy, Winner

HUMAN_PREFIX = "human/"


@dataclass(frozen=True)
class CallRecord:
    """One stored call: `first` the submission shown first (None when unknown), `winner`
    positional, `reminded` None when the call does not record it (imports)."""

    first: int | None
    winner: Winner
    reminded: bool | None = None


@dataclass(frozen=True)
class JudgementRecord:
    """One stored judgement: `outcome` relative to a; output lengths in characters when known;
    `consistent` and `order` as stored; `imported` when a file gave it (its calls, if any, are
    what the file said, not necessarily each order's)."""

    judge: str
    a_id: int
    b_id: int
    outcome: Winner
    calls: Sequence[CallRecord]
    a_length: int | None = None
    b_length: int | None = None
    consistent: bool = True
    order: OrderPolicy | None = None
    imported: bool = False


@dataclass(frozen=True)
class Agreement:
    """Agreement with human votes: the share (None without comparisons), pairs and votes compared."""

    rate: float | None
    pairs: int
    votes: int


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


@dataclass(frozen=True)
class HealthReport:
    """Every judge's health against one human reference set (`humans`, by name), and the
    agreement between that set's votes."""

    judges: tuple[JudgeHealth, ...]
    humans: tuple[str, ...]
    voters: VoterAgreement
    judge_alphas: tuple[JudgeAlpha, ...] = ()


def is_human(judge: str) -> bool:
    """Human verdicts are filed under `human/<name>` (`joust import battles --human`)."""
    return judge.startswith(HUMAN_PREFIX)


def share(hits: int, total: int) -> float | None:
    """hits / total, or None when there is nothing to count."""
    return hits / total if total else None


def relative(record: JudgementRecord, call: CallRecord) -> Winner | None:
    """A call's verdict relative to the record's a; None when its first answer is unknown."""
    if call.first == record.a_id:
        return call.winner
    if call.first == record.b_id:
        return call.winner.flipped()
    return None


@dataclass
class Counts:
    """What one judge's figures are shares of, summed over its records. Each rule of the module
    docstring is applied here once, per record, so counts can be added as records land (a running
    tally, `leaderboard.judge_health_tally`) and give what a computation from scratch gives."""

    judgements: int = 0
    calls: int = 0
    both_orders: int = 0  # both-order judgements: consistency's denominator
    consistent: int = 0
    positioned: int = 0  # calls with a winner and a known first answer
    first_won: int = 0
    ties: int = 0
    flagged: int = 0  # calls that record `reminded`
    reminded: int = 0
    sized: int = 0  # calls with a winner whose answers differ in length
    longer_won: int = 0

    def add(self, record: JudgementRecord) -> None:
        """Count one more record."""
        calls = counted_calls(record)
        self.judgements += 1
        self.calls += len(calls)
        agreed = orders_agreed(record)
        if agreed is not None:
            self.both_orders += 1
            self.consistent += agreed
        longer = None
        if record.a_length is not None and record.b_length is not None and record.a_length != record.b_length:
            longer = Winner.A if record.a_length > record.b_length else Winner.B
        for c in calls:
            if c.winner is Winner.TIE:
                self.ties += 1
            elif relative(record, c) is not None:
                self.positioned += 1
                self.first_won += c.winner is Winner.A
            if c.reminded is not None:
                self.flagged += 1
                self.reminded += bool(c.reminded)
            if longer is not None:
                winner = _call_winner(record, c, len(calls))
                if winner is not None and winner is not Winner.TIE:
                    self.sized += 1
                    self.longer_won += winner is longer

    @property
    def consistency(self) -> float | None:
        return share(self.consistent, self.both_orders)

    @property
    def first_position_win_rate(self) -> float | None:
        return share(self.first_won, self.positioned)

    @property
    def tie_rate(self) -> float | None:
        return share(self.ties, self.calls)

    @property
    def longer_wins_rate(self) -> float | None:
        return share(self.longer_won, self.sized)

    def parse_failure_rate(self, failed_matches: int = 0) -> float | None:
        return share(self.reminded + failed_matches, self.flagged + failed_matches)


def counted_calls(record: JudgementRecord) -> Sequence[CallRecord]:
    """The calls a record counts for: its own, or for an imported verdict stored without any,
    one call that is its stored verdict (position unknown), so an import's tie counts as one."""
    if record.calls or not record.imported:
        return record.calls
    return (CallRecord(first=None, winner=record.outcome),)


def orders_agreed(record: JudgementRecord) -> bool | None:
    """Whether the record's two orders agreed; None when it is not known to be a both-order
    judgement. Two calls that showed different answers first say it; else an imported verdict
    says it as stored, when it was stored inconsistent or with order policy `both`."""
    calls = record.calls
    if len(calls) == 2 and calls[0].first != calls[1].first:
        first, second = relative(record, calls[0]), relative(record, calls[1])
        if first is not None and second is not None:
            return first == second
    if record.imported and (not record.consistent or record.order is OrderPolicy.BOTH):
        return record.consistent
    return None


def counts_of(records: Iterable[JudgementRecord]) -> Counts:
    """The counts of `records` (of one judge, for its figures)."""
    counts = Counts()
    for r in records:
        counts.add(r)
    return counts


def consistency(records: Iterable[JudgementRecord]) -> float | None:
    """Share of both-order judgements whose two orders agree."""
    return counts_of(records).consistency


def first_position_win_rate(records: Iterable[JudgementRecord]) -> float | None:
    """Share of calls won by the answer shown first, among calls with a winner and a known position."""
    return counts_of(records).first_position_win_rate


def tie_rate(records: Iterable[JudgementRecord]) -> float | None:
    """Share of calls answering TIE."""
    return counts_of(records).tie_rate


def parse_failure_rate(records: Iterable[JudgementRecord], failed_matches: int = 0) -> float | None:
    """(reminded calls + matches failed unparseable) / (calls recording `reminded` + those matches)."""
    return counts_of(records).parse_failure_rate(failed_matches)


def _call_winner(record: JudgementRecord, call: CallRecord, calls: int) -> Winner | None:
    """Who won the call relative to a: from its position, or the judgement's own outcome when
    the position is unknown and the call is the judgement's only one (of `calls` counted)."""
    winner = relative(record, call)
    if winner is None and call.first is None and calls == 1:
        winner = record.outcome
    return winner


def longer_wins_rate(records: Iterable[JudgementRecord]) -> float | None:
    """Among calls with a winner and answers of different lengths, share won by the longer one."""
    return counts_of(records).longer_wins_rate


def pair_verdict(record: JudgementRecord) -> tuple[tuple[int, int], Winner]:
    """The unordered pair (smaller id first) and the outcome relative to its smaller id."""
    if record.a_id < record.b_id:
        return (record.a_id, record.b_id), record.outcome
    return (record.b_id, record.a_id), record.outcome.flipped()


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
