"""GET /api/judgements (a judge's judgements behind a board's row or cell), GET /api/judgements/{id}
with `outputs=true`, and GET /api/submissions/{id}, on a real store (SQLite, then PostgreSQL)
holding imported judgements of two judges in three tournaments.

Every list is checked against an oracle written from the seeded rows (player names from
`leaderboard.players.player_of`), and against the boards themselves: the judgements listed for a
row's player are as many as the row's `matches`, for a matrix cell as many as its `battles`.
Both ways to a page (the walk along the judge's judgements and the seek through a player's
submissions) are run for every player query.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import pytest
from fastapi.testclient import TestClient

from leaderboard.players import player_of
from leaderboard.types import Level, Winner
from service.store import NewSubmission, Store, judgement_lists
from service.store.imports import ImportedJudgement
from tests.api_fixtures import store_of

JUDGE, OTHER = "anthropic/judge-x", "openai/judge-y"
# Two questions; q1 also holds two systems both named "x + y + z" (a model "x + y" with scenario
# "z", a model "x" with scenario "y + z"): one player at the system level, as the boards count it.
SYSTEMS = [(m, sc) for m in ("m1", "m2", "m3") for sc in ("s1", "s2")]
EDGE = [("x + y", "z"), ("x", "y + z")]
LEVELS = (Level.MODEL, Level.SCENARIO, Level.SYSTEM)


@dataclass(frozen=True)
class Sub:
    id: int
    question_id: str
    model: str
    scenario: str
    output: str


@dataclass(frozen=True)
class Seeded:
    """A stored judgement as the oracle knows it."""

    id: int
    judge: str
    tournament: int
    a: Sub
    b: Sub
    outcome: Winner
    consistent: bool


@dataclass(frozen=True)
class Seed:
    judgements: list[Seeded]  # in id order
    tournaments: tuple[int, int, int]  # OTHER's, then JUDGE's first and second

    def expected(self, judge: str = JUDGE, level: Level = Level.MODEL, player: str | None = None,
                 opponent: str | None = None, kind: str | None = None, question_id: str | None = None,
                 tournament: int | None = None) -> list[int]:
        """The ids the list should hold, newest first."""
        kept = []
        for j in reversed(self.judgements):
            a, b = player_of(j.a.model, j.a.scenario, level), player_of(j.b.model, j.b.scenario, level)
            if j.judge != judge or (tournament is not None and j.tournament != tournament):
                continue
            if question_id is not None and j.a.question_id != question_id:
                continue
            if kind == "inconsistent" and j.consistent or kind == "ties" and j.outcome is not Winner.TIE:
                continue
            if kind == "decided" and j.outcome is Winner.TIE:
                continue
            if player is not None and (a == b or player not in (a, b)):
                continue
            if opponent is not None and {a, b} != {player, opponent}:
                continue
            kept.append(j.id)
        return kept

    def by_id(self, judgement_id: int) -> Seeded:
        return next(j for j in self.judgements if j.id == judgement_id)


def verdicts(pairs: list[tuple[Sub, Sub]], start: int, judge: str) -> list[ImportedJudgement]:
    """One verdict per pair: outcomes A, B, TIE in turn, every fourth inconsistent."""
    return [ImportedJudgement(key=f"{judge}-{a.id}-{b.id}", a_id=a.id, b_id=b.id,
                              outcome=(Winner.A, Winner.B, Winner.TIE)[(start + i) % 3],
                              consistent=(start + i) % 4 != 0,
                              calls=[{"first": a.id, "winner": "A", "reason": f"reason {start + i}"}])
            for i, (a, b) in enumerate(pairs)]


def seed_store(store: Store) -> Seed:
    """OTHER's verdicts (one tournament), then JUDGE's in two tournaments, so JUDGE's is the latest
    tournament and its board the default one."""
    wanted = [("q1", m, sc) for m, sc in SYSTEMS + EDGE] + [("q2", m, sc) for m, sc in SYSTEMS]
    news = [NewSubmission(question_id=q, question=f"{q}?", model=m, scenario=sc,
                          output=f"{m}/{sc} on {q}" + "." * i, metadata={}) for i, (q, m, sc) in enumerate(wanted)]
    subs = [Sub(sid, n.question_id, n.model, n.scenario, n.output)
            for (sid, _), n in zip(store.add_submissions(news), news)]
    pairs = [(a, b) for q in ("q1", "q2") for a, b in combinations([s for s in subs if s.question_id == q], 2)]
    batches = [(OTHER, pairs[-5:]), (JUDGE, pairs[:20]), (JUDGE, pairs[20:])]
    judgements: list[Seeded] = []
    tournaments = []
    for n, (judge, chunk) in enumerate(batches):
        rows = verdicts(chunk, len(judgements), judge)
        done = store.import_judgements(name=f"import {n}", source="test", judge=judge, criteria="overall", rows=rows)
        assert done.tournament_id is not None
        tournaments.append(done.tournament_id)
        for row, (a, b) in zip(rows, chunk):
            found = store.find_judgement(row.key)
            assert found is not None
            judgements.append(Seeded(found.id, judge, done.tournament_id, a, b, row.outcome, row.consistent))
    assert [j.id for j in judgements] == sorted(j.id for j in judgements)
    return Seed(judgements, (tournaments[0], tournaments[1], tournaments[2]))


@pytest.fixture
def seed(client: TestClient) -> Seed:
    return seed_store(store_of(client))


@pytest.fixture(params=["seek", "walk"])
def plan(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both ways to a page, whatever the counts would choose."""
    monkeypatch.setattr(judgement_lists, "walks", lambda *_: request.param == "walk")
    yield request.param


def listed(client: TestClient, **params: Any) -> dict:
    response = client.get("/api/judgements", params={k: v for k, v in params.items() if v is not None})
    assert response.status_code == 200, response.text
    return response.json()


def ids(body: dict) -> list[int]:
    return [row["id"] for row in body["judgements"]]


def everything(client: TestClient, **params: Any) -> list[dict]:
    """Every page, following `next` from a small first page."""
    body = listed(client, limit=3, **params)
    rows = body["judgements"]
    while body["next"] is not None:
        response = client.get(body["next"])
        assert response.status_code == 200, response.text
        body = response.json()
        rows.extend(body["judgements"])
    return rows


# ---- the list ----------------------------------------------------------------------------------


def test_the_default_list_is_the_boards_judge_newest_first(client: TestClient, seed: Seed) -> None:
    body = listed(client)
    board = client.get("/api/leaderboard").json()
    assert (body["judge"], body["judge_chosen_by"]) == (board["judge"], board["judge_chosen_by"]) == (
        JUDGE, "latest tournament")
    assert ids(body) == seed.expected() and len(ids(body)) == 43 and body["next"] is None
    assert [o["judge"] for o in body["other_judges"]] == [OTHER]
    assert body["other_judges"][0]["board"] == f"/api/judgements?judge={OTHER.replace('/', '%2F')}&level=model"
    first = body["judgements"][0]
    j = seed.by_id(first["id"])
    assert first == {
        "id": j.id, "judge": JUDGE, "criteria": "overall", "question_id": j.a.question_id,
        "a": {"id": j.a.id, "model": j.a.model, "scenario": j.a.scenario, "output_chars": len(j.a.output)},
        "b": {"id": j.b.id, "model": j.b.model, "scenario": j.b.scenario, "output_chars": len(j.b.output)},
        "outcome": j.outcome.value, "consistent": j.consistent, "created_at": first["created_at"], "result": None,
    }
    other = listed(client, judge=OTHER)
    assert (other["judge"], other["judge_chosen_by"]) == (OTHER, "named")
    assert ids(other) == seed.expected(judge=OTHER) and len(ids(other)) == 5


@pytest.mark.parametrize("kind", ["inconsistent", "ties", "decided"])
def test_each_filter_keeps_its_judgements(client: TestClient, seed: Seed, kind: str) -> None:
    body = listed(client, filter=kind)
    assert ids(body) == seed.expected(kind=kind) and body["judgements"]
    outcomes = {row["outcome"] for row in body["judgements"]}
    assert outcomes == {"inconsistent": {"A", "B", "TIE"}, "ties": {"TIE"}, "decided": {"A", "B"}}[kind]
    assert all(row["consistent"] is False for row in body["judgements"]) == (kind == "inconsistent")
    assert ids(listed(client, filter=kind.upper())) == ids(body)  # any case, as every vocabulary


def test_players_at_each_level_are_the_boards_rows(client: TestClient, seed: Seed, plan: str) -> None:
    for level in LEVELS:
        board = client.get("/api/leaderboard", params={"by": level.value}).json()
        assert board["rows"]
        for row in board["rows"]:
            found = everything(client, level=level.value, player=row["player"])
            assert [r["id"] for r in found] == seed.expected(level=level, player=row["player"]), (level, row)
            assert len(found) == row["matches"], (level, row["player"])
            results = [r["result"] for r in found]
            assert (results.count("win"), results.count("loss"), results.count("tie")) == (
                row["wins"], row["losses"], row["ties"])
            for r in found:
                j = seed.by_id(r["id"])
                on_a = player_of(j.a.model, j.a.scenario, level) == row["player"]
                want = "tie" if j.outcome is Winner.TIE else "win" if (j.outcome is Winner.A) == on_a else "loss"
                assert r["result"] == want


def test_opponents_at_each_level_are_the_matrix_cells(client: TestClient, seed: Seed, plan: str) -> None:
    cells = 0
    for level in LEVELS:
        matrix = client.get("/api/leaderboard/matrix", params={"by": level.value}).json()
        players = matrix["players"]
        for i, player in enumerate(players):
            for k, opponent in enumerate(players):
                if i == k:
                    continue
                found = [r["id"] for r in everything(client, level=level.value, player=player, opponent=opponent)]
                assert found == seed.expected(level=level, player=player, opponent=opponent), (level, player, opponent)
                assert len(found) == matrix["battles"][i][k]
                cells += bool(found)
    assert cells > 20


def test_an_opponent_alone_or_twice_the_player(client: TestClient, seed: Seed, plan: str) -> None:
    """Every schema-valid read is answered: `opponent` alone is a side as `player` is, without
    `result`; a player named twice meets itself nowhere (the matrix's diagonal)."""
    alone = listed(client, opponent="m2")
    assert ids(alone) == ids(listed(client, player="m2")) == seed.expected(player="m2") != []
    assert {row["result"] for row in alone["judgements"]} == {None} and alone["opponent"] == "m2"
    assert listed(client, player="m1", opponent="m1")["judgements"] == []
    assert listed(client, level="scenario", player="s1", opponent="s1", filter="ties")["judgements"] == []


def test_a_system_named_twice_is_one_player_and_never_meets_itself(client: TestClient, seed: Seed, plan: str) -> None:
    body = listed(client, level="system", player="x + y + z")
    assert ids(body) == seed.expected(level=Level.SYSTEM, player="x + y + z") and body["judgements"]
    sides = {(s["model"], s["scenario"]) for row in body["judgements"] for s in (row["a"], row["b"])}
    assert set(EDGE) <= sides  # both systems of that name
    between = [j.id for j in seed.judgements if {(j.a.model, j.a.scenario), (j.b.model, j.b.scenario)} == set(EDGE)]
    assert between and not set(between) & set(ids(body))  # the two never play each other
    assert ids(listed(client, level="model", player="x")) == seed.expected(player="x")
    assert ids(listed(client, level="model", player="y + z")) == []  # a scenario, not a model
    assert ids(listed(client, level="model+scenario", player="m1 + s1")) == ids(
        listed(client, level="system", player="m1 + s1")) == seed.expected(level=Level.SYSTEM, player="m1 + s1")


def test_question_and_tournament_narrow_the_list(client: TestClient, seed: Seed, plan: str) -> None:
    other, first, second = seed.tournaments
    assert ids(listed(client, question_id="q2")) == seed.expected(question_id="q2") != []
    assert ids(listed(client, question_id="q2", player="m1")) == seed.expected(question_id="q2", player="m1") != []
    assert ids(listed(client, question_id="nope")) == []
    for tid in (first, second):
        body = listed(client, tournament=tid)
        assert (body["tournament"], body["judge"]) == (tid, JUDGE)
        assert ids(body) == seed.expected(tournament=tid) != []
        assert ids(listed(client, tournament=tid, player="m2", filter="decided")) == seed.expected(
            tournament=tid, player="m2", kind="decided")
    assert listed(client, tournament=other)["judge"] == OTHER  # that tournament's judge, as its board's
    assert ids(listed(client, level="scenario", player="s1", opponent="s2", question_id="q1", filter="ties")) == (
        seed.expected(level=Level.SCENARIO, player="s1", opponent="s2", question_id="q1", kind="ties"))


def test_pages_follow_next_and_hold_still_while_judgements_land(client: TestClient, seed: Seed) -> None:
    first = client.get("/api/judgements", params={"player": "m1", "limit": 4})
    body = first.json()
    want = seed.expected(player="m1")
    assert ids(body) == want[:4] and len(want) > 8
    assert f"upto={want[0]}" in body["next"] and "offset=4" in body["next"] and "player=m1" in body["next"]
    assert f"judge={JUDGE.replace('/', '%2F')}" in body["next"]  # the board's judge, pinned for the pages after
    assert first.headers["Link"] == f'<{body["next"]}>; rel="next"'
    a = next(j.a for j in seed.judgements if j.a.model == "m1" and j.b.model == "m2")
    b = next(j.b for j in seed.judgements if j.a.model == "m1" and j.b.model == "m2")
    store_of(client).import_judgements(name="late", source="test", judge=JUDGE, criteria="overall", rows=[
        ImportedJudgement(key="late", a_id=b.id, b_id=a.id, outcome=Winner.A, calls=[])])
    store_of(client).import_judgements(name="later", source="test", judge=OTHER, criteria="overall", rows=[
        ImportedJudgement(key="later", a_id=b.id, b_id=a.id, outcome=Winner.B, calls=[])])
    assert listed(client)["judge"] == OTHER  # the newest tournament's judge is the default now
    rest = [row["id"] for row in pages_from(client, body["next"])]
    assert ids(body) + rest == want  # neither the late judgement nor the new default shifted anything
    fresh = ids(listed(client, player="m1", limit=1, judge=JUDGE))
    assert fresh[0] > want[0]  # and a new first page shows it
    past = listed(client, player="m1", offset=len(want) + 1, judge=JUDGE)
    assert (past["judgements"], past["next"]) == ([], None)


def pages_from(client: TestClient, url: str | None) -> list[dict]:
    rows = []
    while url is not None:
        body = client.get(url).json()
        rows.extend(body["judgements"])
        url = body["next"]
    return rows


@pytest.mark.parametrize(("params", "status", "message"), [
    ({"filter": "bogus"}, 422, "query parameter filter: \"bogus\" is not one of"),
    ({"filter": ""}, 422, "query parameter filter"),
    ({"level": "team"}, 422, "query parameter level"),
    ({"limit": 0}, 422, "query parameter limit"),
    ({"upto": 0}, 422, "query parameter upto"),
    ({"tournament": 999}, 404, "no tournament 999"),
    ({"judge": "anthropic/nobody"}, 404, "no verdicts from judge 'anthropic/nobody' here"),
])
def test_bad_requests_are_refused_and_say_why(client: TestClient, seed: Seed, params: dict, status: int,
                                             message: str) -> None:
    before = listed(client)
    response = client.get("/api/judgements", params=params)
    assert response.status_code == status, response.text
    assert message in response.json()["error"]
    if params.get("filter") == "bogus":
        assert all(kind in response.json()["error"] for kind in ("inconsistent", "ties", "decided"))
    if "judge" in params:
        assert response.json()["judges"] == [JUDGE, OTHER]
    assert listed(client) == before


def test_an_empty_store_lists_nothing(client: TestClient) -> None:
    body = listed(client, player="m1")
    assert (body["judge"], body["judge_chosen_by"], body["judgements"], body["next"]) == (None, "no verdicts", [], None)


# ---- one judgement, one submission -------------------------------------------------------------


def test_a_judgement_with_its_outputs_on_request(client: TestClient, seed: Seed) -> None:
    j = seed.judgements[7]
    plain = client.get(f"/api/judgements/{j.id}")
    assert plain.status_code == 200 and "output" not in plain.json()["a"] and "output" not in plain.json()["b"]
    full = client.get(f"/api/judgements/{j.id}", params={"outputs": "true"})
    assert full.status_code == 200, full.text
    body = full.json()
    assert (body["a"]["output"], body["b"]["output"]) == (j.a.output, j.b.output)
    assert body["a"]["output_chars"] == len(j.a.output)
    assert {k: v for k, v in body.items() if k not in ("a", "b")} == {
        k: v for k, v in plain.json().items() if k not in ("a", "b")}
    assert body["calls"] == [{"first": j.a.id, "winner": "A", "reason": f"reason {seed.judgements.index(j)}"}]
    assert client.get(f"/api/judgements/{j.id}", params={"outputs": "false"}).json() == plain.json()
    assert client.get(f"/api/judgements/{j.id}", params={"outputs": "maybe"}).status_code == 422
    assert client.get("/api/judgements/99999", params={"outputs": "true"}).status_code == 404


def test_one_submission_is_a_row_of_the_list(client: TestClient, seed: Seed) -> None:
    rows = client.get("/api/submissions").json()["submissions"]
    for row in rows[:3] + rows[-1:]:
        response = client.get(f"/api/submissions/{row['id']}")
        assert response.status_code == 200, response.text
        assert response.json() == row
    missing = client.get("/api/submissions/99999")
    assert (missing.status_code, missing.json()["error"]) == (404, "no submission 99999")
    for bad in ("0", "-1", "abc", str(2**31)):
        response = client.get(f"/api/submissions/{bad}")
        assert response.status_code == 422, (bad, response.text)
        assert response.json()["error"].startswith("path parameter submission_id")


# ---- the way to a page ----------------------------------------------------------------------------


def test_the_walk_is_taken_where_it_reads_less_than_the_seek() -> None:
    """At a million judgements, a page of 50 (bench: 100 models x 4 scenarios, 500 questions)."""
    total, rows = 1_000_000, 51
    cap = judgement_lists.SEEK
    assert judgement_lists.walks(rows, [19_886], cap, total)  # a model of 100: one in fifty judgements
    assert not judgement_lists.walks(rows, [4_846], cap, total)  # a system of 400: its few judgements
    assert not judgement_lists.walks(rows, [19_886, 20_112], cap, total)  # two models meet in 1 of 5,000
    assert judgement_lists.walks(rows, [cap, cap], cap, total)  # two common players: walked
    assert not judgement_lists.walks(rows, [0], cap, total)  # nobody: nothing to seek
    assert not judgement_lists.walks(rows * 200, [19_886], cap, total)  # deep pages: the seek reads less
