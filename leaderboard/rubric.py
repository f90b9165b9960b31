"""The structural criteria of the Comparative-QA rubric, scored by rules: no model, no I/O.

The rubric (../shared/data/cqa_evaluation/README.upstream.md) has 15 criteria worth 19 points.
Rules can check how an answer is built, not whether it is true, relevant or well argued, so
only the criteria whose wording is about structure are scored (points as in the rubric):

    C1  a short introduction is present      an introduction of at most 100 words
    C2  defined aspects used for comparison  at least two aspects (list items, headed sections,
                                             labelled or "In terms of X," paragraphs)
    C3  the intro names the main aspects     the introduction mentions two or more aspect names
    C4  the body has good structure          the aspects are separate blocks, not one prose blob
    C5  the body has aspect names            two or more distinct labels that are not object names
    C6  the body has aspect descriptions     at least half the labelled aspects have 5+ words
    C7  the final choice is explicit         "Best option: X" (one object, or a short answer
                                             that is not "depends"/"subjective"), or a closing
                                             sentence that names one object as the better one
    C10 each argument compares both (0-2)    2: every aspect names both objects, 1: every one
                                             names at least one, else 0 (needs the object names)
    C13 no repetitive statements             no two sentences share half their content words
    C15 12-20 sentences                      prose sentences and list items, appendix excluded

Not covered, because they need understanding rather than rules: C8 (aspects sorted by
importance), C9 (relevance), C11 (no hallucinations), C12 (language), C14 (the choice follows
from the arguments). A score therefore holds at most 11 of the 19 points, 9 when the object
names are unknown (`RubricScore.max_total`). How far each rule agrees with the human experts is
measured by bench/offline_agreement.py; C13 agrees only weakly (it sees wording, not meaning).

The thresholds (100 words, half the content words) were chosen while reading that expert data,
so its figures are in-sample. Change a rule → bump `RULES_VERSION` (offline verdicts carry it).

This is a cheap pre-filter for comparative answers, not a judge of their content.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from leaderboard.answer_layout import (
    CHOICE_PROSE,
    Layout,
    is_object,
    mentions,
    parse_layout,
    strip_article,
    words,
)

MAX_POINTS: Mapping[int, int] = {n: (2 if 9 <= n <= 12 else 1) for n in range(1, 16)}
COVERED: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 10, 13, 15)
NAMES: Mapping[int, str] = {
    1: "short introduction", 2: "defined aspects", 3: "intro names the main aspects",
    4: "structured body", 5: "aspect names", 6: "aspect descriptions", 7: "explicit final choice",
    8: "aspects sorted", 9: "relevance", 10: "arguments compare both", 11: "no hallucinations",
    12: "language", 13: "no repetition", 14: "choice follows from the arguments", 15: "12-20 sentences",
}  # fmt: skip

RULES_VERSION = "structure-v1"
INTRO_MAX_WORDS = 100
REPEAT_JACCARD = 0.5
MIN_SENTENCES, MAX_SENTENCES = 12, 20
REPEAT_WINDOW = 200  # sentences compared for C13 (pairwise: keep huge answers cheap)

_NON_CHOICE = re.compile(r"\b(depends|subjective|preference|inconclusive|personal)\b", re.IGNORECASE)
_STOP = frozenset(re.findall(r"\w+", """
    the a an and or of to in on for with is are was were be been it its this that these those as at by
    from but not than more most less also both while which their they them has have had can will may
    such into other some many much very well being over between each one two"""))


@dataclass(frozen=True)
class RubricScore:
    """Points per scored criterion (criterion number → points) and, per criterion, why."""

    points: Mapping[int, int]
    notes: Mapping[int, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.points.values())

    @property
    def max_total(self) -> int:
        """The most these criteria can give: 11 of the rubric's 19 points, 9 without object names."""
        return sum(MAX_POINTS[n] for n in self.points)

    def differing(self, other: RubricScore) -> list[int]:
        """Criteria (in order) on which the two scores disagree."""
        return [n for n in sorted(self.points) if self.points[n] != other.points.get(n)]


def score_structure(text: str, object1: str | None = None, object2: str | None = None) -> RubricScore:
    """Score the structural criteria of one comparative answer (see the module docstring).

    Without both object names C10 is not scored, and C5/C7 fall back to object-free checks.
    """
    objects = tuple(o.strip() for o in (object1, object2) if o and o.strip())
    layout = parse_layout(text, objects)
    named = [a for a in layout.aspects if a.name and not is_object(a.name, objects)]
    distinct = {_key(a.name) for a in named if a.name}
    described = [a for a in named if len(words(a.text)) >= 5]
    intro_words = sum(len(words(s)) for s in layout.intro)
    in_intro = _aspects_in_intro(layout)
    repeat = _repeated_pair(layout.sentences)
    n = len(layout.sentences)
    scored: dict[int, tuple[int, str]] = {
        1: (int(bool(layout.intro) and intro_words <= INTRO_MAX_WORDS),
            f"introduction of {intro_words} words" if layout.intro else "no introduction"),
        2: (int(len(layout.aspects) >= 2), f"{len(layout.aspects)} aspect(s)"),
        3: (int(len(in_intro) >= 2), f"introduction names {len(in_intro)} aspect(s)"),
        4: (int(layout.blocks and len(layout.aspects) >= 2),
            "aspects in separate blocks" if layout.blocks else "no separate aspect blocks"),
        5: (int(len(distinct) >= 2), f"{len(distinct)} distinct aspect name(s)"),
        6: (int(len(named) >= 2 and 2 * len(described) >= len(named)),
            f"{len(described)} of {len(named)} named aspect(s) described"),
        7: (int(_is_explicit(layout.choice, objects)),
            f"final choice {layout.choice[:60]!r}" if layout.choice else "no final choice"),
        13: (int(repeat is None), "no repeated statement" if repeat is None else f"repeats {repeat[:60]!r}"),
        15: (int(MIN_SENTENCES <= n <= MAX_SENTENCES), f"{n} sentences"),
    }  # fmt: skip
    if len(objects) == 2:
        scored[10] = _compares_both(layout, objects)
    ordered = sorted(scored)
    return RubricScore({k: scored[k][0] for k in ordered}, {k: scored[k][1] for k in ordered})


def objects_from_question(question: str) -> tuple[str, str] | None:
    """The two objects a question compares: "Compare X and Y (with respect to Z)", "What is
    better: X or Y?", "Which is better, a X or a Y?", "Should I learn X or Y for Z?", "X vs Y".
    None when no pair can be read."""
    q = " ".join(question.split()).strip()
    tail = r"(?:\s+(?:for|in|when|as|with|regarding)\s[^?]*)?\s*[?.!]?$"
    verbs = r"between|learn|buy|use|choose|get|pick|prefer|take"
    patterns = (
        (r"^compare\s+(?P<a>.+?)\s+(?:and|with|to|vs\.?|versus)\s+(?P<b>.+?)"
         r"(?:\s+(?:with respect to|in terms of|for|regarding|on)\s.*)?[.?!]?$"),
        rf"\b(?:{verbs})\s+(?P<a>[^,:?]+?)\s+(?:or|and)\s+(?P<b>[^,:?]+?)" + tail,
        r"(?:^|[:,]\s*)(?P<a>[^,:?]+?)\s+(?:or|vs\.?|versus)\s+(?P<b>[^,:?]+?)" + tail,
    )
    for pattern in patterns:
        match = re.search(pattern, q, re.IGNORECASE)
        if match:
            a, b = strip_article(match["a"]), strip_article(match["b"])
            if a and b and a.lower() != b.lower() and len(a.split()) <= 6 and len(b.split()) <= 6:
                return a, b
    return None


def _key(name: str) -> str:
    return " ".join(w for w in words(name) if w not in _STOP)


def _aspects_in_intro(layout: Layout) -> list[str]:
    """Aspect names the introduction mentions (any word of 4+ letters, by its first 5 letters)."""
    intro = {w[:5] for w in words(" ".join(layout.intro))}
    return [
        a.name for a in layout.aspects
        if a.name and any(w[:5] in intro for w in words(a.name) if len(w) > 3 and w not in _STOP)
    ]  # fmt: skip


def _compares_both(layout: Layout, objects: tuple[str, ...]) -> tuple[int, str]:
    """C10 from the aspects (or, without any, the sentences after the intro)."""
    units = [f"{a.name or ''} {a.text}" for a in layout.aspects] or list(layout.sentences[len(layout.intro):])
    if not units:
        return 0, "no arguments"
    named = [sum(mentions(u, o, objects) for o in objects) for u in units]
    both = sum(1 for k in named if k == 2)
    points = 2 if both == len(units) else 1 if all(named) else 0
    return points, f"{both} of {len(units)} argument(s) name both objects"


def _is_explicit(choice: str | None, objects: tuple[str, ...]) -> bool:
    """A short answer (at most 12 words) that picks one side rather than declining to."""
    if not choice or not words(choice) or len(words(choice)) > 12 or _NON_CHOICE.search(choice):
        return False
    if len(objects) < 2:
        return True
    picked = sum(mentions(choice, o, objects) for o in objects)
    if picked == 0:
        return len(words(choice)) <= 3  # "Tie", "Neither", a product name the question spelt otherwise
    return picked == 1 or bool(CHOICE_PROSE.search(choice))


def _content(sentence: str) -> set[str]:
    kept = {w for w in words(sentence) if len(w) > 2 and w not in _STOP}
    return {w[:-1] if w.endswith("s") and len(w) > 4 else w for w in kept}  # a crude stem


def _repeated_pair(sentences: tuple[str, ...]) -> str | None:
    """The later of the first two sentences sharing REPEAT_JACCARD of their content words
    (object names included: "Dogs are smarter than cats" restated is a repetition)."""
    bags = [(s, b) for s in sentences[:REPEAT_WINDOW] if len(b := _content(s)) >= 3]
    for i, (_, a) in enumerate(bags):
        for second, b in bags[i + 1:]:
            if len(a & b) / len(a | b) >= REPEAT_JACCARD:
                return second
    return None
