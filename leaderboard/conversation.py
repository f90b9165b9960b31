"""Conversations: an output that is a list of turns (as MT-Bench's two), and how it is keyed.

A conversation is judged as a whole, so its judgement key covers every turn (`canonical`), while
the board's length column and length bias count what the model wrote: the assistant turns
(`assistant_text`, the text the store keeps as the submission's `output`).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ROLES = ("user", "assistant")
TURN_SEPARATOR = "\n\n"  # between the assistant turns of `assistant_text`


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation: who spoke (`user` or `assistant`) and what they said."""

    role: str
    content: str


class TurnsError(ValueError):
    """A conversation joust cannot judge: a bad role, an empty turn, no user or assistant turn."""


def turns_of(raw: Sequence[Any]) -> tuple[Turn, ...]:
    """Turns from `[{"role", "content"}, ...]`; TurnsError naming the first bad turn.

    A conversation opens with a user turn and holds at least one assistant turn."""
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence) or not raw:
        raise TurnsError("a conversation is a non-empty list of {role, content} turns")
    turns = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or set(item) != {"role", "content"}:
            raise TurnsError(f"turn {i + 1}: expected an object with exactly 'role' and 'content'")
        role, content = item["role"], item["content"]
        if role not in ROLES:
            raise TurnsError(f"turn {i + 1}: role {role!r} is not one of {', '.join(map(repr, ROLES))}")
        if not isinstance(content, str) or not content.strip():
            raise TurnsError(f"turn {i + 1}: content must be non-empty text")
        turns.append(Turn(role, content))
    if turns[0].role != "user":
        raise TurnsError("turn 1: a conversation opens with a user turn")
    if not any(t.role == "assistant" for t in turns):
        raise TurnsError("a conversation needs at least one assistant turn")
    return tuple(turns)


def canonical(turns: Sequence[Turn]) -> str:
    """The conversation as one stable text (JSON): what its hash and judgement key are made of."""
    return json.dumps([[t.role, t.content] for t in turns], ensure_ascii=False, separators=(",", ":"))


def from_canonical(text: str) -> tuple[Turn, ...]:
    """The turns `canonical` wrote (as the store keeps them)."""
    return tuple(Turn(role, content) for role, content in json.loads(text))


def as_dicts(turns: Sequence[Turn]) -> list[dict[str, str]]:
    """The turns as the API shows them."""
    return [{"role": t.role, "content": t.content} for t in turns]


def assistant_text(turns: Sequence[Turn]) -> str:
    """What the model wrote: its turns, a blank line between them (the output's length)."""
    return TURN_SEPARATOR.join(t.content for t in turns if t.role == "assistant")


def first_question(turns: Sequence[Turn]) -> str:
    """The conversation's question: its first user turn."""
    return turns[0].content
