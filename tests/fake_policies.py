"""What the fake Anthropic server answers: reply policies, `decide(system, user_turns) -> text`.

`prefer(ranking)` plants a known ranking for end-to-end tests: generator outputs carry a
`[model]` marker, and the policy reads the `<response_a>` / `<response_b>` blocks built by
workers.prompts (the way a judge would) and prefers the better-ranked marker.
"""
from __future__ import annotations

import graphlib
import itertools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from workers.criteria.compqa_prompt import ANSWER_TAG
from workers.criteria.factsim_prompt import DOCUMENT_TAG
from workers.prompts import RESPONSE_A_TAG, RESPONSE_B_TAG

Decide = Callable[[str, list[str]], str]
"""(system prompt, texts of the user turns in order) → the assistant's reply text."""


def verdict_json(winner: str, reason: str = "One response answers the question better.") -> str:
    """A well-formed verdict reply."""
    return json.dumps({"winner": winner, "reason": reason})


def always(winner: str = "A") -> Decide:
    """Always the same verdict: "A" models a judge with total first-position bias."""
    text = verdict_json(winner, f"Always {winner}.")
    return lambda system, users: text


def malformed(text: str = "Both responses have merits; it is hard to say.") -> Decide:
    """A reply with no verdict in it, every time."""
    return lambda system, users: text


def block(user_text: str, tag: str) -> str | None:
    """The content of the `<tag>` block of a prompt built by workers.prompts, or None."""
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", user_text, re.DOTALL)
    return match.group(1) if match else None


def parse_ranking(chains: Sequence[str]) -> list[str]:
    """["model-x>model-y", "model-y>model-z"] → ["model-x", "model-y", "model-z"] (best first)."""
    graph: dict[str, set[str]] = {}
    for chain in chains:
        names = [name.strip() for name in chain.split(">")]
        if any(not name for name in names):
            raise ValueError(f"bad preference chain {chain!r}: use 'better>worse>...'")
        for better, worse in itertools.pairwise(names):
            graph.setdefault(worse, set()).add(better)
        for name in names:
            graph.setdefault(name, set())
    return list(graphlib.TopologicalSorter(graph).static_order())


def rank_of(text: str, ranking: Sequence[str]) -> int:
    """Index of the best `[name]` marker in `text`; len(ranking) when it carries none."""
    for index, name in enumerate(ranking):
        if f"[{name}]" in text:
            return index
    return len(ranking)


def prefer(ranking: Sequence[str]) -> Decide:
    """Prefer the response whose `[model]` marker ranks higher (best first); equal ranks tie.

    Unmarked responses rank below every marked one. Reads the first user turn, so the reminder
    re-ask gets the same answer.
    """
    order = list(ranking)

    def decide(system: str, users: list[str]) -> str:
        first = block(users[0], RESPONSE_A_TAG) if users else None
        second = block(users[0], RESPONSE_B_TAG) if users else None
        if first is None or second is None:
            return "I could not find two responses to compare."
        a, b = rank_of(first, order), rank_of(second, order)
        if a == b:
            return verdict_json("TIE", "Both responses are equally good.")
        return verdict_json("A" if a < b else "B", "It ranks higher.")

    return decide


DIMENSIONS = ("accuracy", "completeness", "clarity", "conciseness", "overall")
RUBRIC_MAX = {n: (2 if 9 <= n <= 12 else 1) for n in range(1, 16)}


def dimension_verdicts(
    ranking: Sequence[str], *, per_dimension: dict[str, Sequence[str]] | None = None,
    first_wins: Sequence[str] = (),
) -> Decide:
    """Five verdicts per reply (the `dimensions` criteria set): on each dimension the response
    whose `[model]` marker ranks higher in that dimension's ranking (`per_dimension`, else
    `ranking`) wins; on the dimensions of `first_wins` the response shown first always wins
    (a judge position-biased on those only)."""
    rankings = {name: list((per_dimension or {}).get(name, ranking)) for name in DIMENSIONS}

    def decide(system: str, users: list[str]) -> str:
        first = block(users[0], RESPONSE_A_TAG) if users else None
        second = block(users[0], RESPONSE_B_TAG) if users else None
        if first is None or second is None:
            return "I could not find two responses to compare."
        verdicts: dict[str, str] = {}
        for name in DIMENSIONS:
            a, b = rank_of(first, rankings[name]), rank_of(second, rankings[name])
            verdicts[name] = "A" if name in first_wins or a < b else "B" if b < a else "TIE"
        return json.dumps({**verdicts, "reason": "Compared dimension by dimension."})

    return decide


def rubric_points(total: int) -> dict[str, int]:
    """A rubric score dict ({"1": .., "15": ..}) whose points add up to `total` (0-19),
    filling the criteria in order."""
    points, left = {}, total
    for n, most in RUBRIC_MAX.items():
        points[str(n)] = min(most, left)
        left -= points[str(n)]
    if left:
        raise ValueError(f"a rubric total is at most {sum(RUBRIC_MAX.values())}, not {total}")
    return points


def rubric_scores(totals: dict[str, int], default: int = 0) -> Decide:
    """A rubric judge (the `compqa` criteria set): the answer in the `<answer>` block scores
    `totals[model]` for its `[model]` marker (`default` without one), as a points dict."""

    def decide(system: str, users: list[str]) -> str:
        answer = block(users[0], ANSWER_TAG) if users else None
        if answer is None:
            return "I could not find the answer to score."
        marked = [name for name in totals if f"[{name}]" in answer]
        return json.dumps(rubric_points(totals[marked[0]] if marked else default))

    return decide


def fact_lines(decorate: Callable[[str], str] = lambda reply: reply) -> Decide:
    """A fact extractor (the `factsim` criteria set) for texts written one fact a line as
    "subject | relation | object": it answers {"facts": [[subject, relation, object], ...]}
    for the lines of the `<document>` block that have that shape (other lines state nothing).
    `decorate` wraps the JSON (prose, code fences) to exercise the parser."""

    def decide(system: str, users: list[str]) -> str:
        text = block(users[0], DOCUMENT_TAG) if users else None
        if text is None:
            return "I could not find the document."
        facts = [[part.strip() for part in line.split("|")] for line in text.splitlines() if line.count("|") == 2]
        return decorate(json.dumps({"facts": facts}))

    return decide


def decide_from_config(config: dict[str, Any]) -> Decide | None:
    """The policy a JSON config names ({"policy": "always"|"prefer"|"malformed", ...}), if any."""
    policy = config.get("policy")
    if policy is None and "ranking" in config:
        policy = "prefer"
    if policy is None:
        return None
    if policy == "always":
        return always(str(config.get("winner", "A")))
    if policy == "malformed":
        return malformed(str(config.get("text", "No verdict here.")))
    if policy == "prefer":
        ranking = config.get("ranking", [])
        return prefer(parse_ranking([ranking] if isinstance(ranking, str) else ranking))
    raise ValueError(f"unknown fake policy {policy!r}")
