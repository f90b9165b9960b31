"""The judgement half of an import: keyed verdicts from a file, each stored with one resolved
match of an import tournament (a repeat of an ordered pair in a child layer), `seq` stamped in
the file's order (the rules: `imports`' docstring).

`JudgementWriter` holds these writes as the base of `imports.ImportSession`, apart from the
submissions and rubric scores an import also writes, which never touch matches or tournaments.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from leaderboard.spec import RunSpec
from leaderboard.types import MatchStatus, Mode, OrderPolicy, TournamentStatus, Winner

from . import schema as s

CHUNK = 500  # ids per IN (...) clause: well under every backend's bound-parameter limit
TEMPLATE_VERSION = "import"


@dataclass(frozen=True)
class ImportedJudgement:
    """A verdict from a file: `outcome` is relative to a; `calls` as a worker records them.

    `judge` and `criteria` None: the import's own. The rest is what the judgement row stores:
    `created_at` None is the time of the import; `order` None, an order that does not matter.
    """

    key: str
    a_id: int
    b_id: int
    outcome: Winner
    calls: list[dict]
    consistent: bool = True
    judge: str | None = None
    criteria: str | None = None
    template_version: str = TEMPLATE_VERSION
    order: OrderPolicy | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    created_at: float | None = None


@dataclass(frozen=True)
class JudgementImport:
    """What one `add_judgements` stored: the tournament (None when nothing was new) and counts."""

    tournament_id: int | None
    created: int
    existing: int
    layers: list[int] = field(default_factory=list)


def _chunks(values: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), CHUNK):
        yield values[start:start + CHUNK]


class JudgementWriter:
    """The judgement writes of one import, inside its open transaction (`conn`, stamped `now`):
    the base of `imports.ImportSession`, which sets both."""

    conn: Connection
    now: float

    def add_judgements(
        self, *, name: str, source: str, judge: str, criteria: str, rows: Sequence[ImportedJudgement],
    ) -> JudgementImport:
        """Store the judgements whose keys are new, in order, each with one resolved match of a
        new import tournament (repeats of an ordered pair in child layers), under `judge`."""
        return self.add_verdicts(name=name, source=source, rows=rows, judge=judge, criteria=criteria).get(
            (judge, criteria), JudgementImport(None, 0, 0))

    def add_verdicts(
        self, *, name: str, source: str, rows: Sequence[ImportedJudgement], judge: str | None = None,
        criteria: str = "overall",
    ) -> dict[tuple[str, str], JudgementImport]:
        """Store the verdicts not stored yet: each (judge, criteria) in an import tournament of its
        own (and its layers), the matches stamped in the rows' order. A row without a judge or
        criteria of its own takes `judge` and `criteria`. What each (judge, criteria) stored, in
        order of first appearance (see `imports`' docstring for keys seen twice)."""
        known = self._known_keys([r.key for r in rows])
        pairs: dict[str, set[tuple[int, int]]] = {}  # a key new in this import -> the pairs it counts for
        creating: list[ImportedJudgement] = []  # the first row of each new key
        # Per (judge, criteria): the rows given a match, each with its place among them (its seq).
        stored: dict[tuple[str, str], list[tuple[ImportedJudgement, int]]] = {}
        existing: dict[tuple[str, str], int] = defaultdict(int)
        placed = 0
        for row in rows:
            group = (row.judge or judge or "", row.criteria or criteria)
            if not group[0]:
                raise ValueError(f"judgement {row.key} names no judge")
            stored.setdefault(group, [])
            pair = (min(row.a_id, row.b_id), max(row.a_id, row.b_id))
            if row.key in known or pair in pairs.get(row.key, ()):
                existing[group] += 1
                continue
            if row.key not in pairs:
                creating.append(row)
            pairs.setdefault(row.key, set()).add(pair)
            stored[group].append((row, placed))
            placed += 1
        judgement_ids = self._insert_judgements(creating, judge, criteria)
        first_seq = self._reserve_seq(placed) if placed else 0
        results: dict[tuple[str, str], JudgementImport] = {}
        matches: list[dict] = []
        for (group_judge, group_criteria), group in stored.items():
            if not group:
                results[group_judge, group_criteria] = JudgementImport(None, 0, existing[group_judge, group_criteria])
                continue
            title = name if len(stored) == 1 else f"{name} ({group_judge}, {group_criteria})"
            base_spec = RunSpec(judge=group_judge, mode=Mode.IMPORT, criteria=group_criteria, source=source)
            layer_of = _layers([row for row, _ in group])
            tournaments = [self._tournament(title, base_spec, None)]
            for layer in range(1, max(layer_of) + 1):
                tournaments.append(self._tournament(f"{title} [layer {layer + 1}]", base_spec.with_(layer=layer + 1),
                                                    tournaments[0]))
            matches.extend(
                {"tournament_id": tournaments[layer], "a_id": row.a_id, "b_id": row.b_id, "status": MatchStatus.DONE,
                 "attempts": 0, "judgement_id": judgement_ids[row.key], "outcome": row.outcome.value,
                 "consistent": row.consistent, "enqueued_at": self.now, "started_at": self.now,
                 "finished_at": self.now, "seq": first_seq + place,
                 # No earlier match holds this judgement for this pair (its key is new here), so it counts.
                 "counted": True}
                for (row, place), layer in zip(group, layer_of))
            results[group_judge, group_criteria] = JudgementImport(
                tournaments[0], len(group), existing[group_judge, group_criteria], tournaments[1:])
        if matches:
            self.conn.execute(s.matches.insert(), matches)
        return results

    def _known_keys(self, keys: Sequence[str]) -> set[str]:
        j = s.judgements
        known: set[str] = set()
        for chunk in _chunks(sorted(set(keys))):
            known.update(self.conn.execute(select(j.c.key).where(j.c.key.in_(chunk))).scalars())
        return known

    def _output_hashes(self, ids: Iterable[int]) -> dict[int, str]:
        t = s.submissions
        found: dict[int, str] = {}
        for chunk in _chunks(sorted(set(ids))):
            rows = self.conn.execute(select(t.c.id, t.c.output_hash).where(t.c.id.in_(chunk)))
            found.update((r.id, r.output_hash) for r in rows)
        return found

    def _insert_judgements(
        self, rows: Sequence[ImportedJudgement], judge: str | None, criteria: str
    ) -> dict[str, int]:
        """Insert in one executemany; the ids come back by key."""
        j = s.judgements
        if not rows:
            return {}
        hashes = self._output_hashes(r.a_id for r in rows)
        missing = sorted({r.a_id for r in rows} - hashes.keys())
        if missing:
            raise ValueError(f"judgements name submissions that do not exist: {missing[:5]}")
        for r in rows:
            if r.a_id == r.b_id:
                raise ValueError(f"judgement {r.key} compares submission {r.a_id} with itself")
        self.conn.execute(j.insert(), [
            {"key": r.key, "judge": r.judge or judge, "criteria": r.criteria or criteria,
             "template_version": r.template_version, "order_policy": None if r.order is None else r.order.value,
             "a_id": r.a_id, "b_id": r.b_id, "a_hash": hashes[r.a_id], "outcome": r.outcome.value,
             "consistent": r.consistent, "calls": json.dumps(r.calls), "input_tokens": r.input_tokens,
             "output_tokens": r.output_tokens, "cost_usd": r.cost_usd,
             "created_at": self.now if r.created_at is None else r.created_at}
            for r in rows
        ])
        ids: dict[str, int] = {}
        for chunk in _chunks([r.key for r in rows]):
            found = self.conn.execute(select(j.c.key, j.c.id).where(j.c.key.in_(chunk)))
            ids.update((r.key, r.id) for r in found)
        return ids

    def _tournament(self, name: str, spec: RunSpec, parent_id: int | None) -> int:
        inserted = self.conn.execute(s.tournaments.insert().values(
            name=name[:255], spec=spec.to_json(), mode=spec.mode.value, status=TournamentStatus.DONE, created_at=self.now,
            started_at=self.now, finished_at=self.now, parent_id=parent_id,
        )).inserted_primary_key
        assert inserted is not None
        return int(inserted[0])

    def _reserve_seq(self, n: int) -> int:
        """Take n consecutive resolve sequence numbers at once; returns the first."""
        c = s.counters
        self.conn.execute(update(c).where(c.c.name == "resolved").values(value=c.c.value + n))
        last = int(self.conn.execute(select(c.c.value).where(c.c.name == "resolved")).scalar_one())
        return last - n + 1


def _layers(rows: Sequence[ImportedJudgement]) -> list[int]:
    """The layer of each row: how many earlier rows hold the same ordered pair."""
    seen: dict[tuple[int, int], int] = defaultdict(int)
    layers = []
    for r in rows:
        layers.append(seen[(r.a_id, r.b_id)])
        seen[(r.a_id, r.b_id)] += 1
    return layers
