"""Per-turn and per-voter-majority figures (issue 24, item 7), on the real app over a planted
MT-Bench-like store: a judge's verdicts and three voters' votes on turns 1 and 2 of two questions,
imported with a `turn` column (turn 2 is the question `<id>#turn2`), and a turn-2 pair submitted
over the API whose turn only its metadata states. `?turn=` scopes judge health, the board and its
matrix; `?votes=majority` counts each pair once, by its votes' majority; the client and the CLI
pass both. Every figure is worked out by hand below. SQLite, then PostgreSQL."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from joust import Client
from service.cli import main
from service.config import Settings
from service.usecases.importers.battles import load_battles
from tests.api_fixtures import API_KEY, store_of
from tests.serving import serving

# question, turn, model_a, model_b, winner, first shown: the judge's one-call verdicts. On turn 1
# the answer shown first wins 1 of 3 decided calls (and one tie); on turn 2, all 4.
JUDGE = [("q1", 1, "m1", "m2", "model_a", "a"), ("q1", 1, "m1", "m3", "model_b", "a"),
         ("q2", 1, "m1", "m2", "model_a", "b"), ("q2", 1, "m2", "m3", "tie", "a"),
         ("q1", 2, "m1", "m2", "model_b", "b"), ("q1", 2, "m1", "m3", "model_b", "b"),
         ("q2", 2, "m1", "m2", "model_a", "a"), ("q2", 2, "m2", "m3", "model_a", "a")]
# question, turn, model_a, model_b, winner, voter. Turn 1: (q1, m1-m2) m1, m1, m2: m1 by majority;
# (q1, m1-m3) m1, m3: a tie; (q2, m2-m3) m3 three times (carol's vote sent with the sides swapped).
# Turn 2: (q1, m1-m2) m2 twice.
VOTES = [("q1", 1, "m1", "m2", "model_a", "alice"), ("q1", 1, "m1", "m2", "model_a", "bob"),
         ("q1", 1, "m1", "m2", "model_b", "carol"), ("q1", 1, "m1", "m3", "model_a", "alice"),
         ("q1", 1, "m1", "m3", "model_b", "bob"), ("q2", 1, "m2", "m3", "model_b", "alice"),
         ("q2", 1, "m2", "m3", "model_b", "bob"), ("q2", 1, "m3", "m2", "model_a", "carol"),
         ("q1", 2, "m1", "m2", "model_b", "alice"), ("q1", 2, "m1", "m2", "model_b", "bob")]
AUTH = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture
def mt(client: TestClient, tmp_path: Path) -> TestClient:
    judge, votes = tmp_path / "gpt4.csv", tmp_path / "votes.csv"
    judge.write_text("question_id,turn,model_a,model_b,winner,first\n" + "".join(",".join(map(str, r)) + "\n"
                                                                              for r in JUDGE))
    votes.write_text("question_id,turn,model_a,model_b,winner,voter\n" + "".join(",".join(map(str, r)) + "\n"
                                                                               for r in VOTES))
    store = store_of(client)
    load_battles(store, judge, judge="gpt4")
    load_battles(store, votes, human=True)
    return client


def get(client: TestClient, path: str, **params: Any) -> Any:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def records(client: TestClient, **params: Any) -> dict[str, tuple[int, int, int]]:
    body = get(client, "/api/leaderboard", **params)
    return {row["player"]: (row["wins"], row["losses"], row["ties"]) for row in body["rows"]}


def health(client: TestClient, judge: str, **params: Any) -> dict:
    [found] = get(client, "/api/judges", judge=judge, **params)["judges"]
    return found


def test_turn_scopes_judge_health(mt: TestClient) -> None:
    gpt4 = {turn: health(mt, "import/gpt4", **({} if turn is None else {"turn": turn})) for turn in (None, 1, 2)}
    figures = {turn: (h["calls"], h["tie_rate"], h["first_position_win_rate"], h["human_agreement"], h["human_votes"])
               for turn, h in gpt4.items()}
    # turn 1: (q1 m1-m2) 2 of 3 votes agree, (q1 m1-m3) 1 of 2, (q2 m2-m3) the judge's tie 0 of 3
    # turn 2: (q1 m1-m2) 2 of 2; every turn: 5 of 10
    assert figures == {None: (8, 1 / 8, pytest.approx(5 / 7), 0.5, 10),
                       1: (4, 1 / 4, pytest.approx(1 / 3), 3 / 8, 8),
                       2: (4, 0.0, 1.0, 1.0, 2)}
    body = get(mt, "/api/judges", turn=1)
    assert body["turn"] == 1 and get(mt, "/api/judges")["turn"] is None
    # couples of votes on turn 1: (q1 m1-m2) 2 of 6 agree, (q1 m1-m3) 0 of 2, (q2 m2-m3) 6 of 6
    assert (body["voter_agreement"]["rate"], body["voter_agreement"]["pairs"]) == (pytest.approx(8 / 14), 3)
    alice = get(mt, "/api/judges", turn=2, humans="human/alice", judge="import/gpt4")["judges"][0]
    assert (alice["human_agreement"], alice["human_votes"]) == (1.0, 1)
    assert get(mt, "/api/judges", turn=3)["judges"] == []  # nothing on turn 3


def test_turn_scopes_the_board_and_its_matrix(mt: TestClient) -> None:
    assert records(mt, judge="import/gpt4", turn=1) == {"m1": (2, 1, 0), "m2": (0, 2, 1), "m3": (1, 0, 1)}
    assert records(mt, judge="import/gpt4", turn=2) == {"m1": (1, 2, 0), "m2": (2, 1, 0), "m3": (1, 1, 0)}
    assert records(mt, judge="import/gpt4") == {"m1": (3, 3, 0), "m2": (2, 3, 1), "m3": (2, 1, 1)}
    board = get(mt, "/api/leaderboard", judge="import/gpt4", turn=2)
    assert (board["turn"], board["votes"], board["judgements"]) == (2, "each", 4)
    others = {o["judge"]: o["board"] for o in board["other_judges"]}
    assert "turn=2" in others["human/alice"]  # the other judges' boards of the same turn
    matrix = get(mt, "/api/leaderboard/matrix", judge="import/gpt4", turn=1)
    index = {p: i for i, p in enumerate(matrix["players"])}
    assert matrix["turn"] == 1 and matrix["battles"][index["m1"]][index["m2"]] == 2
    assert matrix["win_rate"][index["m1"]][index["m2"]] == 1.0
    for bad in ({"turn": 0}, {"turn": "two"}, {"votes": "most"}):
        response = mt.get("/api/leaderboard", params=bad)
        assert response.status_code == 422, response.text


def test_a_turn_only_the_metadata_states(mt: TestClient) -> None:
    """Outputs sent without a question id (hashed from the text) whose metadata says turn 2, as
    `joust submit` splits a conversation: a vote on them is on turn 2's boards, not turn 1's."""
    response = mt.post("/api/submissions", headers=AUTH, json=[
        {"question": "And now in French?", "model": m, "output": f"{m} en français", "metadata": {"turn": 2}}
        for m in ("m1", "m2")])
    assert response.status_code == 201, response.text
    a, b = (ref["id"] for ref in response.json()["submissions"])
    response = mt.post("/api/votes", headers=AUTH, json={"a": a, "b": b, "winner": "A", "voter": "alice"})
    assert response.status_code == 201, response.text
    assert records(mt, judge="human/alice", turn=2) == {"m1": (1, 1, 0), "m2": (1, 1, 0)}
    assert records(mt, judge="human/alice", turn=1) == {"m1": (2, 0, 0), "m2": (0, 2, 0), "m3": (1, 1, 0)}
    assert health(mt, "human/alice", turn=2)["judgements"] == 2


def test_votes_by_majority(mt: TestClient) -> None:
    # each vote a battle, turn 1: (q1 m1-m2) m1 2-1, (q1 m1-m3) 1-1, (q2 m2-m3) m3 3-0
    assert records(mt, judge="human", turn=1) == {"m1": (3, 2, 0), "m2": (1, 5, 0), "m3": (4, 1, 0)}
    # each pair once, by its majority: m1 beats m2, m1 ties m3, m3 beats m2
    assert records(mt, judge="human", turn=1, votes="majority") == {"m1": (1, 0, 1), "m2": (0, 2, 0),
                                                                   "m3": (1, 0, 1)}
    board = get(mt, "/api/leaderboard", judge="human", votes="majority")  # and turn 2's pair: m2 beats m1
    assert {r["player"]: (r["wins"], r["losses"], r["ties"]) for r in board["rows"]} == {
        "m1": (1, 1, 1), "m2": (1, 2, 0), "m3": (1, 0, 1)}
    assert (board["votes"], board["judgements"], get(mt, "/api/leaderboard", judge="human")["judgements"]) == (
        "majority", 4, 10)
    # one voter has one vote per pair: the majority is that vote
    assert records(mt, judge="human/alice", votes="majority") == records(mt, judge="human/alice")
    matrix = get(mt, "/api/leaderboard/matrix", judge="human", turn=1, votes="majority")
    index = {p: i for i, p in enumerate(matrix["players"])}
    assert matrix["votes"] == "majority" and matrix["battles"][index["m1"]][index["m2"]] == 1
    for intervals in ("closed", "bootstrap"):
        rows = get(mt, "/api/leaderboard", judge="human", votes="majority", intervals=intervals)["rows"]
        assert sum(r["matches"] for r in rows) == 2 * 4
    davidson = get(mt, "/api/leaderboard", judge="human", votes="majority", ties="davidson")
    assert sum(r["ties"] for r in davidson["rows"]) == 2
    styled = get(mt, "/api/leaderboard", judge="human", votes="majority", control="style")
    assert styled["control"] == "none" and "votes=majority" in styled["control_note"]


def test_the_client_and_the_cli(mt: TestClient, api_settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    """Over a real socket (uvicorn): `Client.leaderboard(turn=, votes=)`, `Client.judges(turn=)`,
    `joust board --turn --votes` and `joust judges --turn` give the API's figures."""
    with serving(api_settings) as url, Client(url) as remote:
        frame = remote.leaderboard(judge="human", turn=1, votes="majority")
        assert frame.attrs["turn"] == 1 and frame.attrs["votes"] == "majority"
        assert dict(zip(frame["player"], zip(frame["wins"], frame["losses"], frame["ties"]))) == {
            "m1": (1, 0, 1), "m2": (0, 2, 0), "m3": (1, 0, 1)}
        judges = remote.judges(turn=2).set_index("judge")
        assert judges.loc["import/gpt4", "first_position_win_rate"] == 1.0 and judges.attrs["turn"] == 2
        code = main(["board", "--url", url, "--judge", "human", "--turn", "1", "--votes", "majority",
                     "--format", "json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert {r["player"]: (r["wins"], r["losses"], r["ties"]) for r in json.loads(out)} == {
            "m1": (1, 0, 1), "m2": (0, 2, 0), "m3": (1, 0, 1)}
        code = main(["judges", "--url", url, "--turn", "2", "--judge", "import/gpt4", "--format", "json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        [row] = json.loads(out)
        assert (row["calls"], row["first_position_win_rate"], row["human_votes"]) == (4, 1.0, 2)
        assert "2 reference voters: human/alice, human/bob; turn 2" in err  # carol voted on turn 1 only
        code = main(["board", "--url", url, "--votes", "most"])  # the API's 422, its words
        out, err = capsys.readouterr()
        assert (code, out) == (2, "") and "'each' or 'majority'" in err


def test_the_board_export(mt: TestClient, api_settings: Settings, capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`joust export board --turn --votes` writes the rows the API serves for the same board."""
    if api_settings.database_url is not None:
        monkeypatch.setenv("DATABASE_URL", api_settings.database_url)
    for params, flags in (({"turn": 1, "votes": "majority"}, ["--turn", "1", "--votes", "majority"]),
                          ({"turn": 2}, ["--turn", "2"])):
        served = get(mt, "/api/leaderboard", judge="human", **params)["rows"]
        code = main(["export", "board", "--judge", "human", *flags, "--format", "jsonl",
                     "--data-dir", str(api_settings.data_dir)])
        out, err = capsys.readouterr()
        assert code == 0, err
        written = [json.loads(line) for line in out.splitlines()]
        assert [(r["player"], r["wins"], r["losses"], r["ties"], r["rating"]) for r in written] == [
            (r["player"], r["wins"], r["losses"], r["ties"], pytest.approx(r["rating"])) for r in served]


def test_llmfao_crowd_by_majority(client: TestClient) -> None:
    """LLMFAO's 8,931 crowd votes on 2,139 pairs, filed as one voter pool: with `votes=majority`
    each pair counts once, its verdict the strict majority of its votes (else a tie), as counted
    here from the file; with `each`, every vote."""
    import csv
    from collections import Counter, defaultdict

    from tests.required import shared_data

    path = shared_data("llmfao") / "crowd-comparisons.csv"
    load_battles(store_of(client), path, judge="crowd", human=True)
    votes: dict[tuple[str, frozenset[str]], Counter[str]] = defaultdict(Counter)
    with path.open(newline="") as handle:
        for r in csv.DictReader(handle):
            said = "tie" if r["winner"] == "tie" else r[r["winner"]]
            votes[(r["prompt"], frozenset((r["left"], r["right"])))][said] += 1
    expected: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for (_, pair), counted in votes.items():
        top, n = counted.most_common(1)[0]
        winner = top if 2 * n > sum(counted.values()) and top != "tie" else None
        for model in pair:
            expected[model][0 if winner == model else 2 if winner is None else 1] += 1
    board = get(client, "/api/leaderboard", judge="human/crowd", votes="majority")
    assert board["judgements"] == len(votes) == 2139
    assert {r["player"]: [r["wins"], r["losses"], r["ties"]] for r in board["rows"]} == dict(expected)
    assert get(client, "/api/leaderboard", judge="human/crowd")["judgements"] == 8931
