"""The seams harness's stores: awkward sets of verdicts, drawn by hypothesis, written as battle
files and imported the way `joust import battles` imports one (no worker, no judge call).

A store is a list of `Verdict`s, each with everything the harness's own recomputation needs
(who, on which question and turn, which calls, what outcome), so the expected figures never come
from joust. The shapes drawn are the ones the boards, effects and judge health must get right:
groups of systems never compared, a model that wins everything, players with one or two
matches, ties only, imported verdicts without calls (MT-Bench's `tie (inconsistent)`), one-call
votes, human votes on the very pairs an LLM judge judged, several judges, a second turn; the
judges' rows with or without question text, the votes in the judges' file or in their own
(`--human`, a `voter` column), as issue 24's item 5 found them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from service.store import Store
from service.usecases.importers.battles import load_battles

MODELS = ("m0", "m1", "m2", "m3", "m4")
SCENARIOS = ("s0", "s1", "s2")
LLM_JUDGES = ("j0", "j1", "j2")  # filed as import/<name>
VOTERS = ("human/h0", "human/h1", "human/h2")
SHAPES = ("random", "disconnected", "dominant", "ties_only", "sparse")
# How a verdict's calls look: two calls in both orders; one call with its first side named
# ("one_a", "one_b") or unknown ("one"); no call at all, an inconsistent tie ("inconsistent").
KINDS = ("two", "two", "one", "one_a", "one_b", "inconsistent")
A, B, TIE = "A", "B", "TIE"
FLIP = {A: B, B: A, TIE: TIE}

System = tuple[str, str]


@dataclass(frozen=True)
class Verdict:
    """One row of the battle file. `r1` (and `r2`, the second order's, for `two`) are relative to
    side a. `judge` as joust files it (`import/j0`, `human/h0`)."""

    judge: str
    question: str
    turn: int
    a: System
    b: System
    kind: str
    r1: str
    r2: str = TIE

    @property
    def outcome(self) -> str:
        """The stored verdict relative to a: the orders' common verdict, else a tie."""
        if self.kind == "inconsistent":
            return TIE
        if self.kind == "two":
            return self.r1 if self.r1 == self.r2 else TIE
        return self.r1

    @property
    def consistent(self) -> bool:
        return self.kind != "inconsistent" and (self.kind != "two" or self.r1 == self.r2)

    @property
    def question_id(self) -> str:
        """As joust files it: a later turn is `<question>#turn<N>`."""
        return self.question if self.turn == 1 else f"{self.question}#turn{self.turn}"

    def row(self, *, text: bool = True, voter: bool = False) -> dict[str, object]:
        """The battle-file row (JSONL), outputs included so the store holds real texts; without
        `text`, no question text (joust files a placeholder); with `voter`, the voter's name in a
        `voter` column, for `joust import battles --human`."""
        names = {A: "model_a", B: "model_b", TIE: "tie"}
        row: dict[str, object] = {
            "question_id": self.question, "turn": self.turn,
            "model_a": self.a[0], "scenario_a": self.a[1], "model_b": self.b[0], "scenario_b": self.b[1],
            "output_a": output(self.a, self.question_id), "output_b": output(self.b, self.question_id),
            **({"voter": self.judge.removeprefix("human/")} if voter else {"judge": self.judge}),
            **({"question": f"What about {self.question}?"} if text else {}),
        }
        if self.kind == "inconsistent":
            row["winner"] = "tie (inconsistent)"
        elif self.kind == "two":
            # positional winners: A is the side shown first; the first call shows a, the second b
            calls = [{"first": "a", "winner": self.r1, "reason": "first order"},
                     {"first": "b", "winner": FLIP[self.r2], "reason": "second order"}]
            row.update(winner=names[self.outcome], calls=json.dumps(calls), consistent=self.consistent)
        else:
            row["winner"] = names[self.r1]
            if self.kind != "one":
                row["first"] = self.kind[-1]
        return row


def output(system: System, question_id: str) -> str:
    """A submission's text: its length differs by system (the longer-wins rate has something to count)."""
    model, scenario = system
    padding = 5 * MODELS.index(model) + 2 * SCENARIOS.index(scenario)
    return f"{model} under {scenario} on {question_id}: " + "x" * padding


@dataclass(frozen=True)
class StoreSpec:
    """A drawn store: its shape (for the reader of a failure), its verdicts in file order, and
    how they are filed: `placeholders`, the judges' rows without question text (the votes carry it,
    in the judges' file or in their own: a row without the text takes the one the file or the store
    gives its question, and a file with it fills it in); `votes_apart`, the human votes in a file of
    their own, imported with `--human`."""

    shape: str
    verdicts: tuple[Verdict, ...]
    placeholders: bool = False
    votes_apart: bool = False

    def judges(self) -> list[str]:
        return sorted({v.judge for v in self.verdicts})

    def files(self, folder: Path) -> list[tuple[Path, bool]]:
        """The battle files written in `folder`, each with whether it holds human votes."""
        def voted(v: Verdict) -> bool:
            return v.judge.startswith("human/")

        def text(v: Verdict) -> bool:  # the votes state the question's text, the judges' rows maybe not
            return not self.placeholders or voted(v)

        apart = [v for v in self.verdicts if voted(v)] if self.votes_apart else []
        kept = [v for v in self.verdicts if v not in apart]
        found = [(folder / "battles.jsonl", kept, False)] + ([(folder / "votes.jsonl", apart, True)] if apart else [])
        for path, rows, human in found:
            path.write_text("".join(json.dumps(v.row(text=text(v), voter=human)) + "\n" for v in rows),
                            encoding="utf-8")
        return [(path, human) for path, _, human in found]

    def load(self, store: Store, folder: Path) -> None:
        """Import the verdicts as `joust import battles FILE` (`--human` for a file of votes) does."""
        for path, human in self.files(folder):
            load_battles(store, path, human=human)


@st.composite
def stores(draw: st.DrawFn, shape: str | None = None) -> StoreSpec:
    """An awkward store (see the module docstring) of `shape`, or of any."""
    shape = shape or draw(st.sampled_from(SHAPES))
    scenarios = SCENARIOS[:draw(st.integers(1, len(SCENARIOS)))]
    # two halves of the systems need four of them: four models under one scenario, or two under two
    models = MODELS[:draw(st.integers(4 if shape == "disconnected" and len(scenarios) == 1 else 2, len(MODELS)))]
    systems = [(m, s) for m in models for s in scenarios]
    judges = [f"import/{j}" for j in LLM_JUDGES[:draw(st.integers(1, len(LLM_JUDGES)))]]
    # disconnected: two halves of the systems, never compared with each other, each judged
    halves = [systems[::2], systems[1::2]] if shape == "disconnected" else [systems]
    count = draw(st.integers(1, 3)) if shape == "sparse" else draw(st.integers(2, 18))
    later_turn = draw(st.booleans())
    verdicts: list[Verdict] = []
    for n in range(count):
        half = halves[n] if n < len(halves) else draw(st.sampled_from(halves))
        a, b = draw(st.lists(st.sampled_from(half), min_size=2, max_size=2, unique=True))
        kind = draw(st.sampled_from(KINDS))
        r1, r2 = draw(st.sampled_from((A, B, TIE))), draw(st.sampled_from((A, B, TIE)))
        if shape == "ties_only":
            kind, r1, r2 = (kind, TIE, TIE) if kind != "one_a" else ("inconsistent", TIE, TIE)
        elif shape == "dominant" and models[0] in (a[0], b[0]) and a[0] != b[0]:
            r1 = r2 = A if a[0] == models[0] else B  # the first model wins every game it plays
            kind = "two" if kind == "inconsistent" else kind
        turn = 2 if later_turn and draw(st.integers(0, 3)) == 0 else 1
        verdicts.append(Verdict(draw(st.sampled_from(judges)), f"q{draw(st.integers(0, 3))}", turn, a, b, kind, r1, r2))
    voters = VOTERS[:draw(st.integers(0, len(VOTERS)))]
    for voter in voters:  # human votes on pairs the LLM judges judged, one per voter and pair
        voted: set[tuple[str, frozenset[System]]] = set()
        for v in draw(st.lists(st.sampled_from(verdicts), max_size=6)):
            pair = (v.question_id, frozenset((v.a, v.b)))
            if pair in voted:
                continue
            voted.add(pair)
            kind = draw(st.sampled_from(("one", "one_a", "one_b")))
            verdicts.append(Verdict(voter, v.question, v.turn, v.a, v.b, kind, draw(st.sampled_from((A, B, TIE)))))
    return StoreSpec(shape, tuple(verdicts), placeholders=draw(st.booleans()),
                     votes_apart=bool(voters) and draw(st.booleans()))
