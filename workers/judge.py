"""The seam between joust and any LLM judge: one protocol, one reply type, one shared dialogue.

A provider implements `Judge.compare` and nothing else is required of it. Chat-style providers
get the prompt, the verdict parsing and the single reminder re-ask for free by handing
`compare_with_reminder` a `Send` function that performs one provider call; they only translate
their SDK's errors into `workers.errors`.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from leaderboard.types import Call, Winner
from workers.errors import VerdictParseError
from workers.prompts import REMINDER, build_pairwise_prompt
from workers.verdict import parse_verdict


@dataclass(frozen=True)
class JudgeReply:
    """One pairwise verdict. `winner` is positional: A means the response shown first won.

    Tokens and latency add up every provider call the verdict took (two when the reminder was
    needed, which `reminded` records for the judge-health statistics). `raw` is the reply the
    verdict was read from.
    """

    winner: Winner
    reason: str
    raw: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    reminded: bool = False

    def as_call(self, first: int) -> Call:
        """This reply as the `Call` record of a match, given the submission shown first."""
        return Call(
            first=first,
            winner=self.winner,
            reason=self.reason,
            raw=self.raw,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            latency_ms=self.latency_ms,
        )


@runtime_checkable
class Judge(Protocol):
    """Anything that can say which of two responses to a question is better."""

    async def compare(self, question: str, first: str, second: str) -> JudgeReply:
        """Judge `first` (shown as Response A) against `second` (Response B).

        Raises `TransientJudgeError`, `PermanentJudgeError` or `VerdictParseError`.
        """
        ...


@dataclass(frozen=True)
class Completion:
    """The outcome of one provider call: the reply text, its usage and its wall time."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0


Message = dict[str, str]
Send = Callable[[str, list[Message]], Awaitable[Completion]]
"""One provider call: (system prompt, chat messages as {"role", "content"}) → Completion."""


async def compare_with_reminder(send: Send, question: str, first: str, second: str) -> JudgeReply:
    """Ask once; if the reply holds no verdict, re-ask once with `REMINDER` as a follow-up turn.

    Raises `VerdictParseError` (with both replies) when the second reply is unreadable too.
    """
    system, user = build_pairwise_prompt(question, first, second)
    messages: list[Message] = [{"role": "user", "content": user}]
    completion = await send(system, messages)
    try:
        winner, reason = parse_verdict(completion.text)
        return _reply(winner, reason, completion, completion)
    except VerdictParseError:
        pass
    # An empty assistant turn is rejected by chat APIs; keep the turn but say it was empty.
    messages = messages + [
        {"role": "assistant", "content": completion.text.strip() or "(empty reply)"},
        {"role": "user", "content": REMINDER},
    ]
    retry = await send(system, messages)
    try:
        winner, reason = parse_verdict(retry.text)
    except VerdictParseError as exc:
        raise VerdictParseError(
            "the judge gave no readable verdict, even after the reminder",
            raw=retry.text,
            replies=(completion.text, retry.text),
        ) from exc
    return _reply(winner, reason, retry, completion)


def _reply(winner: Winner, reason: str, last: Completion, first: Completion) -> JudgeReply:
    both = [first] if last is first else [first, last]
    return JudgeReply(
        winner=winner,
        reason=reason,
        raw=last.text,
        input_tokens=sum(c.input_tokens for c in both),
        output_tokens=sum(c.output_tokens for c in both),
        latency_ms=sum(c.latency_ms for c in both),
        reminded=last is not first,
    )
