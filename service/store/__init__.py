"""The store: the only package that talks to the database.

Every write is one transaction, so a request either stores all it asked for or nothing, and
writers take turns on both backends: on SQLite, write transactions begin IMMEDIATE so that the
API, the workers and the scheduler (three processes on one file) queue for the write lock instead
of failing half-way; on PostgreSQL, each first takes one advisory lock (see `base`).

Exceptions: `Conflict` (same key, different content: the API answers 409), `NotFound` and
`RetryRefused` (a run still active or with nothing failed: 409), `StoreUnavailable` (the database
did not answer; nothing changed: the API answers 503, workers wait for it).
"""
from __future__ import annotations

from .answers import Answers
from .api_keys import ADMIN_NAME, WRITER, ApiKeys, Scope, StoredKey
from .base import (
    ACTIVE,
    Conflict,
    MatchContext,
    NewJudgement,
    NewSubmission,
    NotFound,
    ReferenceMismatch,
    RetryRefused,
    StoreFull,
    StoreUnavailable,
)
from .batch_replays import BatchReplays, NeededRequest, StoredRequest
from .batches import (
    BatchCounts,
    Batches,
    BatchResult,
    BatchRow,
    BatchStatus,
    OpenedBatch,
    Outgoing,
    RequestStatus,
    Settled,
)
from .catalog import Catalog, OutputLength, TournamentName
from .exports import Exports
from .failures import FailedMatch, FailureGroup, FailureReport, Failures
from .gauges import Gauges, JudgeTotals
from .imports import Imports
from .judge_health import Health
from .judgement_lists import JudgementLists, JudgementQuery, JudgementSummary, Result, Shown, SideSummary
from .judgements import Judgements
from .marks import Marks, PageMark
from .matches import Matches
from .panels import Panels
from .rounds import Rounds
from .rows import JudgementDetail, JudgementSide, KeptScore, StoredJudgement, StoredSubmission
from .runs import RunList, RunRow, Runs
from .scores import Scores
from .shortage import Shortage, database_shortage, redis_full_reason, redis_shortage
from .submissions import Submissions
from .tournaments import Tournaments
from .views import Views
from .vote_pairs import VotePair, VotePairs
from .votes import StoredVote, VoteChanged, Votes

__all__ = [
    "ACTIVE", "ADMIN_NAME", "WRITER", "ApiKeys", "Scope", "StoredKey", "BatchCounts", "BatchResult",
    "BatchRow", "BatchStatus", "Gauges", "JudgeTotals", "Conflict", "FailedMatch", "FailureGroup",
    "FailureReport", "MatchContext", "NeededRequest", "NewJudgement", "NewSubmission", "NotFound",
    "OpenedBatch", "ReferenceMismatch", "Outgoing", "PageMark", "RequestStatus", "RetryRefused", "StoreFull",
    "StoreUnavailable", "Shortage", "database_shortage", "redis_full_reason", "redis_shortage", "RunList",
    "RunRow", "Settled", "Store", "OutputLength", "TournamentName", "StoredRequest", "StoredVote",
    "VoteChanged", "VotePair", "JudgementLists", "JudgementQuery", "JudgementSummary", "Result", "Shown",
    "SideSummary", "JudgementDetail", "JudgementSide", "KeptScore", "StoredJudgement", "StoredSubmission",
]


class Store(Submissions, Tournaments, Matches, Panels, Judgements, JudgementLists, Views, Imports, Exports, Scores, Health, Rounds,
            Batches, BatchReplays, Votes, VotePairs, ApiKeys, Gauges, Catalog, Runs, Failures, Marks, Answers):
    """Submissions, tournaments, matches, judgements, scores, batch requests, human votes and
    the pairs put to voters, in SQLite or PostgreSQL."""
