"""Comparative-QA (cqa_evaluation): summaries, their 15-criterion rubric scores, and the
pairwise verdicts those scores imply.

Layout read from the directory: `raw_summaries/<generator>_scenario_<k>.json` (model = the
generator, scenario "scenario_<k>") and `<name>.json` (human, cam, yahoo: model = the name,
scenario "default"), each a list of {object1, object2, aspect, comparison}; the rubric scores of
`compact/evaluated_summaries_scores.csv` (GPT-4 few-shot, GPT-3.5, Perplexity; rows with an
unparsed score dict are skipped) and `evaluation_tables/human_evaluation_367.tsv` (human experts,
score = C1 + ... + C15), each when present.

The question is the comparison of object1 and object2 under the aspect; its id is a hash of the
three. The GPT-3.5 and GPT-4 files hold three summaries per comparison (human.json up to four),
so the k-th summary of a comparison within one file answers question "<id>-<k>" (k >= 2): every
summary is kept and scored, so the per-(generator, scenario) means are the published ones, and
only the first summary of each file meets every other system on the shared question id; the
second and third meet each other (GPT-3.5 against GPT-4 and the extra human summaries).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from leaderboard.keys import content_hash
from service.store import NewSubmission, Store
from service.store.imports import BatchConflict
from service.usecases.importers.common import (
    ImportConflict,
    ImportFormatError,
    ImportSummary,
    Record,
    add_submissions,
    count_submissions,
    read_records,
    text_field,
    timed,
)
from service.usecases.importers.rubric import CRITERIA, RubricScore, rubric_judgements, score_rows

SUMMARIES = "raw_summaries"
LLM_SCORES = Path("compact") / "evaluated_summaries_scores.csv"
HUMAN_SCORES = Path("evaluation_tables") / "human_evaluation_367.tsv"
SCORE_FILES = {LLM_SCORES.name: LLM_SCORES, HUMAN_SCORES.name: HUMAN_SCORES}
CRITERIA_COLUMNS = tuple(f"C{i}" for i in range(1, 16))
JUDGES = {"gpt-4": "rubric/gpt-4-fewshot", "gpt-3.5": "rubric/gpt-3.5", "perplexity": "rubric/perplexity"}
HUMAN_JUDGE = "rubric/human"
SCENARIO_FILE = re.compile(r"^(?P<model>.+)_scenario_(?P<k>\d+)$")


@dataclass(frozen=True)
class Summary:
    """One summary of one file, as a submission to be."""

    file: str
    item: int
    line: int
    object1: str
    object2: str
    aspect: str
    comparison: str
    model: str
    scenario: str
    question_id: str
    question: str


def system_of(stem: str) -> tuple[str, str]:
    """(model, scenario) of a summary file: `gpt4_scenario_2` -> ("gpt4", "scenario_2")."""
    match = SCENARIO_FILE.match(stem)
    return (match["model"], f"scenario_{match['k']}") if match else (stem, "default")


def question_of(object1: str, object2: str, aspect: str) -> tuple[str, str]:
    """(question id, question text) of one comparison."""
    text = f"Compare {object1} and {object2}" + (f" with respect to {aspect}" if aspect else "")
    return "cqa-" + content_hash(f"{object1}\x1f{object2}\x1f{aspect}")[:16], text


def parse_summaries(directory: Path) -> list[Summary]:
    """Every summary of raw_summaries/, files in name order."""
    folder = directory / SUMMARIES
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        raise ImportFormatError(folder, None, "no summary files (<generator>_scenario_<k>.json, human.json, ...)")
    return [summary for path in files for summary in _file_summaries(path)]


def _file_summaries(path: Path) -> list[Summary]:
    model, scenario = system_of(path.stem)
    seen: dict[str, int] = {}
    out = []
    for item, record in enumerate(read_records(path, "json")):
        object1, object2, aspect = _comparison_key(path, record)
        comparison = record.fields.get("comparison")
        if not isinstance(comparison, str) or not comparison.strip():
            raise ImportFormatError(path, record.line, "missing 'comparison' (the summary text)")
        base, question = question_of(object1, object2, aspect)
        seen[base] = seen.get(base, 0) + 1
        qid = base if seen[base] == 1 else f"{base}-{seen[base]}"
        out.append(Summary(path.name, item, record.line, object1, object2, aspect, comparison, model, scenario,
                           qid, question))
    return out


def _comparison_key(path: Path, record: Record) -> tuple[str, str, str]:
    object1 = text_field(path, record, "object1")
    object2 = text_field(path, record, "object2")
    assert object1 is not None and object2 is not None
    return object1.strip(), object2.strip(), (text_field(path, record, "aspect", required=False) or "").strip()


def _criteria(path: Path, record: Record) -> dict[str, float] | None:
    """C1..C15 as numbers; None when the score dict was not parsed (empty cells)."""
    cells = [record.fields.get(c) for c in CRITERIA_COLUMNS]
    if any(c is None for c in cells):
        raise ImportFormatError(path, record.line, f"missing criterion columns (expected {', '.join(CRITERIA_COLUMNS)})")
    if any(str(c).strip() == "" for c in cells):
        return None
    try:
        return {name: float(str(c)) for name, c in zip(CRITERIA_COLUMNS, cells)}
    except ValueError:
        raise ImportFormatError(path, record.line, f"a criterion value is not a number: {cells}") from None


def parse_llm_scores(path: Path, by_item: dict[tuple[str, int], Summary]) -> tuple[list[RubricScore], int]:
    """The LLM judges' scores, each tied to its summary by (file, item); (scores, skipped)."""
    scores, skipped = [], 0
    for record in read_records(path, "csv"):
        judge_name = text_field(path, record, "judge")
        source = text_field(path, record, "source_file")
        item = text_field(path, record, "item")
        assert judge_name is not None and source is not None and item is not None
        summary = by_item.get((Path(source).name, int(item) if item.isdigit() else -1))
        if summary is None:
            raise ImportFormatError(path, record.line, f"no summary {Path(source).name} item {item} in {SUMMARIES}/")
        if (summary.object1, summary.object2) != _comparison_key(path, record)[:2]:
            raise ImportFormatError(path, record.line, f"objects differ from {summary.file} item {summary.item}")
        criteria = _criteria(path, record)
        if criteria is None:
            skipped += 1
            continue
        judge = JUDGES.get(judge_name, f"rubric/{judge_name}")
        scores.append(RubricScore(judge, summary, criteria, path.name, record.line))
    return scores, skipped


def parse_human_scores(path: Path, summaries: list[Summary]) -> list[RubricScore]:
    """The human experts' scores, each tied to the summary of its file and comparison whose
    text it matches (exactly, else the most words in common: the table's copies were edited)."""
    by_comparison: dict[tuple[str, tuple[str, str, str]], list[Summary]] = {}
    for s in summaries:
        by_comparison.setdefault((s.file, (s.object1, s.object2, s.aspect)), []).append(s)
    scores = []
    for record in read_records(path, "tsv"):
        name = text_field(path, record, "filename")
        assert name is not None
        file = _summary_file(name)
        candidates = by_comparison.get((file, _comparison_key(path, record)))
        if not candidates:
            raise ImportFormatError(path, record.line, f"no summary of this comparison in {SUMMARIES}/{file}")
        criteria = _criteria(path, record)
        if criteria is None:
            raise ImportFormatError(path, record.line, "empty criterion values")
        summary = _closest(candidates, str(record.fields.get("comparison") or ""))
        scores.append(RubricScore(HUMAN_JUDGE, summary, criteria, path.name, record.line))
    return scores


def _summary_file(name: str) -> str:
    """`scored_gpt4_scenario_3_comparison` -> gpt4_scenario_3.json; `scored_human_summaries` -> human.json."""
    stem = name.strip().removeprefix("scored_").removesuffix("_comparison").removesuffix("_summaries")
    return f"{stem}.json"


def _closest(candidates: list[Summary], text: str) -> Summary:
    if len(candidates) == 1:
        return candidates[0]
    squeezed = " ".join(text.split())
    for s in candidates:
        if " ".join(s.comparison.split()) == squeezed:
            return s
    words = set(re.findall(r"\w+", text.lower()))

    def overlap(s: Summary) -> float:
        theirs = set(re.findall(r"\w+", s.comparison.lower()))
        return len(words & theirs) / max(1, len(words | theirs))

    return max(candidates, key=lambda s: (overlap(s), -s.item))


def load_cqa(store: Store, directory: Path) -> ImportSummary:
    """Import summaries, rubric scores and the derived pairwise judgements in one transaction."""
    started = time.perf_counter()
    directory = Path(directory)
    summaries = parse_summaries(directory)
    by_item = {(s.file, s.item): s for s in summaries}
    scores: list[RubricScore] = []
    summary = ImportSummary(source=directory.name)
    if (directory / LLM_SCORES).is_file():
        llm, summary.skipped = parse_llm_scores(directory / LLM_SCORES, by_item)
        scores += llm
    if (directory / HUMAN_SCORES).is_file():
        scores += parse_human_scores(directory / HUMAN_SCORES, summaries)
    items = [NewSubmission(question_id=s.question_id, question=s.question, model=s.model, scenario=s.scenario,
                           output=s.comparison, metadata={"source": s.file, "item": s.item, "object1": s.object1,
                                                          "object2": s.object2, "aspect": s.aspect})
             for s in summaries]
    with store.importing() as session:
        ids = add_submissions(session, directory / SUMMARIES, items, [s.line for s in summaries])
        count_submissions(summary, ids)
        id_of = {(s.file, s.item): sid for s, (sid, _) in zip(summaries, ids)}
        rows, origins = score_rows(scores, id_of)
        try:
            summary.scores_created, summary.scores_existing = session.add_scores(rows)
        except BatchConflict as exc:
            origin = origins[exc.index]
            raise ImportConflict(directory / SCORE_FILES[origin.source], origin.line, str(exc)) from None
        for judge, judgements in rubric_judgements(scores, id_of).items():
            result = session.add_judgements(name=f"import {directory.name} {judge}", source=directory.name,
                                            judge=judge, criteria=CRITERIA, rows=judgements)
            summary.add_judgements(judge, result)
    return timed(summary, started)
