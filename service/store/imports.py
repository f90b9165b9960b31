"""Bulk imports: submissions, keyed judgements with their matches already resolved, rubric scores.

An import is one transaction (`Imports.importing()`), so a file that turns out bad half-way stores
nothing. Everything goes in with `executemany`, never a statement per row: LLMFAO's 8,931 votes
or the 65,000 rubric-derived judgements of Comparative-QA load in seconds. A session's
judgement writes are in `imported_judgements`.

Imported judgements get what a worker's judgement gets: a key (so re-importing is a no-op), a
tournament (mode "import", status done), and one match each, stamped with `seq` from the
`resolved` counter (a block reserved in the same transaction) and `counted` as `resolve_match`
stamps it. A file may hold several verdicts on the same two submissions (LLMFAO: up to five
crowd workers per pair), but a tournament holds one match per ordered pair, so the k-th repeat
goes to the k-th "layer": a child tournament of the import (parent_id), which every
tournament-scoped read already includes.

A row may name its own judge and criteria (a file of several judges, a vote per voter): each
(judge, criteria) gets its own import tournament, while the `seq` block follows the file's
order across them, so every board, pooled or per judge, replays the file as written. A key
repeated in one import for another pair of submissions (an exported judgement that counted for
two pairs with the same texts) adds a match on the judgement it names, as a worker's cache hit
does; a key already stored adds nothing.
"""
from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import and_, select, update
from sqlalchemy.engine import Connection

from leaderboard.keys import content_hash
from leaderboard.turns import turn_of

from . import schema as s
from .base import Conflict, Database, NewSubmission
from .imported_judgements import TEMPLATE_VERSION as TEMPLATE_VERSION  # re-exported: importers take it from here
from .imported_judgements import ImportedJudgement as ImportedJudgement  # re-exported: importers take it from here
from .imported_judgements import JudgementImport as JudgementImport  # re-exported: importers take it from here
from .imported_judgements import JudgementWriter, _chunks

SCORE_GROUPS = ("model", "scenario", "question_id")


class BatchConflict(Conflict):
    """Item `index` of a batch clashes with what is stored (or with an earlier item)."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True)
class StoredQuestion:
    """A stored submission's question text; `fillable`: an import stored it without one (its text
    is its question id), so a file that gives the text may fill it in (`fill_questions`)."""

    id: int
    question: str
    fillable: bool


@dataclass(frozen=True)
class NewScore:
    """One judge's rubric score of one submission; `detail` holds the per-criterion values.

    When the same judge scored the same submission several times (repeated human ratings),
    `detail["evaluations"]` lists each evaluation's total and `total` is their mean; the
    statistics count every evaluation.
    """

    submission_id: int
    judge: str
    criteria: str
    total: float
    detail: dict = field(default_factory=dict)


class ImportSession(JudgementWriter):
    """The writes of one import, inside one open transaction (its judgements': `JudgementWriter`)."""

    def __init__(self, conn: Connection, now: float) -> None:
        self.conn = conn
        self.now = now

    # ---- submissions ------------------------------------------------------------------

    def _stored(self, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], tuple[int, str, str]]:
        """(question_id, model, scenario) -> (id, question_hash, output_hash) for stored keys."""
        t = s.submissions
        wanted = set(keys)
        found: dict[tuple[str, str, str], tuple[int, str, str]] = {}
        for qids in _chunks(sorted({k[0] for k in wanted})):
            rows = self.conn.execute(
                select(t.c.id, t.c.question_id, t.c.model, t.c.scenario, t.c.question_hash, t.c.output_hash)
                .where(t.c.question_id.in_(qids))
            )
            for r in rows:
                key = (r.question_id, r.model, r.scenario)
                if key in wanted:
                    found[key] = (r.id, r.question_hash, r.output_hash)
        return found

    def find_submissions(self, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], tuple[int, str]]:
        """(question_id, model, scenario) -> (id, output hash) for the keys that are stored."""
        return {key: (found[0], found[2]) for key, found in self._stored(keys).items()}

    def stored_questions(self, question_ids: Iterable[str]) -> dict[tuple[str, str, str], StoredQuestion]:
        """(question_id, model, scenario) -> its question text, for every stored submission of
        the questions, each marked `fillable` when its text only stands in for one an import
        was not given (see `fill_questions`)."""
        t = s.submissions
        found: dict[tuple[str, str, str], StoredQuestion] = {}
        for qids in _chunks(sorted(set(question_ids))):
            rows = self.conn.execute(select(t.c.id, t.c.question_id, t.c.model, t.c.scenario, t.c.question,
                                            t.c.metadata).where(t.c.question_id.in_(qids)))
            for r in rows:
                found[(r.question_id, r.model, r.scenario)] = StoredQuestion(
                    r.id, r.question, r.question == r.question_id and _imported(r.metadata))
        return found

    def fill_questions(self, texts: Mapping[int, str]) -> int:
        """Give each submission `texts` names (by id; found `fillable` by `stored_questions`) its
        question text, in this transaction; one whose text is no longer its question id (a text
        of its own) keeps it. Returns how many changed.

        Why this is safe: `question_hash` only says whether a submission arriving under the same
        key holds the same question, so it follows the text. No stored key is derived from a
        submission's question text: an imported judgement's key is the file's `key` or a hash of
        its row (`service.usecases.importers.battles`), and a live judge's judgement key (question text,
        outputs...) is computed from the submissions each time a pair is judged or planned, never
        kept apart from the judgement. A judgement a live judge made of a real output filled here
        keeps its key and its matches; the next tournament keys the pair with the real question,
        so it is judged again once, with the question the judge should have been shown. Boards
        read no question text. The gaming flags' text pass of a running server is redone when a
        new submission arrives (`Store.submission_mark`), so its `copies_question` sees the
        filled text from then on."""
        t = s.submissions
        changed = 0
        by_text: dict[str, list[int]] = defaultdict(list)
        for submission_id, text in texts.items():
            by_text[text].append(submission_id)
        for text, ids in by_text.items():
            for chunk in _chunks(sorted(ids)):
                changed += self.conn.execute(update(t).where(t.c.id.in_(chunk), t.c.question == t.c.question_id)
                                             .values(question=text, question_hash=content_hash(text))).rowcount
        return changed

    def add_submissions(self, items: Sequence[NewSubmission]) -> list[tuple[int, bool]]:
        """(id, created) per item, with `add_submissions`' rule: same content, same id; a
        different question or output under a stored key raises BatchConflict (naming the item)."""
        keys = [(i.question_id, i.model, i.scenario) for i in items]
        hashes = [(content_hash(i.question), content_hash(i.output)) for i in items]
        stored = self._stored(keys)
        fresh: dict[tuple[str, str, str], int] = {}  # key -> index of the item that creates it
        rows: list[dict] = []
        for index, (item, key, (q_hash, o_hash)) in enumerate(zip(items, keys, hashes)):
            if key in stored:
                known = stored[key][1:]
            elif key in fresh:
                known = hashes[fresh[key]]
            else:
                fresh[key] = index
                rows.append(_submission_row(item, q_hash, o_hash, self.now))
                continue
            if known != (q_hash, o_hash):
                what = "question" if known[0] != q_hash else "output"
                where = f"submission {stored[key][0]}" if key in stored else f"item {fresh[key] + 1} of this import"
                texts = ""
                if what == "question":
                    held = self._question(stored[key][0]) if key in stored else items[fresh[key]].question
                    texts = f": {_excerpt(held)}, where this one says {_excerpt(item.question)}"
                raise BatchConflict(
                    index,
                    f"{where} (question_id={key[0]!r}, model={key[1]!r}, scenario={key[2]!r}) "
                    f"already holds a different {what}{texts}",
                )
        if rows:
            self.conn.execute(s.submissions.insert(), rows)
            stored.update(self._stored(fresh))
        return [(stored[key][0], fresh.get(key) == index) for index, key in enumerate(keys)]

    def _question(self, submission_id: int) -> str:
        t = s.submissions
        return str(self.conn.execute(select(t.c.question).where(t.c.id == submission_id)).scalar_one())

    # ---- scores -----------------------------------------------------------------------

    def add_scores(self, rows: Sequence[NewScore]) -> tuple[int, int]:
        """Store scores once per (submission, judge, criteria): (created, existing). The same
        value again is a no-op; a different one raises BatchConflict."""
        sc = s.scores
        stored: dict[tuple[int, str, str], tuple[float, str]] = {}
        for ids in _chunks(sorted({r.submission_id for r in rows})):
            for r in self.conn.execute(
                select(sc.c.submission_id, sc.c.judge, sc.c.criteria, sc.c.total, sc.c.detail)
                .where(sc.c.submission_id.in_(ids))
            ):
                stored[(r.submission_id, r.judge, r.criteria)] = (r.total, r.detail)
        new: list[dict] = []
        for index, row in enumerate(rows):
            key = (row.submission_id, row.judge, row.criteria)
            value = (float(row.total), json.dumps(row.detail, sort_keys=True))
            if key in stored:
                if stored[key] != value:
                    raise BatchConflict(index, f"submission {key[0]} already has a different {key[1]} "
                                               f"{key[2]} score ({stored[key][0]} vs {value[0]})")
                continue
            stored[key] = value
            new.append({"submission_id": key[0], "judge": key[1], "criteria": key[2], "total": value[0],
                        "detail": value[1], "created_at": self.now})
        if new:
            self.conn.execute(sc.insert(), new)
        return len(new), len(rows) - len(new)


def _imported(metadata: str | None) -> bool:
    """Whether a submission's metadata says an import stored it (`{"import": <file name>}`)."""
    try:
        found = json.loads(metadata or "{}")
    except ValueError:
        return False
    return isinstance(found, dict) and "import" in found


def _excerpt(text: str, limit: int = 60) -> str:
    """A text for an error message: quoted, cut to `limit` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _submission_row(item: NewSubmission, q_hash: str, o_hash: str, now: float) -> dict:
    return {"question_id": item.question_id, "question": item.question, "model": item.model,
            "scenario": item.scenario, "output": item.output, "output_hash": o_hash, "question_hash": q_hash,
            "metadata": json.dumps(item.metadata, sort_keys=True), "created_at": now,
            "turn": turn_of(item.question_id, item.metadata)}


class Imports(Database):
    """Bulk, transactional imports of submissions, judgements and scores; score statistics."""

    @contextmanager
    def importing(self) -> Iterator[ImportSession]:
        """One write transaction for a whole import: an exception inside stores nothing."""
        with self._write() as conn:
            yield ImportSession(conn, self._clock())

    def add_submissions_bulk(self, items: Sequence[NewSubmission]) -> list[tuple[int, bool]]:
        """`add_submissions` for large batches (executemany); raises BatchConflict."""
        with self.importing() as session:
            return session.add_submissions(items)

    def add_scores(self, rows: Sequence[NewScore]) -> tuple[int, int]:
        """Store rubric scores: (created, existing); raises BatchConflict on a different value."""
        with self.importing() as session:
            return session.add_scores(rows)

    def import_judgements(
        self, *, name: str, source: str, judge: str, criteria: str, rows: Sequence[ImportedJudgement],
    ) -> JudgementImport:
        """Store imported judgements with their resolved matches in one new tournament."""
        with self.importing() as session:
            return session.add_judgements(name=name, source=source, judge=judge, criteria=criteria, rows=rows)

    def score_means(
        self, judge: str, criteria: str, by: Sequence[str] = ("model", "scenario")
    ) -> list[dict]:
        """Mean, standard deviation (ddof=1, as pandas; NaN for one value) and n of a judge's
        scores per group of submissions, groups in sorted order."""
        unknown = set(by) - set(SCORE_GROUPS)
        if unknown:
            raise ValueError(f"score_means groups by {SCORE_GROUPS}, not {sorted(unknown)}")
        sc, t = s.scores, s.submissions
        query = (
            select(t.c.model, t.c.scenario, t.c.question_id, sc.c.total, sc.c.detail)
            .join(t, t.c.id == sc.c.submission_id)
            .where(and_(sc.c.judge == judge, sc.c.criteria == criteria))
        )
        groups: dict[tuple, list[float]] = defaultdict(list)
        with self._read() as conn:
            for r in conn.execute(query):
                groups[tuple(getattr(r, name) for name in by)].extend(_evaluations(r.total, r.detail))
        return [
            {**dict(zip(by, key)), "mean": statistics.fmean(values),
             "std": statistics.stdev(values) if len(values) > 1 else math.nan, "n": len(values)}
            for key, values in sorted(groups.items())
        ]


def _evaluations(total: float, detail: str) -> list[float]:
    """The totals a score row stands for: each evaluation when several, else its total."""
    evaluations = json.loads(detail).get("evaluations") if detail else None
    return [float(e["total"]) for e in evaluations] if evaluations else [float(total)]
