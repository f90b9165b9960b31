"""A judge's own figures (consistency, first-position win rate, tie rate, parse failure rate,
longer-wins rate): `Counts`, what they are shares of, and one function per figure over a judge's
records. `leaderboard.judge_health`'s docstring states the rules.

Apart from the agreement with humans (`leaderboard.judge_agreement`) because each count reads one
record of one judge alone, so counts add up record by record (`leaderboard.judge_health_tally`).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .judge_records import CallRecord, JudgementRecord, share
from .types import OrderPolicy, Winner


def relative(record: JudgementRecord, call: CallRecord) -> Winner | None:
    """A call's verdict relative to the record's a; None when its first answer is unknown."""
    if call.first == record.a_id:
        return call.winner
    if call.first == record.b_id:
        return call.winner.flipped()
    return None


@dataclass
class Counts:
    """What one judge's figures are shares of, summed over its records. Each rule of
    `leaderboard.judge_health`'s docstring is applied here once, per record, so counts can be added as records land (a running
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

