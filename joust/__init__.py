"""joust's Python client: submit outputs from a DataFrame, start and follow tournaments, and
read boards, judgements and judge health back as DataFrames.

    from joust import Client
    client = Client("http://127.0.0.1:8000", api_key=KEY)
    ids = client.submit(df)                       # question, model, scenario, output columns
    run = client.wait(client.tournament(judge="anthropic/claude-sonnet-4-5"))
    board = client.leaderboard(by="model", tournament=run)

It talks to the API over HTTP only and imports none of the service's packages.
"""
from __future__ import annotations

from .client import Client, TournamentRef
from .errors import (
    AuthError,
    Conflict,
    Invalid,
    JoustError,
    NotFound,
    ServerError,
    TooLarge,
    Unreachable,
    WaitTimeout,
)
from .types import (
    DryRun,
    Flag,
    Judgement,
    Side,
    Submission,
    SubmissionRef,
    Tournament,
    TournamentStatus,
    Verdict,
    Vote,
)

__all__ = [
    "AuthError", "Client", "Conflict", "DryRun", "Flag", "Invalid", "JoustError", "Judgement", "NotFound", "ServerError",
    "Side", "Submission", "SubmissionRef", "TooLarge", "Tournament", "TournamentRef", "TournamentStatus", "Unreachable",
    "Verdict", "Vote", "WaitTimeout",
]  # fmt: skip
