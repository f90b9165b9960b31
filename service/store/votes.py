"""Human votes: the submissions they name, and votes filed as resolved judgements.

A vote gets what an imported judgement gets (`store.imports`): a judgement under its key, and a
match already resolved with it, stamped from the `resolved` counter and `counted`, so the boards
and judge health see it on their next request. The matches of one voter's votes live in one
tournament of mode `import` ("votes of human/<voter>", made by the voter's first vote): a voter
votes once per pair, so a pair never repeats in it.
"""
from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from leaderboard.keys import content_hash
from leaderboard.spec import RunSpec
from leaderboard.types import MatchStatus, Mode, Submission, TournamentStatus, Winner
from leaderboard.votes import CRITERIA, TEMPLATE_VERSION, Ballot, Vote

from . import schema as s
from .api_keys import WRITER
from .base import Conflict, Database, submission_of

CHUNK = 500  # values per IN (...) clause: well under every backend's bound-parameter limit
SOURCE = "POST /api/votes"
SubmissionKey = tuple[str, str, str]  # (question_id, model, scenario)


class VoteChanged(Conflict):
    """Vote `index` of a batch gives a different verdict on a pair its voter already voted on
    (stored, or earlier in the batch)."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True)
class StoredVote:
    """Where a vote landed: its judgement's id, its judge, and False when it was already stored."""

    id: int
    judge: str
    created: bool


def _chunks(values: Sequence) -> Iterator[Sequence]:
    for start in range(0, len(values), CHUNK):
        yield values[start:start + CHUNK]


def votes_tournament_name(judge: str) -> str:
    return f"votes of {judge}"


class Votes(Database):
    """The submissions votes name, and votes stored all or nothing."""

    def submissions_named(
        self, ids: Collection[int], keys: Collection[SubmissionKey]
    ) -> tuple[dict[int, Submission], dict[SubmissionKey, Submission]]:
        """The submissions among `ids` and `keys` that exist, by id and by key (one read)."""
        t = s.submissions
        by_id: dict[int, Submission] = {}
        by_key: dict[SubmissionKey, Submission] = {}
        wanted = set(keys)
        with self._read() as conn:
            for chunk in _chunks(sorted(set(ids))):
                by_id.update((r.id, submission_of(r)) for r in conn.execute(select(t).where(t.c.id.in_(chunk))))
            for chunk in _chunks(sorted({k[0] for k in wanted})):
                for r in conn.execute(select(t).where(t.c.question_id.in_(chunk))):
                    if (r.question_id, r.model, r.scenario) in wanted:
                        by_key[(r.question_id, r.model, r.scenario)] = submission_of(r)
        return by_id, by_key

    def add_votes(self, votes: Sequence[Vote]) -> list[StoredVote]:
        """Store checked votes (`leaderboard.votes.check_vote`) in one transaction, in order: one
        per voter and pair; the same vote again is the stored one (`created` False). Raises
        VoteChanged, storing nothing, when a vote differs from its voter's vote on the pair."""
        with self._write() as conn:
            now = self._clock()
            stored = self._stored_ballots(conn, [v.key for v in votes])
            first_of: dict[str, int] = {}  # key -> index of the vote in this batch that creates it
            for index, vote in enumerate(votes):
                if vote.key in stored:
                    where, ballot = f"vote {stored[vote.key][0]}", stored[vote.key][1]
                elif vote.key in first_of:
                    where, ballot = "earlier in this batch", votes[first_of[vote.key]].ballot()
                else:
                    first_of[vote.key] = index
                    continue
                if ballot != vote.ballot():
                    low, high = ballot.pair
                    raise VoteChanged(index, f"{vote.judge} already voted on submissions {low} and {high} "
                                             f"({where}: {ballot.describe()}); a vote is final")
            new = [votes[i] for i in first_of.values()]
            ids = self._insert(conn, new, now) if new else {}
            ids.update((key, id_) for key, (id_, _) in stored.items())
        return [StoredVote(ids[v.key], v.judge, first_of.get(v.key) == i) for i, v in enumerate(votes)]

    def _stored_ballots(self, conn: Connection, keys: Sequence[str]) -> dict[str, tuple[int, Ballot]]:
        j = s.judgements
        found: dict[str, tuple[int, Ballot]] = {}
        for chunk in _chunks(sorted(set(keys))):
            query = select(j.c.key, j.c.id, j.c.a_id, j.c.b_id, j.c.outcome, j.c.calls).where(j.c.key.in_(chunk))
            rows = conn.execute(query)
            for r in rows:
                calls = json.loads(r.calls)
                found[r.key] = (r.id, Ballot.of(r.a_id, r.b_id, Winner(r.outcome), calls[0] if calls else {}))
        return found

    def _insert(self, conn: Connection, votes: Sequence[Vote], now: float) -> dict[str, int]:
        """Judgements, then one resolved, counted match each in its voter's tournament; ids by key."""
        j = s.judgements
        conn.execute(j.insert(), [
            {"key": v.key, "judge": v.judge, "criteria": CRITERIA, "template_version": TEMPLATE_VERSION,
             "a_id": v.a.id, "b_id": v.b.id, "a_hash": content_hash(v.a.output), "outcome": v.outcome.value,
             "consistent": True, "calls": json.dumps([v.call()]), "input_tokens": 0, "output_tokens": 0,
             "cost_usd": 0.0, "created_at": now, "created_by": WRITER.get()}
            for v in votes
        ])
        ids: dict[str, int] = {}
        for chunk in _chunks([v.key for v in votes]):
            ids.update((r.key, r.id) for r in conn.execute(select(j.c.key, j.c.id).where(j.c.key.in_(chunk))))
        tournaments = {judge: self._voter_tournament(conn, judge, now) for judge in sorted({v.judge for v in votes})}
        first_seq = _reserve_seq(conn, len(votes))
        conn.execute(s.matches.insert(), [
            {"tournament_id": tournaments[v.judge], "a_id": v.a.id, "b_id": v.b.id, "status": MatchStatus.DONE, "attempts": 0,
             "judgement_id": ids[v.key], "outcome": v.outcome.value, "consistent": True, "enqueued_at": now,
             "started_at": now, "finished_at": now, "seq": first_seq + offset, "counted": True}
            for offset, v in enumerate(votes)
        ])
        return ids

    def _voter_tournament(self, conn: Connection, judge: str, now: float) -> int:
        """The tournament holding `judge`'s votes, made on its first vote; marked finished now."""
        t = s.tournaments
        name = votes_tournament_name(judge)
        rows = conn.execute(select(t.c.id, t.c.spec).where(t.c.name == name, t.c.mode == Mode.IMPORT.value,
                                                          t.c.parent_id.is_(None)).order_by(t.c.id))
        for r in rows:
            spec = RunSpec.from_json(r.spec)
            if spec.source == SOURCE and spec.judge == judge:
                conn.execute(update(t).where(t.c.id == r.id).values(finished_at=now))
                return int(r.id)
        spec = RunSpec(judge=judge, mode=Mode.IMPORT, criteria=CRITERIA, source=SOURCE)
        inserted = conn.execute(t.insert().values(
            name=name, spec=spec.to_json(), mode=spec.mode.value, status=TournamentStatus.DONE, created_at=now, started_at=now,
            finished_at=now,
        )).inserted_primary_key
        assert inserted is not None
        return int(inserted[0])


def _reserve_seq(conn: Connection, n: int) -> int:
    """Take n consecutive resolve sequence numbers at once (moving the boards' revision); the first."""
    c = s.counters
    conn.execute(update(c).where(c.c.name == "resolved").values(value=c.c.value + n))
    return int(conn.execute(select(c.c.value).where(c.c.name == "resolved")).scalar_one()) - n + 1
