"""POST /api/votes on the real app, on SQLite and PostgreSQL: votes filed as judgements of
`human/<voter>`, seen by that judge's board and by judge health (figures worked out by hand),
idempotent repeats, and every refusal leaving the store as it was."""
from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from leaderboard.types import PLACEHOLDER_OUTPUT, Winner
from service.store import NewSubmission, Store
from service.store.imports import ImportedJudgement
from tests.api_fixtures import API_KEY, MakeClient, app_state_of, store_of
from tests.page_text import heads, rows_of

AUTH = {"Authorization": f"Bearer {API_KEY}"}
MODELS = ("m1", "m2", "m3")


def submit(client: TestClient) -> dict[str, int]:
    """m1, m2, m3 answer q1 (ids s1, s2, s3); m1 and m2 answer q2 (t1, t2); m1 answers q1 again
    under scenario "terse" (s1t)."""
    batch = [{"question": f"text of {q}", "question_id": q, "model": m, "output": f"{m} on {q}: " + "x" * n}
             for q, models in (("q1", MODELS), ("q2", MODELS[:2])) for n, m in enumerate(models)]
    batch.append({"question": "text of q1", "question_id": "q1", "model": "m1", "scenario": "terse",
                  "output": "m1, tersely"})
    response = client.post("/api/submissions", json=batch, headers=AUTH)
    assert response.status_code == 201, response.text
    names = ["s1", "s2", "s3", "t1", "t2", "s1t"]
    return {name: ref["id"] for name, ref in zip(names, response.json()["submissions"])}


def vote(voter: str, a: Any, b: Any, winner: str, first: Any = None) -> dict:
    body = {"a": a, "b": b, "winner": winner, "voter": voter}
    return body if first is None else {**body, "first": first}


def post(client: TestClient, body: Any, status: int = 201) -> Any:
    response = client.post("/api/votes", json=body, headers=AUTH)
    assert response.status_code == status, response.text
    return response.json()


def judgements(client: TestClient) -> list[tuple]:
    """Every stored judgement, as (judge, a, b, outcome, calls): what a refused request must not change."""
    return [(r.judge, r.a_id, r.b_id, r.outcome, r.calls) for r in store_of(client).health_records()]


def board(client: TestClient, judge: str, by: str = "model") -> dict[str, tuple[int, int, int]]:
    response = client.get("/api/leaderboard", params={"judge": judge, "by": by})
    assert response.status_code == 200, response.text
    return {row["player"]: (row["wins"], row["losses"], row["ties"]) for row in response.json()["rows"]}


@pytest.fixture
def ids(client: TestClient) -> dict[str, int]:
    return submit(client)


# ---- votes are judgements of their voter ----------------------------------------------------------


def test_a_vote_is_a_judgement_of_its_voter_on_its_own_board(client: TestClient, ids: dict[str, int]) -> None:
    revision = store_of(client).revision()
    created = post(client, vote("alice", ids["s1"], ids["s2"], "A", first=ids["s2"]))
    [ref] = created["votes"]
    assert (ref["judge"], ref["created"]) == ("human/alice", True)
    assert store_of(client).revision() == revision + 1  # resolved: boards and judge health see it

    judgement = client.get(f"/api/judgements/{ref['id']}").json()
    assert (judgement["judge"], judgement["criteria"], judgement["outcome"]) == ("human/alice", "overall", "A")
    assert (judgement["a"]["id"], judgement["b"]["id"]) == (ids["s1"], ids["s2"])
    [call] = judgement["calls"]
    assert (call["first"], call["winner"], call["both_bad"]) == (ids["s2"], "B", False)  # positional: shown second won

    batch = post(client, [vote("alice", ids["s3"], ids["s1"], "B"),  # s1 beats s3, sent the other way round
                          vote("alice", ids["s2"], ids["s3"], "BOTH_BAD", first=ids["s3"]),
                          vote("alice", ids["t1"], ids["t2"], "B"),
                          vote("bob", ids["s1"], ids["s2"], "B")])
    assert [(v["judge"], v["created"]) for v in batch["votes"]] == [("human/alice", True)] * 3 + [("human/bob", True)]
    assert len({v["id"] for v in batch["votes"]} | {ref["id"]}) == 5

    # m1 beat m2 and m3 on q1 and lost to m2 on q2; m2 and m3 were both bad: a tie
    assert board(client, "human/alice") == {"m1": (2, 1, 0), "m2": (1, 1, 1), "m3": (0, 1, 1)}
    assert board(client, "human/bob") == {"m1": (0, 1, 0), "m2": (1, 0, 0)}
    both_bad = client.get(f"/api/judgements/{batch['votes'][1]['id']}").json()
    [call] = both_bad["calls"]
    assert (both_bad["outcome"], call["winner"], call["both_bad"]) == ("TIE", "TIE", True)


def test_sides_may_be_named_by_question_model_and_scenario(client: TestClient, ids: dict[str, int]) -> None:
    s1 = {"question_id": "q1", "model": "m1"}  # scenario "default"
    terse = {"question_id": "q1", "model": "m1", "scenario": "terse"}
    [ref] = post(client, vote("carol", s1, terse, "B", first=terse))["votes"]
    judgement = client.get(f"/api/judgements/{ref['id']}").json()
    assert (judgement["a"]["id"], judgement["b"]["id"], judgement["outcome"]) == (ids["s1"], ids["s1t"], "B")
    assert (judgement["calls"][0]["first"], judgement["calls"][0]["winner"]) == (ids["s1t"], "A")
    assert board(client, "human/carol", by="scenario") == {"terse": (1, 0, 0), "default": (0, 1, 0)}
    assert board(client, "human/carol", by="model") == {}  # m1 against m1: no model comparison


def test_the_same_vote_again_is_the_stored_one(client: TestClient, ids: dict[str, int]) -> None:
    body = vote("alice", ids["s1"], ids["s2"], "A", first=ids["s1"])
    [first] = post(client, body)["votes"]
    before = (judgements(client), store_of(client).revision(), board(client, "human/alice"))
    [again] = post(client, body)["votes"]
    [swapped] = post(client, vote("alice", ids["s2"], ids["s1"], "B", first=ids["s1"]))["votes"]
    assert again == swapped == {**first, "created": False}
    # twice in one batch: the first is created, the second is it
    twice = post(client, [vote("dan", ids["s1"], ids["s3"], "TIE")] * 2)["votes"]
    assert [v["created"] for v in twice] == [True, False] and twice[0]["id"] == twice[1]["id"]
    after = judgements(client)
    assert after[:len(before[0])] == before[0] and len(after) == len(before[0]) + 1
    assert board(client, "human/alice") == before[2]


@pytest.mark.parametrize("changed", [
    {"winner": "B"}, {"winner": "TIE"}, {"winner": "BOTH_BAD"}, {"first": "s2"}, {"first": None},
])
def test_a_vote_is_final(client: TestClient, ids: dict[str, int], changed: dict) -> None:
    [stored] = post(client, vote("alice", ids["s1"], ids["s2"], "A", first=ids["s1"]))["votes"]
    before = judgements(client)
    body = {**vote("alice", ids["s1"], ids["s2"], "A", first=ids["s1"]), **changed}
    if changed.get("first") == "s2":
        body["first"] = ids["s2"]
    if "first" in changed and changed["first"] is None:
        del body["first"]
    refused = post(client, [vote("alice", ids["s1"], ids["s3"], "A"), body], status=409)
    assert refused["error"].startswith("conflict: votes[1]: human/alice already voted on submissions")
    assert f"(vote {stored['id']}: submission {ids['s1']} won, {ids['s1']} shown first)" in refused["error"]
    assert judgements(client) == before  # the good vote before it was not stored either


def test_two_different_votes_on_a_pair_in_one_batch_are_refused(client: TestClient, ids: dict[str, int]) -> None:
    refused = post(client, [vote("alice", ids["s1"], ids["s2"], "A"), vote("alice", ids["s2"], ids["s1"], "A")], 409)
    assert "votes[1]: human/alice already voted" in refused["error"] and "earlier in this batch" in refused["error"]
    assert judgements(client) == []


# ---- refusals change nothing ----------------------------------------------------------------------

PLACEHOLDER = "placeholder"  # stands for the id of a placeholder submission of q1


@pytest.mark.parametrize(("body", "status", "path", "words"), [
    (vote("alice", 999_999, "s2", "A"), 404, "a", "no submission 999999"),
    (vote("alice", "s1", {"question_id": "q1", "model": "m9"}, "A"), 404, "b", "model='m9'"),
    (vote("alice", "s1", {"question_id": "q9", "model": "m2"}, "A"), 404, "b", "question_id='q9'"),
    (vote("alice", "s1", "s1", "A"), 422, "b", "same submission"),
    (vote("alice", "s1", "t2", "A"), 422, "b", "different questions"),
    (vote("alice", "s1", PLACEHOLDER, "A"), 422, "b", "placeholder"),
    (vote("alice", "s1", "s2", "A", first="s3"), 422, "first", "neither a"),
    (vote("alice", "s1", "s2", "A", first={"question_id": "q1", "model": "m3"}), 422, "first", "neither a"),
    (vote("alice", "s1", "s2", "a"), 422, "winner", "'BOTH_BAD'"),
    (vote("alice", "s1", "s2", "WIN"), 422, "winner", "'BOTH_BAD'"),
    (vote("", "s1", "s2", "A"), 422, "voter", "empty"),
    (vote("x" * 101, "s1", "s2", "A"), 422, "voter", "at most 100"),
    (vote("human/alice", "s1", "s2", "A"), 422, "voter", "'/'"),
    (vote("al\nice", "s1", "s2", "A"), 422, "voter", "control character"),
    (vote("alice ", "s1", "s2", "A"), 422, "voter", "whitespace"),
    (vote(7, "s1", "s2", "A"), 422, "voter", "valid string"),
    (vote("alice", "s1", True, "A"), 422, "b", "submission id or an object"),
    (vote("alice", "s1", 0, "A"), 422, "b", "greater than or equal to 1"),
    (vote("alice", "s1", 2**31, "A"), 422, "b", "less than or equal to"),
    (vote("alice", "s1", {"question_id": "q1"}, "A"), 422, "b.model", "field required"),
    ({**vote("alice", "s1", "s2", "A"), "note": "x"}, 422, "note", "unknown field"),
    ({"a": "s1", "b": "s2", "voter": "alice"}, 422, "winner", "field required"),
])
@pytest.mark.parametrize("as_batch", [False, True])
def test_a_bad_vote_is_refused_and_nothing_is_stored(client: TestClient, ids: dict[str, int], body: dict, status: int,
                                                     path: str, words: str, as_batch: bool) -> None:
    store_of(client).add_submissions([NewSubmission(question_id="q1", question="text of q1", model="m4",
                                                    scenario="default", output=PLACEHOLDER_OUTPUT)])
    named = {**ids, PLACEHOLDER: client.get("/api/submissions", params={"model": "m4"}).json()["submissions"][0]["id"]}
    body = {k: named.get(v, v) if isinstance(v, str) and k in ("a", "b", "first") else v for k, v in body.items()}
    good = vote("bob", ids["s1"], ids["s2"], "A")
    before = (judgements(client), store_of(client).revision())
    sent: Any = [good, body] if as_batch else body
    refused = post(client, sent, status=status)
    where = f"votes[1].{path}" if as_batch else path
    assert any(d["path"] == where and words in d["message"] for d in refused["details"]), refused
    assert where in refused["error"]
    assert (judgements(client), store_of(client).revision()) == before


@pytest.mark.parametrize(("body", "status", "words"), [
    ([], 422, "empty"), ("A", 422, "vote object"), ([1], 422, "votes[0]"), (None, 400, "empty"),
    (3, 422, "vote object"),
])
def test_a_body_that_is_no_vote_is_refused(client: TestClient, ids: dict[str, int], body: Any, status: int,
                                           words: str) -> None:
    assert words in post(client, body, status=status)["error"]
    assert judgements(client) == []


def test_a_batch_over_the_limit_is_too_large(make_client: MakeClient) -> None:
    client = make_client(max_batch=6)  # the submissions' limit too: `submit` sends six
    ids = submit(client)
    body = [vote(f"v{i}", ids["s1"], ids["s2"], "A") for i in range(7)]
    assert "at most 6 votes, this one has 7" in post(client, body, status=413)["error"]
    assert judgements(client) == []
    assert len(post(client, body[:6])["votes"]) == 6


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}])
def test_votes_need_the_api_key(client: TestClient, ids: dict[str, int], headers: dict) -> None:
    response = client.post("/api/votes", json=vote("alice", ids["s1"], ids["s2"], "A"), headers=headers)
    assert response.status_code == (403 if headers else 401), response.text
    assert judgements(client) == []


# ---- judge health over votes -----------------------------------------------------------------------


def judge_verdicts(store: Store, ids: dict[str, int]) -> None:
    """An imported judge, import/gpt4: s1 beat s2; s1 and s3 tie; s3 beat s2; t1 beat t2."""
    rows = [("g1", "s1", "s2", Winner.A), ("g2", "s1", "s3", Winner.TIE), ("g3", "s2", "s3", Winner.B),
            ("g4", "t1", "t2", Winner.A)]
    store.import_judgements(name="gpt4", source="test", judge="import/gpt4", criteria="overall", rows=[
        ImportedJudgement(key, ids[a], ids[b], winner, [{"first": ids[a], "winner": winner.value}])
        for key, a, b, winner in rows
    ])


def health(client: TestClient, **params: Any) -> dict:
    response = client.get("/api/judges", params=params)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def voted(client: TestClient, ids: dict[str, int]) -> dict[str, int]:
    """import/gpt4's verdicts, and votes: alice s1 > s2 (shown s2 first), s1 > s3 (shown s1 first),
    s2 and s3 both bad, t2 > t1; bob s1 > s2, s1 ~ s3, s3 > s2; carol s2 > s1, t2 > t1."""
    judge_verdicts(store_of(client), ids)
    post(client, [
        vote("alice", ids["s1"], ids["s2"], "A", first=ids["s2"]),
        vote("alice", ids["s1"], ids["s3"], "A", first=ids["s1"]),
        vote("alice", ids["s2"], ids["s3"], "BOTH_BAD", first=ids["s3"]),
        vote("alice", ids["t1"], ids["t2"], "B"),
        vote("bob", ids["s1"], ids["s2"], "A"), vote("bob", ids["s1"], ids["s3"], "TIE"),
        vote("bob", ids["s3"], ids["s2"], "A"),
        vote("carol", ids["s2"], ids["s1"], "A"), vote("carol", ids["t1"], ids["t2"], "B"),
    ])
    return ids


def test_judge_health_measures_judges_against_the_votes(client: TestClient, voted: dict[str, int]) -> None:
    served = health(client)
    assert served["humans"] == ["human/alice", "human/bob", "human/carol"]
    judges = {h["judge"]: h for h in served["judges"]}
    gpt4 = judges["import/gpt4"]
    # (s1,s2): s1 won; votes s1, s1, s2: 2 of 3 agree. (s1,s3): a tie; votes s1, tie: 1 of 2.
    # (s2,s3): s3 won; votes both bad (a tie), s3: 1 of 2. (t1,t2): t1 won; votes t2, t2: 0 of 2.
    assert (gpt4["human_agreement"], gpt4["human_pairs"], gpt4["human_votes"]) == (pytest.approx(4 / 9), 4, 9)
    # without ties: (s1,s3) goes (the judge's tie), so do the tie votes: 2 of 3, 1 of 1, 0 of 2
    assert (gpt4["human_agreement_decided"], gpt4["human_decided_pairs"], gpt4["human_decided_votes"]) == (0.5, 3, 6)
    alice = judges["human/alice"]
    assert (alice["calls"], alice["judgements"], alice["tie_rate"]) == (4, 4, 0.25)
    # positions known for 3 votes, 2 with a winner: s1 won shown second, s1 won shown first
    assert alice["first_position_win_rate"] == 0.5
    assert (alice["human_agreement"], alice["human_agreement_decided"], alice["human_votes"]) == (None, None, 0)
    # between voters, ordered couples: (s1,s2) 6, 2 agree; (s1,s3) 2, 0; (s2,s3) 2, 0; (t1,t2) 2, 2
    assert served["voter_agreement"] == {"rate": pytest.approx(4 / 12), "pairs": 4, "votes": 9,
                                         "decided": 0.5, "decided_pairs": 2, "decided_votes": 5}


@pytest.mark.parametrize("params", [
    {"humans": "human/alice,human/bob"}, {"humans": ["human/alice", "human/bob"]},
    {"humans": " human/bob , human/alice"},
])
def test_humans_chooses_the_reference_set(client: TestClient, voted: dict[str, int], params: dict) -> None:
    served = health(client, **params)
    assert served["humans"] == ["human/alice", "human/bob"]
    judges = {h["judge"]: h for h in served["judges"]}
    gpt4 = judges["import/gpt4"]
    # (s1,s2): s1, s1: 2 of 2. (s1,s3): s1, tie: 1 of 2. (s2,s3): tie, s3: 1 of 2. (t1,t2): t2: 0 of 1.
    assert (gpt4["human_agreement"], gpt4["human_pairs"], gpt4["human_votes"]) == (pytest.approx(4 / 7), 4, 7)
    assert (gpt4["human_agreement_decided"], gpt4["human_decided_pairs"], gpt4["human_decided_votes"]) == (0.75, 3, 4)
    carol = judges["human/carol"]  # outside the set: compared with it; s2 > s1 against s1, s1; t2 > t1 against t2
    assert (carol["human_agreement"], carol["human_pairs"], carol["human_votes"]) == (pytest.approx(1 / 3), 2, 3)
    assert judges["human/alice"]["human_agreement"] is None
    assert served["voter_agreement"] == {"rate": pytest.approx(2 / 6), "pairs": 3, "votes": 6,
                                         "decided": 1.0, "decided_pairs": 1, "decided_votes": 2}
    # one judge, against the chosen set
    only = health(client, judge="import/gpt4", **params)
    assert only["judges"] == [gpt4] and only["humans"] == ["human/alice", "human/bob"]


def test_one_human_as_the_reference(client: TestClient, voted: dict[str, int]) -> None:
    served = health(client, humans="human/carol")
    judges = {h["judge"]: h for h in served["judges"]}
    assert (judges["import/gpt4"]["human_agreement"], judges["import/gpt4"]["human_votes"]) == (0.0, 2)
    assert (judges["human/alice"]["human_agreement"], judges["human/alice"]["human_pairs"]) == (0.5, 2)
    assert served["voter_agreement"]["rate"] is None and served["voter_agreement"]["pairs"] == 0
    assert health(client)["humans"] == ["human/alice", "human/bob", "human/carol"]  # the default is kept apart


@pytest.mark.parametrize(("humans", "status", "words"), [
    ("human/zed", 404, "no votes by human/zed: the human judges are human/alice, human/bob, human/carol"),
    ("human/alice,human/zed", 404, "no votes by human/zed"),
    ("import/gpt4", 422, "'import/gpt4' is not a human judge"),
    ("human/alice,", 422, "is not a human judge"),
    ("alice", 422, "'alice' is not a human judge"),
    ("", 422, "is not a human judge"),
])
def test_an_unknown_reference_set_is_refused(client: TestClient, voted: dict[str, int], humans: str, status: int,
                                             words: str) -> None:
    response = client.get("/api/judges", params={"humans": humans})
    assert response.status_code == status, response.text
    assert words in response.json()["error"]


def test_the_page_shows_agreement_without_ties(client: TestClient, voted: dict[str, int]) -> None:
    page = client.get("/judges").text
    rows = rows_of(page, "LLM and imported judges")
    row = dict(zip(heads(page)["LLM and imported judges"], next(r for r in rows if r[0] == "import/gpt4")))
    assert (row["Human agreement"], row["Without ties"]) == ("44.4% (4 pairs)", "50.0% (3 pairs)")  # 4 of 9; 3 of 6


def test_each_reference_set_is_cached_apart_and_kept_current(client: TestClient, voted: dict[str, int]) -> None:
    cache = app_state_of(client).judge_health
    two = {"humans": "human/alice,human/bob"}

    def gpt4(**params: Any) -> tuple[float, int]:
        [served] = health(client, judge="import/gpt4", **params)["judges"]
        return served["human_agreement"], served["human_votes"]

    assert (gpt4(**two), gpt4()) == ((pytest.approx(4 / 7), 7), (pytest.approx(4 / 9), 9))
    computed = cache.computations
    assert (gpt4(**two), gpt4(), gpt4(humans="human/bob, human/alice")) == ((pytest.approx(4 / 7), 7),
                                                                            (pytest.approx(4 / 9), 9),
                                                                            (pytest.approx(4 / 7), 7))
    assert cache.computations == computed  # each set served from its own result
    post(client, vote("bob", voted["t1"], voted["t2"], "A"))  # t1 beat t2, as import/gpt4 said
    assert (gpt4(**two), gpt4()) == ((pytest.approx(5 / 8), 8), (0.5, 10))
    assert cache.computations == computed + 2
