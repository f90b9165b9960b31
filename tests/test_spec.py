"""leaderboard/spec.py directly: a tournament's spec is parsed once from the JSON joust stores,
refusing what it does not know (a misspelt key never passes as its default), and written back
in the layout joust has always stored, so no row migrates and the API shows the same `spec`."""
from __future__ import annotations

import dataclasses
import json

import pytest

from leaderboard.spec import _READERS, ROUND_SIZE, RunSpec, SpecError
from leaderboard.types import Delivery, Level, Mode, OrderPolicy

# Specs as joust stored them before the spec was typed (service.web.routes.tournaments.build_spec,
# the scheduler's "rerun", the anchored "anchor_ratings", the importers' own), byte for byte.
BASE = {"budget": None, "criteria": "overall", "delivery": "live", "judge": "anthropic/claude-sonnet-4-5",
        "mode": "round_robin", "models": None, "opponents": None, "order": "both", "questions": None, "rpm": None,
        "scenarios": None, "seed": None, "tpm": None}
STORED = [
    BASE,
    {**BASE, "mode": "sampled", "opponents": 3, "seed": 1234, "models": ["a", "b"], "budget": 2.5, "order": "single"},
    {**BASE, "mode": "adaptive", "level": "model", "round_size": 20, "max_calls": 400, "target_ci_width": 150.0},
    {**BASE, "mode": "adaptive", "level": "model+scenario", "round_size": 8, "max_calls": None,
     "target_ci_width": None, "rerun": True, "delivery": "batch", "rpm": 50.0, "tpm": 40000.0},
    {**BASE, "mode": "anchored", "level": "scenario", "anchors": ["a", "b", "c"],
     "anchor_ratings": {"a": 1012.5, "b": 1000.0, "c": 987.5}, "criteria": "compqa", "scenarios": ["terse"]},
    {"criteria": "overall", "judge": "import/crowd", "mode": "import", "source": "votes.csv"},
    {"criteria": "compqa", "judge": "rubric/human", "layer": 2, "mode": "import", "source": "cqa"},
]


@pytest.mark.parametrize("stored", STORED, ids=lambda s: f"{s['mode']}")
def test_a_stored_spec_reads_and_writes_back_unchanged(stored: dict) -> None:
    text = json.dumps(stored, sort_keys=True)
    spec = RunSpec.from_json(text)
    assert spec.to_json() == text
    assert RunSpec.from_json(spec.to_json()) == spec


def test_fields_are_typed_and_defaulted_once() -> None:
    spec = RunSpec.from_json(json.dumps(STORED[3]))
    assert (spec.mode, spec.level, spec.delivery, spec.order) == (Mode.ADAPTIVE, Level.SYSTEM, Delivery.BATCH,
                                                                  OrderPolicy.BOTH)
    assert (spec.adaptive, spec.batch, spec.rerun, spec.round_size, spec.calls_per_judgement) == (True, True, True, 8, 2)
    anchored = RunSpec.from_json(json.dumps(STORED[4]))
    assert anchored.anchors == ("a", "b", "c") and dict(anchored.anchor_ratings or {}) == {"a": 1012.5, "b": 1000.0,
                                                                                           "c": 987.5}
    bare = RunSpec.from_json('{"judge": "offline/rubric"}')
    assert bare == RunSpec(judge="offline/rubric")
    assert (bare.mode, bare.order, bare.criteria, bare.level, bare.round_size, bare.delivery, bare.models) == (
        Mode.ROUND_ROBIN, OrderPolicy.BOTH, "overall", Level.MODEL, ROUND_SIZE, Delivery.LIVE, None)
    assert bare.calls_per_judgement == 2 and RunSpec(judge="x/y", order="single").calls_per_judgement == 1
    # an option unset and stored as null is its default
    assert RunSpec.from_dict({"judge": "x/y", "level": None, "round_size": None, "delivery": None}) == RunSpec("x/y")


def test_a_spec_is_never_changed_in_place() -> None:
    spec = RunSpec(judge="x/y", models=["a"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.rerun = True  # type: ignore[misc]
    again = spec.with_(rerun=True)
    assert (spec.rerun, again.rerun, again.models) == (False, True, ("a",))
    assert json.loads(again.to_json())["rerun"] is True and "rerun" not in json.loads(spec.to_json())


@pytest.mark.parametrize(("stored", "names"), [
    ({"judge": "x/y", "scenerios": ["a"]}, "'scenerios'"),  # a misspelt filter
    ({"judge": "x/y", "max_call": 5}, "'max_call'"),
    ({"mode": "round_robin"}, "'judge' is missing"),
    ({"judge": "x/y", "budget": "5"}, "'budget': expected a finite number"),
    ({"judge": "x/y", "seed": 1.5}, "'seed': expected an integer"),
    ({"judge": "x/y", "round_size": True}, "'round_size': expected an integer"),
    ({"judge": "x/y", "models": "a"}, "'models': expected a list of names"),
    ({"judge": "x/y", "order": "twice"}, "'order': 'twice' is not one of 'both', 'single'"),
    ({"judge": "x/y", "mode": "swiss"}, "'mode': 'swiss' is not one of"),
    ({"judge": "", "mode": "round_robin"}, "'judge': expected a non-empty string"),
    ({"judge": "x/y", "anchor_ratings": {"a": "high"}}, "'anchor_ratings': expected a finite number"),
    ({"judge": "x/y", "rerun": 1}, "'rerun': expected true or false"),
])
def test_what_joust_cannot_read_is_refused_by_name(stored: dict, names: str) -> None:
    with pytest.raises(SpecError, match="tournament spec") as info:
        RunSpec.from_json(json.dumps(stored))
    assert names in str(info.value)


def test_not_json_or_not_an_object_is_refused() -> None:
    for text in ("{", "[]", '"judge"'):
        with pytest.raises(SpecError):
            RunSpec.from_json(text)


def test_every_field_has_its_reader() -> None:
    """A field added to RunSpec without a reader could be written but never read back."""
    assert set(_READERS) == {f.name for f in dataclasses.fields(RunSpec)}
