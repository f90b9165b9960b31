"""Judge panels: several judges asked about the same pairs, and one verdict made of theirs.

One judge has its own taste (length, the answer shown first, its own family's style); a panel of
judges from different families averages some of that away (Verga et al. 2024, "Replacing Judges
with Juries"). A panel is a judge of its own, `panel/<name>`, so its board is an ordinary
one-judge board and judge health lists it beside its members, whose verdicts stay their own.

Aggregations:
- `majority`: per pair, the verdict more than half of the members' consolidated verdicts name
  (A, B or TIE); a tie when none has a strict majority. With two members a disagreement is
  therefore always a tie; with three, A, A, TIE gives A and A, B, TIE a tie.
- `separate`: no verdict of its own per pair; the panel's board pools the members' verdicts,
  each member's verdict counted as one battle (a pair judged by three members is three battles).

The name, when not given, is derived from the sorted member specs joined by "+", so the same
members in any order name the same panel.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from .types import Winner

PANEL_PREFIX = "panel/"
_MEMBER = re.compile(r"^[A-Za-z0-9_.-]+/\S+$")
_NAME = re.compile(r"^[A-Za-z0-9_.+:/-]{1,200}$")


class Aggregation(str, Enum):
    """How a panel makes its verdicts of its members' (module docstring)."""

    MAJORITY = "majority"
    SEPARATE = "separate"


class PanelError(ValueError):
    """A panel that cannot be: no members, a member twice, a malformed spec or name, an
    unknown aggregation. The message names the problem (the API answers it with a 422)."""


@dataclass(frozen=True)
class Panel:
    """Member judge specs (sorted), how their verdicts combine, and the panel's name."""

    members: tuple[str, ...]
    aggregation: Aggregation
    name: str

    @property
    def judge(self) -> str:
        """The judge the panel's own verdicts and board are filed under."""
        return PANEL_PREFIX + self.name


def is_panel(judge: str) -> bool:
    return judge.startswith(PANEL_PREFIX)


def derived_name(members: Iterable[str]) -> str:
    """The name of a panel nobody named: its sorted member specs joined by "+"."""
    return "+".join(sorted(members))


def panel_of(judges: Sequence[str], aggregation: str | Aggregation = Aggregation.MAJORITY,
             name: str | None = None) -> Panel:
    """A checked panel; `PanelError` naming what is wrong."""
    if isinstance(judges, str) or not isinstance(judges, Sequence):
        raise PanelError(f"'judges' must be a list of judge specs (provider/model), got {judges!r}")
    if not judges:
        raise PanelError("'judges' is empty: a panel needs at least one judge")
    for judge in judges:
        if not isinstance(judge, str) or not _MEMBER.match(judge):
            raise PanelError(f"'judges': {judge!r} is not a judge spec (provider/model)")
        if is_panel(judge):
            raise PanelError(f"'judges': {judge!r} is a panel; a panel's members are judges")
    repeated = sorted(j for j, n in Counter(judges).items() if n > 1)
    if repeated:
        raise PanelError(f"'judges' names {', '.join(map(repr, repeated))} more than once")
    try:
        how = Aggregation(aggregation)
    except ValueError:
        known = ", ".join(a.value for a in Aggregation)
        raise PanelError(f"'aggregation' {aggregation!r} is unknown (known: {known})") from None
    if name is not None and (not isinstance(name, str) or not _NAME.match(name)):
        raise PanelError(f"'panel' name {name!r} must be 1-200 letters, digits or . _ + : / -")
    return Panel(tuple(sorted(judges)), how, name if name is not None else derived_name(judges))


def majority(outcomes: Iterable[Winner]) -> Winner:
    """The verdict a strict majority of `outcomes` names, else a tie (module docstring)."""
    counted = Counter(Winner(o) for o in outcomes)
    total = sum(counted.values())
    if not total:
        raise ValueError("a majority of no verdicts")
    verdict, votes = counted.most_common(1)[0]
    return verdict if 2 * votes > total else Winner.TIE


Pair = Hashable
"""A pair's key; its verdicts are relative to the same side in every mapping passed together."""


def panel_verdicts(members: Sequence[Mapping[Pair, Winner]], *, complete: bool = True) -> dict[Pair, Winner]:
    """Per pair, the majority of the members' verdicts: on the pairs every member judged
    (`complete`, as a tournament resolves them), or on those at least two members judged."""
    pairs: Counter[Pair] = Counter(p for m in members for p in m)
    needed = len(members) if complete else min(2, len(members))
    return {p: majority(m[p] for m in members if p in m) for p, n in pairs.items() if n >= needed}


@dataclass(frozen=True)
class Agreement:
    """How often a judge names the reference's verdict: `rate` over `votes` comparisons (one per
    reference vote) on `pairs` pairs; None when there is nothing to compare."""

    rate: float | None
    pairs: int
    votes: int


def agreement(verdicts: Mapping[Pair, Winner], reference: Mapping[Pair, Counter[Winner]], *,
              decided: bool = False) -> Agreement:
    """Share of (verdict, reference vote) comparisons on the same pair that name the same
    verdict, a tie agreeing only with a tie; `decided` keeps only comparisons where both name a
    winner (ties excluded)."""
    agree = total = pairs = 0
    for pair, verdict in verdicts.items():
        votes = reference.get(pair)
        if not votes or (decided and verdict is Winner.TIE):
            continue
        size = sum(n for w, n in votes.items() if not decided or w is not Winner.TIE)
        if not size:
            continue
        pairs += 1
        total += size
        agree += votes[verdict]
    return Agreement(agree / total if total else None, pairs, total)


def as_votes(verdicts: Mapping[Pair, Winner]) -> dict[Pair, Counter[Winner]]:
    """One judge's verdicts as a reference of one vote per pair (to compare a member with its panel)."""
    return {p: Counter({w: 1}) for p, w in verdicts.items()}


def pooled(members: Mapping[str, Iterable[tuple[str, str, Winner]]]) -> list[tuple[str, str, Winner]]:
    """The battles of a `separate` panel's board: every member's battles, each one battle."""
    return [battle for judge in sorted(members) for battle in members[judge]]
