"""The human reference set judge health measures judges against, as `?humans=` names it: human
judges by name or by pattern, any number of them.

Why patterns: a real reference panel is dozens of voters (MT-Bench's 58 experts). A list of
their names is long, and a request line has a limit, while `human/expert_*` names all of them
in a few characters, including those who vote later.

A value holds names separated by commas (spaces around each ignored), each `human/<voter>`. In
a name, `*` stands for any run of characters (none included) and makes it a pattern: `human/*`
is every human judge. `*` is the only wildcard: `?` and `[` are themselves, as in voter names. A
voter whose own name holds `*` is matched by it as by any pattern (`POST /api/votes` takes such
names; imports may carry them).

Refusals, each naming what is wrong: a name that is not `human/...` (`NotHuman`); a name that
no human judge with votes has, or a pattern that matches none of them (`NoVotes`).
"""
from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from .judge_health import HUMAN_PREFIX

WILDCARD = "*"
SHOWN = 10  # names listed in a refusal


class NotHuman(ValueError):
    """A name in the reference set that is not a human judge's (`human/<voter>`)."""


class NoVotes(LookupError):
    """A named human judge without votes, or a pattern that matches no human judge with votes."""


def names_of(values: Iterable[str]) -> tuple[str, ...]:
    """The names and patterns in `values` (each a comma-separated list), in order, without
    repeats; NotHuman naming the first that is not `human/<voter>`."""
    found: dict[str, None] = {}
    for value in values:
        for part in value.split(","):
            name = part.strip(" ")
            if not name.startswith(HUMAN_PREFIX) or name == HUMAN_PREFIX or "\x00" in name:
                raise NotHuman(f"{name[:80]!r} is not a human judge: name human judges as {HUMAN_PREFIX}<voter>, "
                               f"separated by commas, or by a pattern such as {HUMAN_PREFIX}expert_*")
            found[name] = None
    return tuple(found)


def is_pattern(name: str) -> bool:
    return WILDCARD in name


def matcher(pattern: str) -> re.Pattern[str]:
    """The regular expression a pattern stands for: `*` any run of characters, the rest itself."""
    return re.compile(".*".join(re.escape(piece) for piece in pattern.split(WILDCARD)), re.DOTALL)


def chosen(names: Collection[str], known: Collection[str]) -> frozenset[str]:
    """The human judges `names` choose among `known` (those with votes): each plain name, and every
    judge a pattern matches. NoVotes for a plain name not known or a pattern matching none."""
    voters = sorted(known)
    listed = ", ".join(voters[:SHOWN]) + (f" and {len(voters) - SHOWN} more" if len(voters) > SHOWN else "")
    reason = f"the human judges are {listed}" if voters else "no human votes are stored"
    plain = [name for name in names if not is_pattern(name)]
    unknown = [name for name in plain if name not in set(voters)]
    if unknown:
        named = ", ".join(name[:80] for name in unknown[:SHOWN]) + (" ..." if len(unknown) > SHOWN else "")
        raise NoVotes(f"no votes by {named}: {reason}")
    picked = set(plain)
    for pattern in (name for name in names if is_pattern(name)):
        regex = matcher(pattern)
        matched = [voter for voter in voters if regex.fullmatch(voter)]
        if not matched:
            raise NoVotes(f"no human judge matches {pattern[:80]}: {reason}")
        picked.update(matched)
    return frozenset(picked)
