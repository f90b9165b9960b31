"""Battle files: who beat whom, as Chatbot Arena, LLMFAO, MT-Bench or `joust export judgements`
write them, in CSV, JSON (an array of objects) or JSONL. The columns and what each means:
`service.usecases.importers.columns`; a column (or JSON key) the importer does not understand is named in
the summary as ignored.

Each row becomes one judgement, in file order (so online Elo replays it as written), of its
judge: `--judge NAME` files every row under `import/NAME` (`human/NAME` with `--human`);
otherwise a row's `judge` or `voter` names its own judge: `human/<name>` with `--human`; as
written when the name is a human's (`human/...`) or the row has a `template_version` (an export
row: the judgement was joust's, a live judge's like `anthropic/...` or an import's); any other
name as `import/<name>`. Rows without one are the file's, `import/<file name>`. Human votes are
what judge health compares every other judge with.

Rows with outputs (an export) restore real submissions; rows without carry a fixed placeholder
output, which live tournaments never pair. With `--human`, a side without an output whose
(question_id, model, scenario) is already stored takes that submission (the votes were cast on
joust's own outputs) instead of clashing with it. A row's `key` (an export's) is its identity,
else a hash of the judge, the file's name and the row: importing the same file again adds nothing.

A row without question text (Chatbot Arena's have none) is filed with its question id as the
text. So that files of two judges on the same questions, one with the text and one without, meet
on one board (`_questions`): such a row takes the text its submission already holds, else the one
text the file gives that question id elsewhere, else the one real text stored for it; and a file
that gives a question's text fills it in, in the same transaction, where an import stored only
the id (`ImportSession.fill_questions`; the summary counts them). A stored text of its own is
never replaced: a row that gives another is refused, naming its line.

A judge that gave an inconsistent verdict in the file (`tie (inconsistent)`) judged each pair in
both orders, so its rows without a stated order are filed with order `both` (`both_orders`):
judge health then counts their consistency as stored.
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from leaderboard.judge_health import HUMAN_PREFIX
from leaderboard.keys import content_hash
from leaderboard.types import PLACEHOLDER_OUTPUT, OrderPolicy
from service.store import NewSubmission, Store
from service.store.imports import TEMPLATE_VERSION, ImportedJudgement, ImportSession
from service.usecases.importers.columns import ignored
from service.usecases.importers.common import (
    ImportConflict,
    ImportFormatError,
    ImportSummary,
    add_submissions,
    count_submissions,
    csv_header,
    detect_format,
    read_records,
    row_key,
    timed,
)
from service.usecases.importers.verdicts import SIDES, BattleRow, Side, read_row
from service.usecases.progress import tracked

PLACEHOLDER = PLACEHOLDER_OUTPUT  # live tournaments never pair these (service.store.submissions)
PLACEHOLDER_HASH = content_hash(PLACEHOLDER_OUTPUT)
JUDGE_PREFIX = "import/"


@dataclass(frozen=True)
class BattleFile:
    """The verdicts of a file, and the columns it has that the importer does not understand."""

    rows: list[BattleRow]
    ignored: list[str]


def battle_judge(path: Path, judge: str | None, *, human: bool = False) -> str:
    """The judge the battles are filed under: `import/<name>`, or `human/<name>` for human votes
    (judge health compares the other judges with them); the name from --judge or the file."""
    return _filed(judge or path.stem, human)


def row_judge(row: BattleRow, *, human: bool) -> str:
    """The judge a row's own judge or voter column names (see the module docstring)."""
    name = row.judge or ""
    if not human and (name.startswith(HUMAN_PREFIX) or row.template_version is not None):
        return name
    return _filed(name, human)


def _filed(name: str, human: bool) -> str:
    name = name.strip()
    if human:
        return name if name.startswith(HUMAN_PREFIX) else HUMAN_PREFIX + name.removeprefix(JUDGE_PREFIX)
    return name if name.startswith(JUDGE_PREFIX) else JUDGE_PREFIX + name


def parse_battles(path: Path, fmt: str | None = None, *, progress: bool = False) -> BattleFile:
    """Every row of a battle file, validated; raises ImportFormatError naming the line.
    `progress` counts the rows read on a bar on stderr."""
    fmt = detect_format(path, fmt)
    if fmt in ("csv", "tsv") and path.is_file():
        _check_header(path, csv_header(path, "\t" if fmt == "tsv" else ","))
    columns: set[str] = set()
    rows = []
    for record in tracked(read_records(path, fmt), show=progress, desc=f"reading {path.name}"):
        columns.update(record.fields)
        rows.append(read_row(path, record))
    if not rows:
        raise ImportFormatError(path, None, "no battles in the file")
    return BattleFile(rows, ignored(columns))


def _check_header(path: Path, header: list[str]) -> None:
    if "winner" not in header:
        raise ImportFormatError(path, 1, f"missing column 'winner' (columns: {', '.join(header)})")
    if not any(a in header and b in header for a, b, _ in SIDES):
        raise ImportFormatError(path, 1, "missing the two sides: expected columns model_a and model_b "
                                         f"(or left and right, or model_x and model_y); columns: {', '.join(header)}")


def load_battles(
    store: Store, path: Path, *, judge: str | None = None, fmt: str | None = None, human: bool = False,
    progress: bool = False,
) -> ImportSummary:
    """Import a battle file in one transaction: submissions, then one judgement per row;
    `human` files the verdicts as human votes and matches them to stored submissions."""
    started = time.perf_counter()
    path = Path(path)
    parsed = parse_battles(path, fmt, progress=progress)
    rows = parsed.rows
    fallback = battle_judge(path, judge, human=human)
    judges = [row_judge(row, human=human) if row.judge and not judge else fallback for row in rows]
    _check_keys(path, rows, judges)
    rows = both_orders(rows, judges)
    summary = ImportSummary(source=path.name, ignored_columns=parsed.ignored)
    with store.importing() as session:
        rows, fills = _questions(session, rows)
        summary.questions_filled = session.fill_questions(fills)
        sides = _submissions(session, path, rows, human, summary)
        verdicts = [_judgement(name, path, row, a, b) for name, row, (a, b) in zip(judges, rows, sides)]
        results = session.add_verdicts(name=f"import {path.name}", source=path.name, rows=verdicts)
    for (name, _), result in results.items():
        summary.add_judgements(name, result)
    return timed(summary, started)


def both_orders(rows: list[BattleRow], judges: list[str]) -> list[BattleRow]:
    """A judge whose verdicts in the file include an inconsistent one (MT-Bench's `tie
    (inconsistent)`) judged every pair in both orders: its rows that state no order policy and
    show no call's position are filed with order `both`, so judge health counts its consistent
    verdicts beside the inconsistent ones (`leaderboard.judge_health.orders_agreed`). Only rows that
    are not joust's (no `template_version`): an export's row says its order as it was stored."""
    raw = [row.template_version is None for row in rows]
    two = {name for row, name, own in zip(rows, judges, raw) if own and not row.consistent}
    return [replace(row, order=OrderPolicy.BOTH)
            if own and name in two and row.order is None and all(c.first is None for c in row.calls) else row
            for row, name, own in zip(rows, judges, raw)]


def _check_keys(path: Path, rows: list[BattleRow], judges: list[str]) -> None:
    """Rows sharing a key are one judgement (counted for several pairs): one judge, one criteria."""
    seen: dict[str, tuple[int, str, str]] = {}
    for row, name in zip(rows, judges):
        if row.key is None:
            continue
        line, first_judge, criteria = seen.setdefault(row.key, (row.line, name, row.criteria))
        if (first_judge, criteria) != (name, row.criteria):
            raise ImportFormatError(path, row.line, f"key {row.key[:12]}... is also on line {line}, as another "
                                                    f"judge's or criteria's ({first_judge}, {criteria})")


def _questions(session: ImportSession, rows: list[BattleRow]) -> tuple[list[BattleRow], dict[int, str]]:
    """Each row with the question text of each side resolved, and the texts to fill in: stored
    submission id -> the text the file gives its question, for the submissions an import filed
    without one.

    A side's text equal to its question id is no text (a row without one, or an export's row of
    a submission stored without one). Such a side takes, in order: its stored submission's text
    (after the fill; so it matches), the one text the file gives the question elsewhere, the one
    real text the question's stored submissions hold; else it keeps the id. A question the file
    (or, for the last step, the store) gives two texts is left as it was: which text a row
    without one meant cannot be told, and a row with one that meets another is refused where
    the submissions are stored."""
    given: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        for s in (0, 1):
            if row.question_of(s) != row.question_id:
                given[row.question_id].add(row.question_of(s))
    stored = session.stored_questions({row.question_id for row in rows})
    in_file = {q: next(iter(texts)) for q, texts in given.items() if len(texts) == 1}
    fills = {q: in_file[q] for q in sorted({key[0] for key, found in stored.items() if found.fillable} & set(in_file))}
    held: dict[tuple[str, str, str], str] = {
        key: fills[key[0]] if found.fillable and key[0] in fills else found.question for key, found in stored.items()}
    real: dict[str, set[str]] = defaultdict(set)
    for key, text in held.items():
        if text != key[0]:
            real[key[0]].add(text)
    known = {q: texts.pop() for q, texts in real.items() if len(texts) == 1} | in_file

    def text(row: BattleRow, s: int, side: Side) -> str:
        own = row.question_of(s)
        if own != row.question_id:
            return own
        return held.get((row.question_id, side.model, side.scenario)) or known.get(row.question_id, own)

    resolved = []
    for row in rows:
        a, b = text(row, 0, row.a), text(row, 1, row.b)
        same = (a, None if b == a else b) == (row.question, row.question_b)
        resolved.append(row if same else replace(row, question=a, question_b=None if b == a else b))
    return resolved, {found.id: fills[key[0]] for key, found in stored.items() if found.fillable and key[0] in fills}


def _submissions(
    session: ImportSession, path: Path, rows: list[BattleRow], human: bool, summary: ImportSummary
) -> list[tuple[int, int]]:
    """The (a, b) submission ids of each row, counted in the summary: with --human, a stored
    submission for a side without an output or with the same one; else added (a placeholder
    when the row has no output)."""
    keys = [[(row.question_id, side.model, side.scenario) for side in (row.a, row.b)] for row in rows]
    stored = session.find_submissions(k for pair in keys for k in pair) if human else {}
    items, lines, slots = [], [], []
    ids: list[list[tuple[int, bool]]] = [[(0, False), (0, False)] for _ in rows]
    for i, row in enumerate(rows):
        for s, side in enumerate((row.a, row.b)):
            if keys[i][s] in stored:
                found, output_hash = stored[keys[i][s]]
                if side.output is not None and content_hash(side.output) != output_hash:
                    raise ImportConflict(path, row.line, f"submission {found} {_named(keys[i][s])} already holds a "
                                                         "different output: the vote was cast on another text")
                ids[i][s] = (found, False)
                continue
            items.append(NewSubmission(question_id=row.question_id, question=row.question_of(s), model=side.model,
                                       scenario=side.scenario, output=side.output or PLACEHOLDER,
                                       metadata={"import": path.name}))
            lines.append(row.line)
            slots.append((i, s))
    try:
        added = add_submissions(session, path, items, lines)
    except ImportConflict as exc:
        if human or not any(side.output is None for row in rows if row.line == exc.line for side in (row.a, row.b)):
            raise
        raise ImportConflict(path, exc.line, f"{exc.message}; a side without an output (output_a, output_b) is a "
                                             "placeholder: import human votes cast on the stored outputs with "
                                             "--human to file them on those submissions") from None
    for (i, s), found in zip(slots, added):
        ids[i][s] = found
    count_submissions(summary, [side for pair in ids for side in pair])
    if human:
        real = {k for k, (_, output_hash) in stored.items() if output_hash != PLACEHOLDER_HASH}
        summary.votes = len(rows)
        summary.matched_votes = sum(all(k in real for k in pair) for pair in keys)
    return [(a[0], b[0]) for a, b in ids]


def _named(key: tuple[str, str, str]) -> str:
    return f"(question_id={key[0]!r}, model={key[1]!r}, scenario={key[2]!r})"


def _judgement(judge: str, path: Path, row: BattleRow, a_id: int, b_id: int) -> ImportedJudgement:
    """The row as a stored verdict: each call's `first` as a submission id (None when unknown)."""
    calls = [{"first": {"a": a_id, "b": b_id}.get(call.first or ""), **call.fields} for call in row.calls]
    key = row.key or row_key("battle", judge, path.name, row.line, row.question_id, row.a.model, row.a.scenario,
                             row.b.model, row.b.scenario, row.raw_winner)
    return ImportedJudgement(key=key, a_id=a_id, b_id=b_id, outcome=row.outcome, calls=calls,
                             consistent=row.consistent, judge=judge, criteria=row.criteria,
                             template_version=row.template_version or TEMPLATE_VERSION, order=row.order,
                             input_tokens=row.input_tokens, output_tokens=row.output_tokens,
                             cost_usd=row.cost_usd, created_at=row.created_at)
