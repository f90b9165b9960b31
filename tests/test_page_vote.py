"""The vote page, `/vote`, on the real app and store (SQLite and PostgreSQL): signing in with a
voter key kept in a cookie, a blind pair, votes filed as `human/<key name>` through the votes
use case, judge health gaining the agreement, the next pair where votes are fewest (the pure rule
with a seeded rng, and the store's query), and every refusal storing nothing."""
from __future__ import annotations

import html
import random
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response
from markupsafe import escape

from leaderboard.types import PLACEHOLDER_OUTPUT, Winner
from leaderboard.vote_pairs import (
    CandidatePair,
    QuestionTally,
    choose_pair,
    least_votes,
    pair_of,
    sample_questions,
)
from leaderboard.votes import Verdict, Vote
from service.store import NewSubmission, Store
from service.store.imports import ImportedJudgement
from service.web.pages.voter import COOKIE, Voter, pair_token
from tests.api_fixtures import API_KEY, MakeClient, app_state_of, store_of

ADMIN = {"Authorization": f"Bearer {API_KEY}"}
EVIL = "<script>alert('vote')</script>"
LLM = "import/gpt4"


# ---- the rule, pure: fewest votes, then judged by an LLM, then at random --------------------------


def test_choose_pair_takes_the_fewest_votes_then_a_judged_pair() -> None:
    candidates = [CandidatePair((1, 2), 0, False), CandidatePair((1, 3), 0, True), CandidatePair((2, 3), 1, True),
                  CandidatePair((4, 5), 0, False)]
    assert {choose_pair(candidates, random.Random(seed)).pair for seed in range(50)} == {(1, 3)}
    unjudged = [c for c in candidates if c.pair != (1, 3)]
    # no judged pair among the fewest: each of them, at random (the judged pair with a vote never)
    assert {choose_pair(unjudged, random.Random(seed)).pair for seed in range(50)} == {(1, 2), (4, 5)}
    assert choose_pair(unjudged, random.Random(3)) == choose_pair(list(reversed(unjudged)), random.Random(3))
    assert choose_pair([], random.Random(0)) is None


def test_a_questions_fewest_votes_come_from_counts() -> None:
    # 3 answers: 3 pairs; two voted, so one has no vote
    assert least_votes(QuestionTally("q", 3, {(1, 2): 2, (1, 3): 1})) == 0
    assert least_votes(QuestionTally("q", 3, {(1, 2): 2, (1, 3): 1, (2, 3): 4})) == 1
    # the voter voted on (1, 3): the rest
    assert least_votes(QuestionTally("q", 3, {(1, 2): 2, (1, 3): 1, (2, 3): 4}, frozenset({(1, 3)}))) == 2
    # the only unvoted pair was skipped
    assert least_votes(QuestionTally("q", 3, {(1, 2): 2, (1, 3): 1}, frozenset({(2, 3)}))) == 1
    assert least_votes(QuestionTally("q", 2, {(1, 2): 1}, frozenset({(1, 2)}))) is None
    tallies = [QuestionTally("voted", 2, {(1, 2): 1}), QuestionTally("fresh", 2), QuestionTally("new", 4),
               QuestionTally("done", 2, {(7, 8): 1}, frozenset({(7, 8)}))]
    assert {q for seed in range(30) for q in sample_questions(tallies, random.Random(seed), 1)} == {"fresh", "new"}
    assert sorted(sample_questions(tallies, random.Random(0), 8)) == ["fresh", "new"]
    assert sample_questions(tallies[3:], random.Random(0), 8) == []


# ---- the store's query ----------------------------------------------------------------------------


def add(store: Store, question: str, outputs: dict[str, str]) -> dict[str, int]:
    made = store.add_submissions([NewSubmission(question, f"text of {question}", model, "default", output)
                                  for model, output in outputs.items()])
    return {model: id_ for model, (id_, _) in zip(outputs, made)}


def store_votes(store: Store, voter: str, *pairs: tuple[int, int]) -> None:
    by_id, _ = store.submissions_named({i for p in pairs for i in p}, [])
    store.add_votes([Vote(voter, by_id[a], by_id[b], Verdict.A, a) for a, b in pairs])


def judge_pairs(store: Store, *pairs: tuple[int, int]) -> None:
    """An LLM judge's verdicts (a won) on these pairs."""
    store.import_judgements(name="gpt4", source="test", judge=LLM, criteria="overall", rows=[
        ImportedJudgement(f"g{a}-{b}", a, b, Winner.A, [{"first": a, "winner": "A"}]) for a, b in pairs])


def shown(store: Store, judge: str = "human/alice", seeds: range = range(40), **options: Any) -> set[tuple[int, int]]:
    """Every pair the store offers `judge` over these seeds (sorted ids)."""
    found = set()
    for seed in seeds:
        pair = store.next_vote_pair(judge, random.Random(seed), **options)
        found.add(None if pair is None else pair_of(pair.left.id, pair.right.id))
    return found


def test_the_store_offers_the_least_voted_pair_an_llm_judged(store: Store) -> None:
    q1 = add(store, "q1", {"m1": "one", "m2": "two", "m3": "three"})
    q2 = add(store, "q2", {"m1": "uno", "m2": "dos"})
    add(store, "q3", {"m1": "alone"})  # one answer: no pair
    store.add_submissions([NewSubmission("q2", "text of q2", "imported", "default", PLACEHOLDER_OUTPUT)])
    s12, s13, s23 = pair_of(q1["m1"], q1["m2"]), pair_of(q1["m1"], q1["m3"]), pair_of(q1["m2"], q1["m3"])
    t12 = pair_of(q2["m1"], q2["m2"])
    assert shown(store) == {s12, s13, s23, t12}  # no votes, nothing judged: any pair, never the placeholder
    store_votes(store, "bob", s12, s13, t12)
    assert shown(store) == {s23}  # the only pair without a vote
    store_votes(store, "carol", s23)
    assert shown(store) == {s12, s13, s23, t12}  # one vote each
    judge_pairs(store, s13)
    assert shown(store) == {s13}  # among the fewest, the LLM judge's
    store_votes(store, "alice", s13)
    assert shown(store) == {s12, s23, t12}  # never a pair the voter voted on; s13 has 2 votes now anyway
    store_votes(store, "carol", s12, t12)
    assert shown(store) == {s23}
    assert shown(store, "human/carol") == {s13}  # carol voted on the rest
    assert shown(store, skip=s23) == {s12, t12}  # a pair just skipped waits a turn
    store_votes(store, "alice", s12, s23, t12)
    assert shown(store) == {None}  # alice voted on every pair
    assert store.votes_cast("human/alice") == 4 and store.votes_cast("human/zed") == 0
    chosen = store.next_vote_pair("human/dan", random.Random(1))
    assert chosen is not None and chosen.question == "text of q1" and chosen.left.question_id == "q1"
    sides = {store.next_vote_pair("human/dan", random.Random(seed)).left.id for seed in range(40)}
    assert sides == {q1["m1"], q1["m3"]}  # s13 (fewest votes, judged), its sides at random


# ---- the page: signing in ------------------------------------------------------------------------


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    client = make_client()
    app_state_of(client).vote_rng.seed(11)
    return client


def issue(client: TestClient, name: str, *scopes: str) -> str:
    response = client.post("/api/keys", json={"name": name, "scopes": list(scopes)}, headers=ADMIN)
    assert response.status_code == 201, response.text
    return response.json()["secret"]


def submit(client: TestClient, question: str, outputs: dict[str, str], text: str | None = None) -> dict[str, int]:
    batch = [{"question": text or f"text of {question}", "question_id": question, "model": model, "output": output}
             for model, output in outputs.items()]
    response = client.post("/api/submissions", json=batch, headers=ADMIN)
    assert response.status_code == 201, response.text
    return {model: s["id"] for model, s in zip(outputs, response.json()["submissions"])}


def post(client: TestClient, fields: dict[str, Any], url: str = "/vote") -> Response:
    return client.post(url, data=fields, follow_redirects=False)


def sign_in(client: TestClient, key: str) -> Response:
    return post(client, {"action": "sign-in", "key": key})


def human_judgements(client: TestClient) -> list[tuple]:
    return [(r.judge, r.a_id, r.b_id, r.outcome) for r in store_of(client).health_records() if r.judge.startswith("human/")]


def form_of(text: str) -> dict[str, str]:
    """The vote form's hidden fields."""
    found = re.search(r'<form id="vote-form" method="post" action="/vote">(.*?)</form>', text, re.DOTALL)
    assert found, "no vote form on the page"
    return dict(re.findall(r'<input type="hidden" name="([a-z]+)" value="([^"]*)">', found[1]))


def alert(text: str) -> str:
    found = re.search(r'role="alert">(.*?)</p>', text, re.DOTALL)
    assert found, "no message on the page"
    return html.unescape(found[1])


def test_signing_in_keeps_the_voter_key_in_a_strict_http_only_cookie(client: TestClient) -> None:
    first = client.get("/vote")
    assert first.status_code == 200
    assert '<label for="voter-key">Your voter key</label>' in first.text
    assert re.search(r'<input id="voter-key" name="key" type="password"', first.text)
    key = issue(client, "alice", "vote")
    signed = sign_in(client, key)
    assert signed.status_code == 303 and signed.headers["location"] == "/vote"
    cookie = signed.headers["set-cookie"]
    flags = {part.strip().lower() for part in cookie.split(";")}
    assert cookie.startswith(f"{COOKIE}={key};")
    assert {"httponly", "samesite=strict", "path=/vote"} <= flags and "secure" not in flags
    page = client.get("/vote")
    assert "Voting as <strong>alice</strong>: 0 votes cast" in page.text and key not in page.text
    # over HTTPS the cookie is Secure too
    secure = post(client, {"action": "sign-in", "key": key}, url="https://testserver/vote")
    assert "secure" in {part.strip().lower() for part in secure.headers["set-cookie"].split(";")}
    # stop voting clears it
    out = post(client, {"action": "sign-out"})
    assert out.status_code == 303 and f'{COOKIE}=""' in out.headers["set-cookie"]
    assert "Max-Age=0" in out.headers["set-cookie"] and "Path=/vote" in out.headers["set-cookie"]
    assert "Your voter key" in client.get("/vote").text


@pytest.mark.parametrize(("key", "words"), [
    (API_KEY, "That is the admin key"),
    ("boss:admin+vote", "has the admin scope"),
    ("ci:submit", "lacks the vote scope"),
    ("jst_not-a-key", "not valid"),
    ("", "Enter your voter key"),
])
def test_only_a_voter_key_signs_in(client: TestClient, key: str, words: str) -> None:
    if ":" in key:
        name, scopes = key.split(":")
        key = issue(client, name, *scopes.split("+"))
    refused = sign_in(client, key)
    assert refused.status_code in (403, 422)
    assert words in alert(refused.text) and "POST /api/keys" in alert(refused.text)
    assert COOKIE + "=jst" not in refused.headers.get("set-cookie", "")
    assert API_KEY not in refused.headers.get("set-cookie", "") and COOKIE not in client.cookies
    assert "Your voter key" in client.get("/vote").text


def test_a_revoked_key_stops_voting(client: TestClient) -> None:
    submit(client, "q1", {"m1": "a", "m2": "b"})
    key = issue(client, "alice", "vote")
    sign_in(client, key)
    form = form_of(client.get("/vote").text)
    [listed] = client.get("/api/keys", headers=ADMIN).json()["keys"]
    assert client.delete(f"/api/keys/{listed['id']}", headers=ADMIN).status_code == 200
    refused = post(client, {**form, "verdict": "left"})
    assert refused.status_code == 403 and "revoked" in alert(refused.text)
    assert human_judgements(client) == []
    assert COOKIE not in client.cookies  # cleared with the refusal
    again = client.get("/vote", headers={"Cookie": f"{COOKIE}={key}"})
    assert again.status_code == 403 and "revoked" in alert(again.text) and "Your voter key" in again.text


# ---- the page: voting ----------------------------------------------------------------------------


@pytest.fixture
def alice(client: TestClient) -> str:
    key = issue(client, "alice", "vote")
    assert sign_in(client, key).status_code == 303
    return key


def test_a_blind_pair_a_vote_filed_as_the_voter_and_the_reveal(client: TestClient, alice: str) -> None:
    ids = submit(client, "q1", {"model-alpha": "Paris is the capital.", "model-beta": "It is Lyon."},
                 text="What is the capital of France?")
    page = client.get("/vote")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store" and "etag" not in page.headers
    assert "What is the capital of France?" in page.text
    assert "Paris is the capital." in page.text and "It is Lyon." in page.text
    assert "Answer 1" in page.text and "Answer 2" in page.text
    assert "model-alpha" not in page.text and "model-beta" not in page.text and "default" not in page.text
    assert '<script src="/static/vote.js" defer></script>' in page.text and "/static/live.js" not in page.text
    assert 'aria-keyshortcuts="1 ArrowLeft"' in page.text and "<kbd>t</kbd> tie" in page.text
    form = form_of(page.text)
    left, right = int(form["left"]), int(form["right"])
    assert {left, right} == set(ids.values())
    assert page.text.index(html.escape("Paris is the capital.") if left == ids["model-alpha"] else "It is Lyon.") \
        < page.text.index("Answer 2")  # the left answer is Answer 1

    voted = post(client, {**form, "verdict": "left"})
    assert voted.status_code == 303
    judgement_id = int(voted.headers["location"].removeprefix("/vote?voted="))
    stored = client.get(f"/api/judgements/{judgement_id}").json()
    assert (stored["judge"], stored["a"]["id"], stored["b"]["id"], stored["outcome"]) == ("human/alice", left, right, "A")
    assert (stored["calls"][0]["first"], stored["calls"][0]["winner"], stored["created_by"]) == (left, "A", "alice")

    after = client.get(voted.headers["location"])
    names = {v: k for k, v in ids.items()}
    assert (f"Recorded: you preferred the left answer. It was <strong>{names[left]} + default</strong> (left) vs "
            f"<strong>{names[right]} + default</strong> (right).") in after.text
    assert "1 vote cast" in after.text and '<a href="/judges">' in after.text
    assert "Nothing left to vote on" in after.text  # the only pair


def test_the_vote_counts_in_judge_health_against_the_llm_judge(client: TestClient, alice: str) -> None:
    ids = submit(client, "q1", {"m1": "one", "m2": "two"})
    store_of(client).import_judgements(name="gpt4", source="test", judge=LLM, criteria="overall", rows=[
        ImportedJudgement("g1", ids["m1"], ids["m2"], Winner.A, [{"first": ids["m1"], "winner": "A"}])])

    def gpt4() -> dict:
        return next(j for j in client.get("/api/judges").json()["judges"] if j["judge"] == LLM)

    assert (gpt4()["human_agreement"], gpt4()["human_votes"]) == (None, 0)
    form = form_of(client.get("/vote").text)
    verdict = "left" if int(form["left"]) == ids["m1"] else "right"  # agree with the judge: m1 is better
    assert post(client, {**form, "verdict": verdict}).status_code == 303
    assert (gpt4()["human_agreement"], gpt4()["human_pairs"], gpt4()["human_votes"]) == (1.0, 1, 1)


def test_a_double_submit_is_one_vote_and_a_changed_verdict_is_refused(client: TestClient, alice: str) -> None:
    submit(client, "q1", {"m1": "one", "m2": "two"})
    form = form_of(client.get("/vote").text)
    first = post(client, {**form, "verdict": "tie"})
    again = post(client, {**form, "verdict": "tie"})
    assert first.status_code == again.status_code == 303 and first.headers["location"] == again.headers["location"]
    before = human_judgements(client)
    assert len(before) == 1
    changed = post(client, {**form, "verdict": "both_bad"})
    assert changed.status_code == 409 and "You already voted differently on this pair" in alert(changed.text)
    assert "Nothing was stored" in changed.text and human_judgements(client) == before
    assert "1 vote cast" in client.get("/vote").text


def forged(key: str, left: int, right: int) -> dict[str, Any]:
    """A vote form for any two ids, with the token the server would give alice for them."""
    return {"action": "vote", "left": left, "right": right, "token": pair_token(API_KEY, Voter("alice", key), left, right),
            "verdict": "left"}


@pytest.mark.parametrize(("change", "status", "words"), [
    ({"token": "0" * 64}, 403, "its token does not match"),
    ({"token": ""}, 403, "token does not match"),
    ("swapped", 403, "token does not match"),
    ("other voter", 403, "token does not match"),
    ({"verdict": "maybe"}, 422, "is not one of left, right, tie, both_bad"),
    ({"left": "abc"}, 422, "Left: 'abc' is not a submission id"),
    ({"right": "99999999999"}, 422, "is not a submission id"),
    ("unknown", 404, "This pair cannot be voted on: no submission 999999"),
    ("other question", 422, "answer different questions"),
    ("placeholder", 422, "placeholder"),
    ({"action": "dance"}, 400, "is not one of sign-in, sign-out, vote"),
])
def test_a_bad_vote_is_a_page_and_stores_nothing(client: TestClient, alice: str, change: Any, status: int,
                                                  words: str) -> None:
    ids = submit(client, "q1", {"m1": "one", "m2": "two"})
    other = submit(client, "q2", {"m1": "uno"})
    form = {**form_of(client.get("/vote").text), "verdict": "left"}
    left, right = int(form["left"]), int(form["right"])
    if change == "swapped":
        form = {**form, "left": right, "right": left}
    elif change == "other voter":
        form = {**form, "token": pair_token(API_KEY, Voter("bob", issue(client, "bob", "vote")), left, right)}
    elif change == "unknown":
        form = forged(alice, left, 999999)
    elif change == "other question":
        form = forged(alice, ids["m1"], other["m1"])
    elif change == "placeholder":
        store_of(client).add_submissions([NewSubmission("q1", "text of q1", "imported", "default", PLACEHOLDER_OUTPUT)])
        placeholder = store_of(client).list_submissions(model="imported")[0].id
        form = forged(alice, left, placeholder)
    else:
        form = {**form, **change}
    refused = post(client, form)
    assert refused.status_code == status, refused.text
    assert words in alert(refused.text) and "Nothing was stored" in refused.text
    assert human_judgements(client) == []


def test_a_vote_without_a_voter_is_refused(client: TestClient) -> None:
    ids = submit(client, "q1", {"m1": "one", "m2": "two"})
    key = issue(client, "alice", "vote")
    refused = post(client, forged(key, ids["m1"], ids["m2"]))
    assert refused.status_code == 401 and "Sign in with your voter key" in alert(refused.text)
    assert "Your voter key" in refused.text and human_judgements(client) == []
    not_a_form = client.post("/vote", json={"action": "vote"}, follow_redirects=False)
    assert not_a_form.status_code == 400 and "application/x-www-form-urlencoded" in alert(not_a_form.text)


def test_user_text_is_escaped_and_nothing_is_inline(client: TestClient, alice: str) -> None:
    submit(client, "q1", {"m1": EVIL, "m2": "fine"}, text=f"Question {EVIL}")
    page = client.get("/vote").text
    assert EVIL not in page and page.count(str(escape(EVIL))) == 2  # the question's, the answer's
    assert re.findall(r"<script[^>]*>", page) == ['<script src="/static/vote.js" defer>']
    assert " style=" not in page and not re.search(r"\son[a-z]+=", page)
    assert client.get("/static/vote.js").status_code == 200


def test_skip_waits_a_pair_and_a_bad_skip_or_receipt_is_a_page(client: TestClient, alice: str) -> None:
    ids = submit(client, "q1", {"m1": "one", "m2": "two", "m3": "three"})
    store_of(client).import_judgements(name="gpt4", source="test", judge=LLM, criteria="overall", rows=[
        ImportedJudgement("g1", ids["m1"], ids["m2"], Winner.A, [{"first": ids["m1"], "winner": "A"}])])
    judged = {ids["m1"], ids["m2"]}
    page = client.get("/vote").text
    form = form_of(page)
    assert {int(form["left"]), int(form["right"])} == judged  # the judged pair first
    skip = re.search(r'<a id="vote-skip" class="skip-pair" href="([^"]+)"', page)[1]
    assert html.unescape(skip) == f"/vote?skip={form['left']}-{form['right']}"
    skipped = form_of(client.get(html.unescape(skip)).text)
    assert {int(skipped["left"]), int(skipped["right"])} != judged
    assert client.get("/vote?skip=1-x").status_code == 422
    assert client.get("/vote?voted=abc").status_code == 422
    assert client.get("/vote?voted=424242").status_code == 404


def test_a_private_joust_lets_a_voter_vote_with_the_cookie_alone(make_client: MakeClient) -> None:
    client = make_client(private=True)
    submit(client, "q1", {"m1": "secret answer", "m2": "another secret"})
    assert client.get("/").status_code == 401
    assert client.get("/static/page.css").status_code == 200  # the package's files hold no data
    first = client.get("/vote")
    assert first.status_code == 200 and "Your voter key" in first.text and "secret" not in first.text
    key = issue(client, "alice", "vote")
    assert sign_in(client, key).status_code == 303
    form = form_of(client.get("/vote").text)
    assert post(client, {**form, "verdict": "right"}).status_code == 303
    assert len(human_judgements(client)) == 1
    # the cookie is authentication for /vote only
    assert client.get("/api/submissions", headers={"Cookie": f"{COOKIE}={key}"}).status_code == 401
    assert client.get("/judges", headers={"Cookie": f"{COOKIE}={key}"}).status_code == 401


def test_in_a_private_joust_a_voters_key_reads_nothing_that_would_unblind_it(make_client: MakeClient) -> None:
    client = make_client(private=True)
    ids = submit(client, "q1", {"m1": "secret answer", "m2": "another secret"})
    key = issue(client, "alice", "vote")
    reader = issue(client, "reader")
    for path in ("/api/submissions", "/api/leaderboard", "/api/judgements", "/judges", "/"):
        refused = client.get(path, headers={"Authorization": f"Bearer {key}"})
        assert refused.status_code == 403 and "opens /vote only" in refused.text, path
        assert client.get(path, headers={"Authorization": f"Bearer {reader}"}).status_code == 200, path
    # what a voter's key is for still works: the page, and votes through the API
    assert sign_in(client, key).status_code == 303 and client.get("/vote").status_code == 200
    vote = {"a": ids["m1"], "b": ids["m2"], "winner": "A", "voter": "alice"}
    assert client.post("/api/votes", json=vote, headers={"Authorization": f"Bearer {key}"}).status_code == 201
