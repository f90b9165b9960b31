"""`factsim`: FactSim of a summary against its sources, an absolute score per submission.

Sources. A submission's sources are `metadata["sources"]`, a list of texts (one string counts
as one source; blank ones are dropped). Without any, the question text is the source: a
question such as "Summarise: <article>" carries what it asks to summarise. Both sides of a
match summarise the same question, so they must resolve to the same sources; when they do
not (one side sent sources, the other not, or others), the match fails with a
`PermanentJudgeError` naming both submissions, rather than comparing scores against different
texts.

Score. The judge extracts (subject, relation, object) tuples from each source and from the
summary (`workers.criteria.factsim_prompt`, through its free-form `complete()` and the
reminder re-ask once); the tuples are embedded with all-MiniLM-L6-v2 (`workers.embeddings`,
offline, once per process) and `leaderboard.factsim` turns their cosine similarities into
coverage f_V, consistency f_N and FactSim at `THRESHOLD`. Sources whose facts all come back
empty fail the match (`PermanentJudgeError`: there is nothing to cover).

Reuse. The score belongs to the submission: it is kept in the score book under (submission,
judge, "factsim") with the facts, f_V, f_N and each fact's best match in `detail`, and reused
by every later match. Its version is the template version plus a hash of the sources, so new
sources mean a new score. A source's facts are reused per text (by content hash) from either
side's stored detail, so the sources of a question are extracted once, not once per summary.

Outcome. The higher FactSim wins; scores within 1e-9 tie; always `consistent` (nothing is
shown side by side, the order policy does not apply). Stored calls: one per summary scored or
reused (`first` = that submission, `winner` null, `score`, `coverage`, `consistency`) and one
per source extracted in this match (`first` null, `source` = its index).
"""
from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from leaderboard.factsim import (
    FactSimScore,
    best_matches,
    factsim,
    similarity_matrix,
    summary_sources,
)
from leaderboard.keys import content_hash
from leaderboard.templates import FACTSIM_TEMPLATE_VERSION as TEMPLATE_VERSION
from leaderboard.templates import factsim_score_version
from leaderboard.types import OrderPolicy, Outcome, Submission, Winner
from service.store import KeptScore, MatchContext

from ..embeddings import MINILM, EncoderUnavailable, SentenceEncoder, encoder
from ..errors import PermanentJudgeError
from ..judge import Judge, Send, ask_with_reminder, gather_settled
from .base import Judged, ScoreBook
from .factsim_prompt import REMINDER, Fact, build_facts_prompt, fact_text, parse_facts

CRITERIA = "factsim"
ENCODER = MINILM
THRESHOLD = 0.75  # cosine similarity from which two facts match (measured on MiniLM: README)
TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Extracted:
    """The facts of one text, with the reply they were read from and what the calls cost."""

    facts: tuple[Fact, ...]
    raw: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    reminded: bool = False


@dataclass(frozen=True)
class SourceCall:
    """The extraction of one source's facts, as stored with the judgement."""

    source: int
    text_hash: str
    extracted: Extracted

    @property
    def input_tokens(self) -> int:
        return self.extracted.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.extracted.output_tokens

    def as_json(self) -> dict:
        ex = self.extracted
        return {
            "first": None, "winner": None, "source": self.source, "source_hash": self.text_hash,
            "facts": len(ex.facts), "reason": f"factsim source {self.source}: {len(ex.facts)} facts", "raw": ex.raw,
            "input_tokens": ex.input_tokens, "output_tokens": ex.output_tokens,
            "latency_ms": round(ex.latency_ms, 1), "reminded": ex.reminded,
        }  # fmt: skip


@dataclass(frozen=True)
class ScoreCall:
    """One side's FactSim as stored with the judgement (see the module docstring)."""

    first: int
    score: float
    coverage: float
    consistency: float
    facts: int
    raw: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    reminded: bool = False
    reused: bool = False

    def as_json(self) -> dict:
        return {
            "first": self.first, "winner": None, "score": self.score, "coverage": self.coverage,
            "consistency": self.consistency, "facts": self.facts,
            "reason": f"factsim {self.score:.3g} (coverage {self.coverage:.3g}, consistency {self.consistency:.3g})",
            "raw": self.raw, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
            "latency_ms": round(self.latency_ms, 1), "reminded": self.reminded, "reused": self.reused,
        }  # fmt: skip


async def extract_facts(send: Send, text: str) -> Extracted:
    """The fact tuples `text` states, from a chat judge, with the reminder re-ask once."""
    system, user = build_facts_prompt(text)
    got = await ask_with_reminder(send, system, user, parse_facts, REMINDER, what="list of facts")
    return Extracted(got.value, got.raw, got.input_tokens, got.output_tokens, got.latency_ms, got.reminded)


def sources_of(sub: Submission, metadata: Mapping[str, object]) -> tuple[str, ...]:
    """The texts `sub` summarises: its `metadata["sources"]`, else its question text
    (`leaderboard.factsim.summary_sources`, which the dry run reads too)."""
    try:
        return summary_sources(sub.question, metadata)
    except ValueError as exc:
        raise PermanentJudgeError(f"submission {sub.id}: {exc}") from None


def match_sources(ctx: MatchContext) -> tuple[str, ...]:
    """The sources both sides summarise; `PermanentJudgeError` when they differ."""
    a, b = (sources_of(sub, ctx.metadata.get(sub.id, {})) for sub in (ctx.a, ctx.b))
    if a != b:
        raise PermanentJudgeError(
            f"submissions {ctx.a.id} and {ctx.b.id} summarise different sources ({len(a)} and {len(b)} texts, "
            "from metadata.sources or else the question): FactSim compares summaries of the same sources"
        )
    return a


def score_version(sources: Sequence[str]) -> str:
    """The version a stored score is valid for: the template's, and which sources it covers."""
    return factsim_score_version(sources)


def winner_of(a: float, b: float) -> Winner:
    """The higher FactSim wins; within `TIE_TOLERANCE` it is a tie."""
    return Winner.TIE if abs(a - b) <= TIE_TOLERANCE else Winner.A if a > b else Winner.B


def score_summaries(
    enc: SentenceEncoder, sources: Sequence[tuple[Fact, ...]], summaries: Sequence[tuple[Fact, ...]]
) -> list[tuple[FactSimScore, dict]]:
    """FactSim and its explanation (each fact's best match) for each summary, against the
    facts of all sources together; one encode call for every fact of the match."""
    source_facts = [fact for facts in sources for fact in facts]
    texts = [fact_text(f) for f in source_facts] + [fact_text(f) for facts in summaries for f in facts]
    vectors = enc.encode(texts) if texts else np.zeros((0, 0))
    src, start = vectors[: len(source_facts)], len(source_facts)
    out = []
    for facts in summaries:
        sim = similarity_matrix(src, vectors[start : start + len(facts)])
        start += len(facts)
        by_source, by_summary = best_matches(sim)
        out.append((factsim(sim, threshold=THRESHOLD), {
            "source_matches": [[m.index, round(m.similarity, 4)] for m in by_source],
            "summary_matches": [[m.index, round(m.similarity, 4)] for m in by_summary],
        }))  # fmt: skip
    return out


async def judge(
    judge: Judge, ctx: MatchContext, policy: OrderPolicy, rng: random.Random, *, scores: ScoreBook
) -> Judged:
    """Score each side (or reuse its score), extracting only the facts not stored yet, and
    compare the FactSims."""
    spec = ctx.spec.judge
    sources = match_sources(ctx)
    version = score_version(sources)
    sides = (ctx.a, ctx.b)
    # Matches in flight over the same sources wait for one extraction of them, then reuse it.
    async with scores.exclusive(f"facts:{CRITERIA}:{spec}:{version}"):
        stored = {sub.id: await scores.find_score(sub.id, spec, CRITERIA) for sub in sides}
        kept = {i: s for i, s in stored.items() if s is not None and s.detail.get("template_version") == version}
        todo = [sub for sub in sides if sub.id not in kept]
        source_calls: list[SourceCall] = []
        paid: dict[int, Extracted] = {}
        if todo:
            send, enc = _extractor(judge, spec), _encoder()
            await asyncio.to_thread(_load, enc)  # fail before paying for any extraction
            known = _known_source_facts(s for s in stored.values() if s is not None)
            missing = _missing(sources, known)
            new_sources, summaries = await gather_settled(
                gather_settled(*(extract_facts(send, text) for _, text in missing)),
                gather_settled(*(extract_facts(send, sub.output) for sub in todo)),
            )
            for (i, text), ex in zip(missing, new_sources):
                known[content_hash(text)] = ex.facts
                source_calls.append(SourceCall(i, content_hash(text), ex))
            source_facts = [known[content_hash(text)] for text in sources]
            if not any(source_facts):
                raise PermanentJudgeError(
                    f"the judge found no fact in the sources of submissions {ctx.a.id} and {ctx.b.id}: "
                    "FactSim has nothing to cover"
                )
            results = await asyncio.to_thread(score_summaries, enc, source_facts, [ex.facts for ex in summaries])
            for sub, ex, (score, matches) in zip(todo, summaries, results):
                detail = _detail(version, sources, source_facts, ex, score, matches)
                kept[sub.id] = await scores.keep_score(sub.id, spec, CRITERIA, score.factsim, detail)
                paid[sub.id] = ex
    a, b = (_call(sub.id, kept[sub.id], paid.get(sub.id)) for sub in sides)
    outcome = Outcome(winner=winner_of(a.score, b.score), consistent=True)
    return Judged([*source_calls, a, b], outcome, {"scores": {ctx.a.id: a.score, ctx.b.id: b.score}})


def _extractor(judge: Judge, spec: str) -> Send:
    """The judge's free-form call; an offline judge has none, and FactSim cannot do without."""
    complete = getattr(judge, "complete", None)
    if complete is None:
        raise PermanentJudgeError(
            f"the judge {spec!r} cannot judge criteria 'factsim': FactSim needs an LLM to extract fact "
            "tuples from the sources and the summaries, and this judge answers no free-form prompt "
            "(an offline judge applies fixed rules only); use an anthropic/ or openai/ judge"
        )
    return complete


def _encoder() -> SentenceEncoder:
    return encoder(ENCODER)


def _load(enc: SentenceEncoder) -> None:
    try:
        enc.load()
    except EncoderUnavailable as exc:
        raise PermanentJudgeError(f"criteria 'factsim' cannot embed facts on this worker: {exc}") from exc


def _missing(sources: Sequence[str], known: Mapping[str, object]) -> list[tuple[int, str]]:
    """(index, text) of each source whose facts are not known, each text once."""
    seen = set(known)
    out = []
    for i, text in enumerate(sources):
        if content_hash(text) not in seen:
            seen.add(content_hash(text))
            out.append((i, text))
    return out


def _known_source_facts(stored: Iterable[KeptScore]) -> dict[str, tuple[Fact, ...]]:
    """Source text hash → its facts, from stored scores extracted with the current prompt."""
    known: dict[str, tuple[Fact, ...]] = {}
    for score in stored:
        detail = score.detail
        if detail.get("facts_version") != TEMPLATE_VERSION:
            continue
        for source in detail.get("sources", ()):
            known.setdefault(source["hash"], tuple((str(s), str(r), str(o)) for s, r, o in source["facts"]))
    return known


def _detail(
    version: str, sources: Sequence[str], source_facts: Sequence[tuple[Fact, ...]], summary: Extracted,
    score: FactSimScore, matches: dict,
) -> dict:
    """What the score book keeps beside the FactSim: every fact, f_V, f_N and the matches
    (`source_matches[k]`: [summary fact, similarity] closest to the k-th source fact, the
    sources' facts numbered in order; `summary_matches[j]`: [source fact, similarity])."""
    return {
        "template_version": version, "facts_version": TEMPLATE_VERSION, "encoder": ENCODER,
        "threshold": THRESHOLD, "coverage": score.coverage, "consistency": score.consistency,
        "summary_facts": [list(f) for f in summary.facts],
        "sources": [{"hash": content_hash(t), "facts": [list(f) for f in facts]}
                    for t, facts in zip(sources, source_facts)],
        **matches,
        "raw": summary.raw, "reminded": summary.reminded,
        "input_tokens": summary.input_tokens, "output_tokens": summary.output_tokens,
    }  # fmt: skip


def _call(submission_id: int, stored: KeptScore, paid: Extracted | None) -> ScoreCall:
    detail = stored.detail
    return ScoreCall(
        first=submission_id,
        score=float(stored.total),
        coverage=float(detail.get("coverage", 0.0)),
        consistency=float(detail.get("consistency", 0.0)),
        facts=len(detail.get("summary_facts", ())),
        raw=str(detail.get("raw", "")),
        input_tokens=paid.input_tokens if paid else 0,
        output_tokens=paid.output_tokens if paid else 0,
        latency_ms=paid.latency_ms if paid else 0.0,
        reminded=paid.reminded if paid else False,
        reused=paid is None or not stored.created,
    )
