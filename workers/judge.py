"""The seam between joust and any LLM judge: one protocol, one reply type, one shared dialogue.

A provider implements `Judge.compare` and nothing else is required of it. Chat-style providers
get the prompt, the verdict parsing and the single reminder re-ask for free by handing
`compare_with_reminder` a `Send` function that performs one provider call; they only translate
their SDK's errors into `workers.errors`. Exposing that function as `complete(system, messages)`
lets the other criteria sets (`workers.criteria`) and the tie analysis run prompts of their
own through `ask_with_reminder`, each with its own parser.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

from leaderboard.types import Call, Winner
from workers.errors import PermanentJudgeError, VerdictParseError
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
    """Anything that can say which of two responses to a question is better.

    Optional beyond `compare`: `complete(system, messages) -> Completion`, one free-form call
    (a `Send`), which the chat providers expose and the criteria sets other than `overall`
    need (`completer`); `score_compqa(question, answer)` for a judge with rubric rules of its
    own (the offline judge).
    """

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


T = TypeVar("T")


async def gather_settled(*aws: Awaitable[T]) -> list[T]:
    """`asyncio.gather`, except that when one raises, the others still run to their end before
    the first error is raised: a call already sent is paid whatever happens to the match, so
    the job must see it finish (its usage counted, a score it earned kept) rather than leave it
    running on the worker's loop after the match is recorded as failed."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


Message = dict[str, str]
Send = Callable[[str, list[Message]], Awaitable[Completion]]
"""One provider call: (system prompt, chat messages as {"role", "content"}) → Completion."""


@dataclass(frozen=True)
class Answer(Generic[T]):
    """What `ask_with_reminder` read: the parsed value, the reply it came from, and the usage
    of every call it took (two when the reminder was needed, which `reminded` records)."""

    value: T
    raw: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    reminded: bool = False


Reminder = str | Callable[[VerdictParseError], str]
"""The follow-up turn after an unreadable reply: fixed text, or text naming the parse problem."""


async def ask_with_reminder(
    send: Send, system: str, user: str, parse: Callable[[str], T], reminder: Reminder, *, what: str = "verdict"
) -> Answer[T]:
    """Ask once; if `parse` raises `VerdictParseError` on the reply, re-ask once with the
    reminder as a follow-up turn. Any prompt, any reply shape: the parser decides.

    Raises `VerdictParseError` (with both replies) when the second reply is unreadable too.
    """
    messages: list[Message] = [{"role": "user", "content": user}]
    completion = await send(system, messages)
    try:
        return _answer(parse(completion.text), completion, completion)
    except VerdictParseError as exc:
        follow_up = reminder if isinstance(reminder, str) else reminder(exc)
    # An empty assistant turn is rejected by chat APIs; keep the turn but say it was empty.
    messages = messages + [
        {"role": "assistant", "content": completion.text.strip() or "(empty reply)"},
        {"role": "user", "content": follow_up},
    ]
    retry = await send(system, messages)
    try:
        value = parse(retry.text)
    except VerdictParseError as exc:
        raise VerdictParseError(
            f"the judge gave no readable {what}, even after the reminder: {exc}",
            raw=retry.text,
            replies=(completion.text, retry.text),
            input_tokens=completion.input_tokens + retry.input_tokens,
            output_tokens=completion.output_tokens + retry.output_tokens,
        ) from exc
    return _answer(value, retry, completion)


async def compare_with_reminder(send: Send, question: str, first: str, second: str) -> JudgeReply:
    """Ask once; if the reply holds no verdict, re-ask once with `REMINDER` as a follow-up turn.

    Raises `VerdictParseError` (with both replies) when the second reply is unreadable too.
    """
    return await verdict_of(send, *build_pairwise_prompt(question, first, second))


async def verdict_of(send: Send, system: str, user: str) -> JudgeReply:
    """A pairwise verdict to a built prompt, asked as `compare_with_reminder` asks (the pairwise
    prompt with a reference or conversations, `workers.prompts.build_shown_prompt`, comes here)."""
    answer = await ask_with_reminder(send, system, user, parse_verdict, REMINDER)
    winner, reason = answer.value
    return JudgeReply(
        winner=winner,
        reason=reason,
        raw=answer.raw,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        latency_ms=answer.latency_ms,
        reminded=answer.reminded,
    )


def _answer(value: T, last: Completion, first: Completion) -> Answer[T]:
    both = [first] if last is first else [first, last]
    return Answer(
        value=value,
        raw=last.text,
        input_tokens=sum(c.input_tokens for c in both),
        output_tokens=sum(c.output_tokens for c in both),
        latency_ms=sum(c.latency_ms for c in both),
        reminded=last is not first,
    )


def completer(judge: object, spec: str, criteria: str) -> Send:
    """The judge's free-form call (`complete(system, messages)`), which every criteria set
    other than `overall` needs; `PermanentJudgeError` naming why when the judge has none."""
    complete = getattr(judge, "complete", None)
    if complete is None:
        raise PermanentJudgeError(
            f"the judge {spec!r} cannot judge criteria {criteria!r}: it answers no free-form prompt "
            "(an offline judge applies its fixed rules only)"
        )
    return complete
