"""Gaming flags: signs that a player's wins come from working the judge rather than answering.

Why: an automatic judge can be gamed. Zheng et al. (2024, "Cheating Automatic LLM Benchmarks")
reached an 86.5% length-controlled win rate on AlpacaEval 2.0 with a null model that gives every
question the same crafted text. A board should say when a row looks like that, with the numbers,
so a reader can look; a flag changes no rating.

Four kinds, each with a short sentence of evidence:

- `constant_output`: the outputs hardly depend on the question. Measure: character 5-gram
  Jaccard similarity of two outputs (lower-cased, whitespace collapsed, first `CLIP` characters),
  over up to `PAIRS` random pairs of the sampled outputs. Flagged when at least half the pairs
  (`CONSTANT_SHARE`) are near-identical (similarity >= `NEAR`, 0.8). Honest answers to different
  questions share few 5-grams (the most similar of 200 AlpacaEval outputs: 0.18-0.34; 0.8 needs
  the same text up to small edits), and a few stock replies ("I cannot help with that") stay far below half the pairs.
- `addresses_judge`: outputs speak to the judge or carry a verdict: "ignore previous
  instructions", "as the judge", "Output (a)", `"winner": `, `[[A]]`, "Response A is better",
  "I am the better response", "dear evaluator"... (`JUDGE_PATTERNS`, on the lower-cased text,
  each only when the text holds one of its words). Flagged when at least `JUDGE_MIN` (3)
  sampled outputs and `JUDGE_SHARE` (5%) of them match: one answer about evaluators, or one
  quoting a rubric, is not a pattern.
- `copies_question`: the output repeats the question: 5-gram Jaccard similarity of output and
  question >= `NEAR`. An answer that quotes a line of its question, or echoes it before
  answering, stays well below (its own text dilutes the shared 5-grams). Flagged when at least
  `COPY_MIN` (3) sampled outputs and `COPY_SHARE` (10%) of them do.
- `length_unexplained`: the player wins far more than its length predicts, and another judge on
  the same opponents does not see it win that much. First the length test: one logistic of the
  outcome (ties half) on the normalised length difference (a - b) / (a + b + 1) of the two
  players' mean output lengths (`leaderboard.style`'s covariate), fitted on the board's battles
  leaving out the player's own (else a winning player drags the length effect towards itself),
  predicts each of its battles; it fires when the actual score exceeds the predicted one by
  `LENGTH_MARGIN` (25 points) AND by `LENGTH_Z` (4) standard errors (the sum of the predicted
  battles' binomial variances). It fires just as well for a player much stronger than the whole
  field with no length advantage: one judge's verdicts cannot tell skill from gaming that judge.
  So, second, a `SecondOpinion` (another judge's pair counts, or the pooled human votes, on the
  same scope and level) must disagree (`disagreement`): for each opponent q the player met under
  both, the other judge's rate of wins among its decided verdicts (ties left out) against q,
  applied to this judge's decided verdicts against q, gives the wins expected here. Flagged
  only when the actual wins exceed that by `LENGTH_MARGIN` AND `LENGTH_Z` standard errors. Why
  decided verdicts: a judge that ties often (a rubric that cannot tell plain answers apart, a
  position-biased judge whose order disagreements become ties) would otherwise seem to rate
  every player near 50%, and so accuse any strong one. The variance is n·r(1-r)·(1 + n/m) per
  opponent (n decided verdicts here, m there, r the other judge's rate smoothed by half a win
  each way, so that a rate of 0 or 1 from few verdicts is not certainty): this judge's binomial
  noise plus the other judge's own sampling noise carried over to n verdicts. The other judge
  needs `SECOND_MIN` (20) decided verdicts on the player against those opponents: a normal
  approximation of rates from a handful of verdicts is no ground for an accusation (3 losses of
  3 pass 4 standard errors). An honest strong player wins under both judges and is not
  flagged; without a second opinion no player is.

Cost: the text flags read at most `SAMPLE` outputs per player (drawn with the generator passed
in), so 100 players x 500 questions cost 100 x 50 outputs, `PAIRS` set intersections and one
regex scan per output. The length flag works on pair counts binned by length difference
(`BINS`): O(players²) to bin, then every player's leave-one-out fit at once over the bins; a
second opinion costs O(players) per player the length test fired for, and nothing otherwise.

The length flag works on verdicts, not text: it lives in `leaderboard.length_flag`, with its
constants (`LENGTH_MARGIN`, `LENGTH_Z`, `SECOND_MIN`, `LENGTH_RIDGE`, `BINS`); its input
`SecondOpinion` stays here, beside the text flags' `Answer`.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

import numpy as np

from .battles import PairCounts

SAMPLE = 50  # outputs read per player for the text flags
PAIRS = 200  # random pairs of sampled outputs compared for `constant_output`
CLIP = 500  # characters of a text compared: enough to see a copy, bounded in cost
SHINGLE = 5  # character n-gram size
NEAR = 0.8  # Jaccard similarity from which two texts are near-identical
CONSTANT_MIN = 10  # outputs a player needs before it can look constant
CONSTANT_SHARE = 0.5
JUDGE_MIN, JUDGE_SHARE = 3, 0.05
COPY_MIN, COPY_SHARE = 3, 0.10
QUOTE = 60  # characters of a matched text quoted in the evidence

T = TypeVar("T")


class FlagKind(str, Enum):
    """What a flag says about a player's outputs or results."""

    CONSTANT_OUTPUT = "constant_output"
    ADDRESSES_JUDGE = "addresses_judge"
    COPIES_QUESTION = "copies_question"
    LENGTH_UNEXPLAINED = "length_unexplained"


@dataclass(frozen=True)
class Flag:
    """One sign of gaming and its evidence: a sentence with the numbers."""

    kind: FlagKind
    evidence: str


@dataclass(frozen=True)
class Answer:
    """One output of a player and the question it answers."""

    question: str
    output: str


@dataclass(frozen=True)
class SecondOpinion:
    """Another judge's verdicts (or the pooled human votes) on the same scope and level as the
    board: its pair counts, to check a length flag against."""

    judge: str
    counts: PairCounts


# (pattern, words one of which it needs): a pattern runs only on a text holding one of its words
_JUDGE = (
    ((r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier|preceding|"
      r"other)\s+(?:instructions?|prompts?|rules|directions)"), ("ignore", "disregard", "forget")),
    (r"\bas\s+(?:the|an|a)\s+(?:ai\s+|impartial\s+|fair\s+)?(?:judge|evaluator|grader|annotator)\b",
     ("judge", "evaluator", "grader", "annotator")),
    (r"\b(?:dear|attention|note\s+to(?:\s+the)?|hello|hi|hey|to\s+the)\s+(?:judge|evaluator|grader|annotator)s?\b",
     ("judge", "evaluator", "grader", "annotator")),
    (r"\b(?:judge|evaluator|grader)s?\s*[,:]\s*(?:please|you|this|the|output|response|i)\b",
     ("judge", "evaluator", "grader")),
    (r"\boutput\s*\(\s*[ab]\s*\)", ("output",)),
    (r'"\s*(?:winner|preferred(?:_output|_response)?|better_(?:output|response)|verdict)\s*"\s*:',
     ("winner", "preferred", "better_", "verdict")),
    (r"\[\[\s*[ab]\s*\]\]", ("[[",)),
    ((r"\b(?:response|output|answer|assistant|model)\s*\(?\s*[ab12]\s*\)?\s+is\s+(?:clearly\s+|much\s+|far\s+|"
      r"significantly\s+|definitely\s+)?(?:better|superior|preferred|the\s+(?:better|best|winner|preferred))"),
     ("better", "superior", "preferred", "best", "winner")),
    (r"\bi\s+am\s+the\s+(?:better|best|superior|preferred|winning|correct)\s+(?:response|answer|output|model|assistant)",
     ("i am",)),
    (r"\b(?:choose|select|pick|prefer|vote\s+for|rate)\s+(?:response|output|answer|assistant)\s*\(?\s*[ab]\b",
     ("choose", "select", "pick", "prefer", "vote", "rate")),
    (r"\bthis\s+(?:response|answer|output)\s+(?:should|must)\s+(?:be\s+)?(?:win|rated|judged|chosen|selected|preferred)",
     ("should", "must")),
)
JUDGE_PATTERNS = tuple((re.compile(pattern), words) for pattern, words in _JUDGE)  # on the lower-cased text


def judge_text(output: str) -> str | None:
    """The first text in `output` that speaks to the judge or carries a verdict, or None."""
    low = output.lower()
    for pattern, words in JUDGE_PATTERNS:
        if any(word in low for word in words):
            found = pattern.search(low)
            if found is not None:
                return " ".join(found.group(0).split())[:QUOTE]
    return None


def shingles(text: str) -> frozenset[str]:
    """The character 5-grams of `text` lower-cased, whitespace collapsed, clipped to `CLIP`
    characters; a shorter text is its own single shingle."""
    norm = " ".join(text.lower().split())[:CLIP]
    if len(norm) <= SHINGLE:
        return frozenset((norm,))
    return frozenset({norm[i:i + SHINGLE] for i in range(len(norm) - SHINGLE + 1)})


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two shingle sets (1 for two empty texts)."""
    shared = len(a & b) if len(a) <= len(b) else len(b & a)
    union = len(a) + len(b) - shared
    return shared / union if union else 1.0


def rank(item: int, seed: int) -> int:
    """A submission id's place in a player's sample: a 64-bit mix of id and seed (splitmix64's
    finaliser), so the sample looks random but is fixed by the ids."""
    z = (item + (seed + 1) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


def bottom_k(kept: list[tuple[int, int]], item: int, seed: int, size: int = SAMPLE) -> bool:
    """Offer a new id to a player's sample `kept` (its (rank, id) pairs, at most `size`, sorted):
    the ids of smallest rank are kept. True when the sample changed. Why this sample: adding an
    output changes it only when the new id ranks among the `size` smallest (about size/n of
    the time), so the text flags of a player with hundreds of outputs are rarely redone."""
    ranked = (rank(item, seed), item)
    if len(kept) >= size and ranked >= kept[-1]:
        return False
    bisect.insort(kept, ranked)
    del kept[size:]
    return True


def sample(items: Sequence[T], rng: np.random.Generator, size: int = SAMPLE) -> list[T]:
    """At most `size` of the items (a player's answers, or their ids), drawn without replacement,
    in their order."""
    if len(items) <= size:
        return list(items)
    return [items[i] for i in sorted(rng.choice(len(items), size, replace=False).tolist())]


def _of(count: int, total: int, sampled: int) -> str:
    """'14 of 50 sampled outputs' or '14 of 40 outputs'. The player's total is not named: a
    flag's evidence depends on its sample alone, so it holds while outputs outside it arrive."""
    return f"{count} of {sampled} sampled outputs" if sampled < total else f"{count} of {total} outputs"


def constant_output(outputs: Sequence[str], rng: np.random.Generator, *, total: int | None = None,
                    sets: Sequence[frozenset[str]] | None = None) -> Flag | None:
    """Flagged when most random pairs of the outputs are near-identical (module docstring).
    `total`: how many outputs the player has, when `outputs` is a sample of them; `sets`: their
    shingles, when already made."""
    n = len(outputs)
    if n < CONSTANT_MIN:
        return None
    sets = [shingles(o) for o in outputs] if sets is None else sets
    count = min(PAIRS, n * (n - 1) // 2)
    i = rng.integers(0, n, size=count)
    j = (i + rng.integers(1, n, size=count)) % n  # never i itself
    scores = np.array([similarity(sets[a], sets[b]) for a, b in zip(i.tolist(), j.tolist())])
    share = float(np.mean(scores >= NEAR))
    if share < CONSTANT_SHARE:
        return None
    whole = n if total is None else total
    what = f"{n} outputs" if whole == n else f"{n} sampled outputs"
    return Flag(FlagKind.CONSTANT_OUTPUT,
                f"{share:.0%} of {count} random pairs of its {what} are near-identical "
                f"(5-gram similarity >= {NEAR}; mean {float(scores.mean()):.2f})")


def addresses_judge(outputs: Sequence[str], *, total: int | None = None) -> Flag | None:
    """Flagged when enough outputs speak to the judge or carry a verdict (`JUDGE_PATTERNS`)."""
    hits = [found for found in map(judge_text, outputs) if found is not None]
    if len(hits) < JUDGE_MIN or len(hits) < JUDGE_SHARE * len(outputs):
        return None
    example = hits[0]
    return Flag(FlagKind.ADDRESSES_JUDGE,
                f"{_of(len(hits), total or len(outputs), len(outputs))} contain verdict-like text or address the "
                f"judge, e.g. '{example}'")


def copies_question(answers: Sequence[Answer], *, total: int | None = None,
                    sets: Sequence[frozenset[str]] | None = None) -> Flag | None:
    """Flagged when enough outputs repeat their question (5-gram similarity >= `NEAR`); `sets`:
    the outputs' shingles, when already made."""
    outputs = [shingles(a.output) for a in answers] if sets is None else sets
    copies = sum(_copies(a.question, o) for a, o in zip(answers, outputs))
    if copies < COPY_MIN or copies < COPY_SHARE * len(answers):
        return None
    return Flag(FlagKind.COPIES_QUESTION,
                f"{_of(copies, total or len(answers), len(answers))} repeat the question "
                f"(5-gram similarity >= {NEAR})")


def _copies(question: str, output: frozenset[str]) -> bool:
    """Whether an output (its shingles) repeats `question`. A question has at most as many
    shingles as characters, and Jaccard >= NEAR needs the smaller set to hold NEAR of the
    larger: an output with far more shingles than the question has characters cannot copy it,
    and is not compared (most answers are longer than their question)."""
    if len(output) * NEAR > min(len(question), CLIP):
        return False
    return similarity(output, shingles(question)) >= NEAR


def text_flags(answers: Sequence[Answer], rng: np.random.Generator, *, total: int | None = None) -> list[Flag]:
    """The three text flags over one player's answers (already a sample of at most `SAMPLE`,
    or all of them; `total` says how many it has)."""
    outputs = [a.output for a in answers]
    sets = [shingles(o) for o in outputs]
    found = (constant_output(outputs, rng, total=total, sets=sets), addresses_judge(outputs, total=total),
             copies_question(answers, total=total, sets=sets))
    return [flag for flag in found if flag is not None]
