"""joust.Client through the real app: the FastAPI TestClient (an httpx.Client) as its transport,
or a real uvicorn server on a loopback port; a real Redis, SQLite and PostgreSQL, real RQ burst
workers and the real anthropic SDK against the fake Messages API. Each frame and value is
checked against the API's own JSON for the same request."""
from __future__ import annotations

import io
import json
import math
import socket
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from joust import (
    AuthError,
    Client,
    Conflict,
    DryRun,
    Flag,
    Invalid,
    Judgement,
    NotFound,
    Side,
    Submission,
    TooLarge,
    Tournament,
    TournamentStatus,
    Unreachable,
    Verdict,
    WaitTimeout,
)
from joust.progress import usd
from service.config import Settings
from service.store import Store
from service.usecases.importers.battles import load_battles
from tests.api_fixtures import store_of
from tests.fake_anthropic import FakeAnthropic, prefer
from tests.fake_policies import Decide
from tests.serving import serving
from tests.worker_fixtures import work

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
JUDGE = "anthropic/fake-judge"
PER_MTOK = 1000.0  # USD per million tokens in and out: a call of the fake costs about $0.2
MODELS = ["good", "mid", "bad"]
# 2 questions x 3 models; the `[model]` markers let the fake prefer good > mid > bad.
FRAME = pd.DataFrame([
    {"question": f"Question {q}?", "question_id": f"q{q}", "model": m, "scenario": "default",
     "output": f"[{m}] answer to {q}"}
    for q in range(2) for m in MODELS
])


@pytest.fixture
def env_vars(tmp_path: Path) -> dict[str, str]:
    """A price for the fake judge, so that runs spend something to show."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({JUDGE: {"input": PER_MTOK, "output": PER_MTOK}}))
    return {"JOUST_PRICES": str(prices), "JOUST_RETRY_BACKOFF": "0.05"}


@pytest.fixture
def api_settings(env: Settings) -> Settings:
    """The app on the same database, Redis and queue as this process's worker runtime."""
    return env.with_(api_key=KEY)


class FakeTime:
    """The clock and sleep handed to a Client: each sleep moves the clock and runs `on_sleep`."""

    def __init__(self, on_sleep: Any = None) -> None:
        self.now, self.sleeps, self.on_sleep = 1000.0, [], on_sleep

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(len(self.sleeps))


def joust_client(http: TestClient, key: str | None = KEY, fake_time: FakeTime | None = None, **options: Any) -> Client:
    t = fake_time or FakeTime()
    return Client("http://testserver", key, http=http, clock=t.clock, sleep=t.sleep, **options)


@pytest.fixture
def api(client: TestClient) -> Client:
    return joust_client(client)


def stored(client: TestClient) -> list[dict]:
    return client.get("/api/submissions", params={"limit": 1000}).json()["submissions"]


def plain(value: Any) -> Any:
    """A frame's cell as the API's JSON has it: NaN, NA and NaT are null."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, tuple) and all(isinstance(flag, Flag) for flag in value):  # a board row's flags
        return [{"kind": flag.kind, "evidence": flag.evidence} for flag in value]
    return value


def records(frame: pd.DataFrame) -> list[dict]:
    return [{k: plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


# ---- submit ---------------------------------------------------------------------------------


def test_submit_returns_ids_in_row_order_and_again_the_same_ids(api: Client, client: TestClient) -> None:
    ids = api.submit(FRAME)
    rows = {r["id"]: r for r in stored(client)}
    assert len(ids) == 6 and set(ids) == set(rows)
    for i, row in zip(ids, FRAME.to_dict("records")):
        assert {k: rows[i][k] for k in row} == row

    assert api.submit(FRAME) == ids  # idempotent: the same rows are the same submissions
    assert api.submit(FRAME.to_dict("records")) == ids  # records work as a frame does
    assert api.submit(FRAME.iloc[4].to_dict()) == [ids[4]]  # so does one mapping
    assert len(stored(client)) == 6
    assert api.submit(FRAME.iloc[0:0]) == []


def test_missing_cells_take_the_api_defaults(api: Client, client: TestClient) -> None:
    frame = pd.DataFrame({"question": ["Why?", "Why?"], "question_id": [None, float("nan")], "model": ["x", "y"],
                          "scenario": ["terse", None], "output": ["Because.", "It depends."],
                          "metadata": [{"temperature": 0.2}, None]})
    ids = api.submit(frame)
    hashed = client.post("/api/submissions", headers=AUTH, json={"question": "Why?", "model": "z", "output": "So."})
    rows = {r["id"]: r for r in stored(client)}
    assert [rows[i]["scenario"] for i in ids] == ["terse", "default"]
    assert [rows[i]["metadata"] for i in ids] == [{"temperature": 0.2}, {}]
    default_id = rows[hashed.json()["submissions"][0]["id"]]["question_id"]  # the API's hash of the question
    assert [rows[i]["question_id"] for i in ids] == [default_id, default_id]


def test_a_reference_and_a_conversation_are_submitted_and_come_back(api: Client, client: TestClient) -> None:
    turns = [{"role": "user", "content": "What is 3*4?"}, {"role": "assistant", "content": "12"}]
    ids = api.submit([{"question_id": "mt", "model": "x", "output": turns},
                      {"question_id": "mt", "model": "y", "output": [turns[0], {"role": "assistant", "content": "13"}]}],
                     reference="3*4 = 12")
    one = api.submission(ids[0])
    assert (one.question, one.output, one.reference) == ("What is 3*4?", turns, "3*4 = 12")
    frame = api.submissions(question_id="mt")
    assert list(frame["reference"]) == ["3*4 = 12"] * 2 and frame["output"][0] == turns
    with pytest.raises(Invalid, match="question_id 'mt': reference differs"):
        api.submit({"question_id": "mt", "model": "z", "output": turns, "reference": "twelve"}, reference="12")
    assert len(stored(client)) == 2
    assert api.tournament(judge=JUDGE, dry_run=True).matches == 1
    assert api.tournament(judge=JUDGE, reference_model="x", dry_run=True).matches == 0  # x is the reference


def test_named_columns_go_into_metadata_and_the_id_column_is_left_out(api: Client, client: TestClient) -> None:
    frame = FRAME.assign(temperature=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0], seed=range(6), notes="x")
    frame["metadata"] = [{"run": "r1"}, None, None, None, None, None]
    with pytest.raises(Invalid) as caught:  # a column that is neither a field nor metadata: the API names it
        api.submit(frame)
    assert {"path": "submissions[0].notes", "message": "unknown field"} in caught.value.details

    frame["id"] = api.submit(frame.drop(columns="notes"), metadata=["temperature", "seed"])
    rows = {r["id"]: r for r in stored(client)}
    assert rows[frame["id"][0]]["metadata"] == {"run": "r1", "temperature": 0.0, "seed": 0}
    assert rows[frame["id"][5]]["metadata"] == {"temperature": 1.0, "seed": 5}
    again = api.submit(frame.drop(columns="notes"), metadata=["temperature", "seed"])  # with its id column
    assert again == list(frame["id"])


def sent_batches(http: TestClient) -> list[tuple[int, int]]:
    """(rows, status) of every POST /api/submissions the client sends through `http` from now on."""
    batches: list[tuple[int, int]] = []

    def on_response(response: httpx.Response) -> None:
        if response.request.method == "POST" and response.request.url.path == "/api/submissions":
            batches.append((len(json.loads(response.request.content)), response.status_code))

    http.event_hooks = {"request": [], "response": [on_response]}
    return batches


def test_batches_fit_the_server_limit(make_client: Any) -> None:
    http = make_client(max_batch=4)  # JOUST_MAX_BATCH=4
    assert http.post("/api/submissions", headers=AUTH, json=FRAME.to_dict("records")).status_code == 413
    one_by_one = [http.post("/api/submissions", headers=AUTH, json=row).json()["submissions"][0]["id"]
                  for row in FRAME.to_dict("records")]

    batches = sent_batches(http)
    assert joust_client(http, batch_size=4).submit(FRAME) == one_by_one
    assert batches == [(4, 201), (2, 201)]

    batches.clear()  # a client that asks for more than the server takes halves its batches until they fit
    assert joust_client(http, batch_size=100).submit(FRAME) == one_by_one
    assert batches == [(6, 413), (3, 201), (3, 201)]

    batches.clear()  # and by size: two rows' worth of JSON per request
    two_rows = 2 + sum(len(json.dumps(r, ensure_ascii=False).encode()) + 1 for r in FRAME.iloc[:2].to_dict("records"))
    assert joust_client(http, batch_bytes=two_rows).submit(FRAME) == one_by_one
    assert batches == [(2, 201), (2, 201), (2, 201)]


def test_one_row_over_the_body_limit_is_too_large(make_client: Any) -> None:
    http = make_client(max_body_bytes=2000)
    big = {"question": "Long?", "model": "x", "output": "word " * 1000}
    with pytest.raises(TooLarge) as caught:
        joust_client(http).submit([big])
    assert caught.value.status == 413 and caught.value.rows == range(1)
    same = http.post("/api/submissions", headers=AUTH | {"Content-Type": "application/json"},
                     content=json.dumps([big], ensure_ascii=False).encode())
    assert caught.value.message == same.json()["error"] and "the limit is 2000 bytes" in caught.value.message


def test_a_conflicting_output_is_refused_with_the_apis_message(api: Client, client: TestClient) -> None:
    ids = api.submit(FRAME)
    batch = [{"question": "Question 9?", "question_id": "q9", "model": "good", "output": "new"},
             {**FRAME.iloc[1].to_dict(), "output": "[mid] a different answer"}]
    with pytest.raises(Conflict) as caught:
        api.submit(batch)
    answer = client.post("/api/submissions", headers=AUTH, json=batch)
    assert (caught.value.status, caught.value.message) == (409, answer.json()["error"])
    assert f"submission {ids[1]} " in caught.value.message and "different output" in caught.value.message
    assert caught.value.rows == range(2)
    assert sorted(r["id"] for r in stored(client)) == sorted(ids)  # q9 was not stored either


# ---- tournaments ----------------------------------------------------------------------------


def test_a_dry_run_is_the_apis_price_and_creates_nothing(api: Client, client: TestClient) -> None:
    api.submit(FRAME)
    price = api.tournament(judge=JUDGE, dry_run=True)
    assert isinstance(price, DryRun)
    raw = client.post("/api/tournaments", params={"dry_run": "true"}, headers=AUTH, json={"judge": JUDGE}).json()
    assert {k: getattr(price, k) for k in raw} == raw
    assert (price.matches, price.calls, price.cached, price.priced) == (6, 12, 0, True)
    assert price.estimated_cost_usd > 0
    assert api.tournament(judge=JUDGE, order="single", questions=["q0"], dry_run=True).calls == 3
    assert client.get("/api/tournaments").json() == {"tournaments": [], "next": None}
    with pytest.raises(TypeError, match="a dry run creates no tournament"):
        api.status(price)  # type: ignore[arg-type]


def test_a_tournament_takes_every_option_and_comes_back_typed(api: Client, client: TestClient) -> None:
    api.submit(FRAME)
    run = api.tournament(name="mid-week", judge=JUDGE, order="single", criteria="overall", models=("good", "mid"),
                         scenarios=["default"], questions=pd.Series(["q0"]), budget=5.0, rpm=120.0, tpm=50_000.0,
                         delivery="live")
    assert isinstance(run, Tournament) and run.queued is True
    assert (run.name, run.judge, run.order, run.mode, run.matches_total, run.budget, run.delivery) == (
        "mid-week", JUDGE, "single", "round_robin", 1, 5.0, "live")
    assert run.status in (TournamentStatus.QUEUED, TournamentStatus.RUNNING)
    spec = client.get(f"/api/tournaments/{run.id}").json()["spec"]
    assert run.spec == spec
    assert (spec["models"], spec["scenarios"], spec["questions"], spec["rpm"], spec["tpm"]) == (
        ["good", "mid"], ["default"], ["q0"], 120.0, 50_000.0)

    sampled = api.tournament(mode="sampled", opponents=1, seed=7, judge=JUDGE)
    assert (sampled.mode, sampled.spec["opponents"], sampled.spec["seed"]) == ("sampled", 1, 7)
    nightly = api.tournament(judge=JUDGE, schedule="0 3 * * *")
    assert nightly.schedule == "0 3 * * *" and nightly.delivery == "batch"  # a scheduled anthropic run
    assert api.status(nightly.id) == api.status(nightly)  # the id or the value


def test_wait_draws_done_failed_left_rate_and_spend(make_client: Any, env: Settings, db: Store,
                                                    fake: FakeAnthropic) -> None:
    fake.decide = unreadable_for("bad", prefer(MODELS))  # 4 of the 6 matches hold bad: they fail
    http = make_client()
    setup = joust_client(http)
    setup.submit(FRAME)
    run = setup.tournament(judge=JUDGE)

    def step(n: int) -> None:  # the first sleep passes with no worker; during the second the run is worked
        if n == 2:
            work(env, db, run.id)

    fake_time = FakeTime(step)
    api = joust_client(http, fake_time=fake_time)
    drawn = io.StringIO()  # stderr by default (see the next test); a file here, apart from the worker's logs
    final = api.wait(run, progress=drawn, poll=30)

    assert fake_time.sleeps == [30, 30]
    assert final == api.status(run.id) and final.finished
    assert (final.matches_done, final.matches_failed, final.matches_pending) == (2, 4, 0)
    assert final.spent_usd > 0
    shown = [line for line in drawn.getvalue().replace("\r", "\n").splitlines() if line.strip()]
    tails = list(dict.fromkeys(line.split("|")[-1].strip() for line in shown))  # the bar's last draw repeats
    # two matches of two calls each in the wait's one minute; the spend is the run's own
    assert tails == [
        "0/6, done 0, failed 0, left 6, - calls/min, $0.0000",
        "0/6, done 0, failed 0, left 6, 0.0 calls/min, $0.0000",
        f"6/6, done 2, failed 4, left 0, 4.0 calls/min, {usd(final.spent_usd)}",
    ]
    assert shown[0].startswith(f"tournament {run.id}:   0%")


def unreadable_for(model: str, otherwise: Decide) -> Decide:
    """A judge that never gives a verdict on a pair holding `model`'s answer."""

    def decide(system: str, users: list[str]) -> str:
        return "Both have merits." if any(f"[{model}]" in u for u in users) else otherwise(system, users)

    return decide


def test_wait_gives_up_after_its_timeout_and_draws_nothing_unasked(api: Client, client: TestClient,
                                                                    capsys: pytest.CaptureFixture) -> None:
    api.submit(FRAME)
    run = api.tournament(judge=JUDGE)
    fake_time = FakeTime()
    waiting = joust_client(client, fake_time=fake_time)
    capsys.readouterr()
    with pytest.raises(WaitTimeout) as caught:
        waiting.wait(run.id, progress=False, poll=30, timeout=45)
    assert fake_time.sleeps == [30, 15]  # the last sleep ends at the timeout
    assert caught.value.tournament.matches_pending == 6 and not caught.value.tournament.finished
    assert "after 45 s (6 matches left)" in caught.value.message
    assert capsys.readouterr().err == ""
    with pytest.raises(WaitTimeout):
        waiting.wait(run, poll=30, timeout=30)  # progress on stderr
    assert capsys.readouterr().err.endswith(f"| 0/6, done 0, failed 0, left 6, 0.0 calls/min, {usd(0)}\n")


# ---- frames ---------------------------------------------------------------------------------


@pytest.fixture
def judged(api: Client, env: Settings, db: Store) -> tuple[Tournament, list[int]]:
    """FRAME submitted and a round robin judged by the real worker: (the run, the ids)."""
    ids = api.submit(FRAME)
    run = api.tournament(judge=JUDGE)
    work(env, db, run.id)
    return api.status(run), ids


def test_leaderboard_frame_equals_the_apis_json(api: Client, client: TestClient, judged: tuple) -> None:
    run, _ = judged
    for by in ("model", "model+scenario"):
        frame = api.leaderboard(by=by, tournament=run)
        body = client.get("/api/leaderboard", params={"by": by, "tournament": run.id}).json()
        assert records(frame) == body["rows"]
        assert frame.attrs == {k: v for k, v in body.items() if k != "rows"}
        assert frame.attrs["by"] == by
    frame = api.leaderboard(ties="davidson")
    body = client.get("/api/leaderboard", params={"ties": "davidson"}).json()
    assert records(frame) == body["rows"] and frame.attrs["ties"] == "davidson"
    assert frame.attrs["tie_parameter"] == body["tie_parameter"] and body["tie_parameter"]["nu"] > 0
    frame = api.leaderboard(tournament=run.id, judge=JUDGE)
    assert list(frame["player"]) == ["good", "mid", "bad"]
    counts = frame[["wins", "losses", "ties"]].itertuples(index=False, name=None)
    assert list(counts) == [(4, 0, 0), (2, 2, 0), (0, 4, 0)]
    assert frame["rating"].dtype == "float64" and frame["rank"].dtype == "int64"
    assert list(frame.columns[:7]) == ["player", "rating", "ci_low", "ci_high", "rank", "rank_low", "rank_high"]
    with pytest.raises(NotFound, match="no verdicts from judge 'anthropic/nobody' here"):
        api.leaderboard(judge="anthropic/nobody")  # a board is one judge's: the API says who has verdicts


def test_judgements_frame_is_one_row_per_judgement_with_calls_flattened(api: Client, client: TestClient,
                                                                        judged: tuple) -> None:
    run, _ = judged
    frame = api.judgements(run)
    body = client.get(f"/api/tournaments/{run.id}/judgements").json()
    assert len(frame) == len(body["judgements"]) == 6 and frame.attrs["tournament"] == run.id
    for row, judgement in zip(frame.to_dict("records"), body["judgements"]):
        assert (row["a"], row["b"], row["outcome"], row["consistent"]) == (
            judgement["a"], judgement["b"], judgement["outcome"], judgement["consistent"])
        assert row["created_at"].tz is not None
        assert row["created_at"].timestamp() == pytest.approx(judgement["created_at"], abs=1e-6)
        for n, call in enumerate(judgement["calls"], start=1):
            assert {k: row[f"call_{n}_{k}"] for k in call} == call
        assert {row["call_1_first"], row["call_2_first"]} == {row["a"], row["b"]}  # both orders
    models = api.submissions().set_index("id")["model"]
    winners = [row.a if row.outcome == "A" else row.b for row in frame.itertuples()]
    for row, winner in zip(frame.itertuples(), winners):
        better = min(models[row.a], models[row.b], key=MODELS.index)
        assert models[winner] == better  # the planted preference, read back through the frame
    assert api.judgements(run.id).equals(frame)


def test_lists_follow_next_to_the_last_page(api: Client, client: TestClient, judged: tuple) -> None:
    run, _ = judged
    asked: list[httpx.URL] = []
    client.event_hooks["request"].append(lambda request: asked.append(request.url))
    paged = joust_client(client, page_size=4)
    assert paged.judgements(run).equals(api.judgements(run)) and len(api.judgements(run)) == 6
    assert paged.submissions(model="good").equals(api.submissions(model="good"))
    assert paged.submissions().equals(api.submissions()) and len(api.submissions()) == 6
    pages = [(u.path, u.params.get("limit"), u.params.get("offset"), u.params.get("model")) for u in asked
             if u.params.get("limit") == "4"]
    judgements = f"/api/tournaments/{run.id}/judgements"
    assert pages == [(judgements, "4", None, None), (judgements, "4", "4", None),
                     ("/api/submissions", "4", None, "good"),
                     ("/api/submissions", "4", None, None), ("/api/submissions", "4", "4", None)]
    with pytest.raises(ValueError, match="page_size"):
        joust_client(client, page_size=0)


def two_by_two(store: Store, tmp_path: Path) -> None:
    """A judge's verdicts on 2 models x 2 scenarios: on turn 1 every system beats every other once
    (each pair one win each way) and m1 wins twice more, so every effect is bounded and m1's is
    positive; on turn 2 (question q1#turn2) one order only, so nothing is bounded there."""
    systems = [("m1", "s1"), ("m1", "s2"), ("m2", "s1"), ("m2", "s2")]
    rows = [("q1", 1, a, b, "model_a") for a in systems for b in systems if a != b]
    rows += [("q2", 1, ("m1", "s1"), ("m2", "s1"), "model_a"), ("q2", 1, ("m1", "s2"), ("m2", "s2"), "model_a")]
    rows += [("q1", 2, ("m1", "s1"), ("m2", "s2"), "model_a"), ("q1", 2, ("m1", "s2"), ("m2", "s1"), "model_a")]
    path = tmp_path / "gpt4.jsonl"
    path.write_text("".join(json.dumps({"question_id": q, "turn": turn, "model_a": a[0], "scenario_a": a[1],
                                        "model_b": b[0], "scenario_b": b[1], "winner": winner}) + "\n"
                            for q, turn, a, b, winner in rows))
    load_battles(store, path)


def effect_records(body: dict) -> list[dict]:
    """The API's effects as the client's frame has them: models, then scenarios, `kind` and `name` first."""
    return [{"kind": kind, "name": row[kind], **{k: v for k, v in row.items() if k != kind}}
            for kind in ("model", "scenario") for row in body[kind + "s"]]


def test_effects_frame_equals_the_apis_json(api: Client, client: TestClient, tmp_path: Path) -> None:
    two_by_two(store_of(client), tmp_path)
    for params in ({}, {"turn": 1}, {"turn": 2}, {"votes": "majority"}, {"judge": "import/gpt4"}):
        frame = api.effects(**params)
        body = client.get("/api/leaderboard/effects", params=params).json()
        assert records(frame) == effect_records(body) and len(frame) == (8 if params.get("turn") == 2 else 4), params
        assert frame.attrs == {k: v for k, v in body.items() if k not in ("models", "scenarios")}
        assert (frame.attrs["turn"], frame.attrs["votes"]) == (params.get("turn"), params.get("votes", "each"))
    frame = api.effects()
    assert list(frame.columns) == ["kind", "name", "component", "effect", "ci_low", "ci_high", "bounded"]
    assert list(frame["kind"]) == ["model", "model", "scenario", "scenario"] and frame["bounded"].all()
    assert frame["effect"].dtype == "float64" and frame["component"].dtype == "int64"
    assert frame.set_index("name").loc["m1", "effect"] > 0
    unbounded = api.effects(turn=2)  # two groups of one order each: no number, NaN, False in `bounded`
    assert list(unbounded["component"]) == [1, 1, 2, 2, 1, 1, 2, 2] and not unbounded["bounded"].any()
    assert unbounded[["effect", "ci_low", "ci_high"]].isna().all().all()
    with pytest.raises(NotFound, match="no verdicts from judge 'import/nobody' here"):
        api.effects(judge="import/nobody")


def test_leaderboard_intervals_and_why_a_row_has_none(api: Client, client: TestClient, tmp_path: Path) -> None:
    two_by_two(store_of(client), tmp_path)
    for params in ({"intervals": "bootstrap"}, {"intervals": "bootstrap", "by": "model+scenario", "turn": 1},
                   {"intervals": "closed", "turn": 2}):
        frame = api.leaderboard(**params)
        body = client.get("/api/leaderboard", params=params).json()
        assert records(frame) == body["rows"] and frame.attrs["intervals"] == params["intervals"], params
    closed, resampled = api.leaderboard(), api.leaderboard(intervals="bootstrap")
    assert list(closed["rating"]) == list(resampled["rating"]) and closed["ci_missing"].isna().all()
    assert frame.attrs["intervals"] == "closed" and (frame["ci_missing"] == "unbounded").all()  # turn 2: one order
    assert frame[["ci_low", "ci_high"]].isna().all().all()
    with pytest.raises(Invalid):
        api.leaderboard(intervals="guessed")


def test_judges_frame_equals_the_apis_json(api: Client, client: TestClient, judged: tuple) -> None:
    frame = api.judges()
    body = client.get("/api/judges").json()
    assert records(frame) == body["judges"]
    assert frame.attrs == {k: v for k, v in body.items() if k != "judges"} and frame.attrs["judge_agreement"] == []
    [row] = records(api.judges(judge=JUDGE))
    assert (row["judge"], row["calls"], row["judgements"], row["consistency"]) == (JUDGE, 12, 6, 1.0)
    assert math.isnan(frame.loc[frame["judge"] == JUDGE, "human_agreement"].iloc[0])  # no human voted
    nobody = api.judges(judge="anthropic/nobody")
    assert nobody.empty and list(nobody.columns[:3]) == ["judge", "calls", "judgements"]


def test_find_judgements_is_the_apis_list_flattened(api: Client, client: TestClient, judged: tuple) -> None:
    run, _ = judged
    body = client.get("/api/judgements", params={"player": "good"}).json()
    frame = api.find_judgements(player="good")
    assert len(frame) == len(body["judgements"]) == 4  # good met mid and bad on two questions
    for row, listed in zip(records(frame), body["judgements"]):
        sides = {f"{side}_{k}": v for side in ("a", "b") for k, v in listed[side].items()}
        assert {k: v for k, v in row.items() if k != "created_at"} == {
            **{k: v for k, v in listed.items() if k not in ("a", "b", "created_at")}, **sides}
        assert row["created_at"].timestamp() == pytest.approx(listed["created_at"], abs=1e-6)
    assert list(frame["result"]) == ["win"] * 4  # the planted preference, from good's side
    assert frame["a_output_chars"].dtype == "int64" and frame["created_at"].dt.tz is not None
    assert frame.attrs == {k: v for k, v in body.items() if k not in ("judgements", "next")}
    assert (frame.attrs["judge"], frame.attrs["player"], frame.attrs["level"]) == (JUDGE, "good", "model")
    cell = api.find_judgements(player="mid", opponent="bad", tournament=run)
    assert len(cell) == 2 and set(cell["result"]) == {"win"}
    newest = api.find_judgements()
    assert len(newest) == 6 and list(newest["id"]) == sorted(newest["id"], reverse=True)
    assert joust_client(client, page_size=4).find_judgements().equals(newest)  # two pages, followed
    assert list(api.find_judgements(limit=2)["id"]) == list(newest["id"][:2])
    assert api.find_judgements(filter="inconsistent").empty  # the fake judge never contradicts itself
    assert list(api.find_judgements(level="model+scenario", player="good + default")["id"]) == list(frame["id"])
    with pytest.raises(Invalid, match="query parameter filter"):
        api.find_judgements(filter="bogus")
    with pytest.raises(NotFound, match="no verdicts from judge 'anthropic/nobody'"):
        api.find_judgements(judge="anthropic/nobody")
    with pytest.raises(ValueError, match="limit"):
        api.find_judgements(limit=0)


def test_one_judgement_and_one_submission_come_back_typed(api: Client, client: TestClient, judged: tuple) -> None:
    _, ids = judged
    jid = int(api.find_judgements(limit=1)["id"][0])
    full = api.judgement(jid, outputs=True)
    body = client.get(f"/api/judgements/{jid}", params={"outputs": "true"}).json()
    assert isinstance(full, Judgement) and isinstance(full.a, Side)
    assert (full.id, full.judge, full.question, full.outcome, full.consistent) == (
        jid, JUDGE, body["question"], body["outcome"], body["consistent"])
    assert (full.a.output, full.b.output) == (body["a"]["output"], body["b"]["output"])
    assert full.a.output.startswith(f"[{full.a.model}]") and full.a.output_chars == len(full.a.output)
    assert full.calls == tuple(body["calls"]) and {c["first"] for c in full.calls} == {full.a.id, full.b.id}
    assert full.extra["key"] == body["key"]
    plain = api.judgement(jid)
    assert (plain.a.output, plain.b.output) == (None, None) and plain.a.output_chars == full.a.output_chars
    one = api.submission(ids[0])
    assert isinstance(one, Submission)
    assert (one.id, one.model, one.question_id, one.output) == (ids[0], "good", "q0", FRAME.output[0])
    assert one == Submission.from_json(client.get(f"/api/submissions/{ids[0]}").json())
    with pytest.raises(NotFound, match="no judgement 99999"):
        api.judgement(99999)
    with pytest.raises(NotFound, match="no submission 99999"):
        api.submission(99999)


# ---- errors ---------------------------------------------------------------------------------


def test_errors_are_typed_and_carry_the_apis_message(api: Client, client: TestClient) -> None:
    row = FRAME.iloc[0].to_dict()
    with pytest.raises(AuthError) as wrong:
        joust_client(client, key="wrong-key").submit([row])
    raw = client.post("/api/submissions", headers={"Authorization": "Bearer wrong-key"}, json=[row])
    assert (wrong.value.status, wrong.value.message) == (raw.status_code, raw.json()["error"])
    with pytest.raises(AuthError) as missing:
        joust_client(client, key=None).tournament(judge=JUDGE)
    assert missing.value.status == 401

    with pytest.raises(NotFound) as unknown:
        api.status(999)
    assert (unknown.value.status, unknown.value.message) == (404, "no tournament 999")
    with pytest.raises(NotFound):
        api.judgements(999)

    with pytest.raises(Invalid) as invalid:
        api.submit([row, {"question": "Q?", "output": "x"}])
    assert invalid.value.status == 422 and invalid.value.rows == range(2)
    assert invalid.value.message == "submissions[1].model: field required"
    assert invalid.value.details == [{"path": "submissions[1].model", "message": "field required"}]
    with pytest.raises(Invalid) as sampled:
        api.tournament(mode="sampled")
    raw = client.post("/api/tournaments", headers=AUTH, json={"mode": "sampled"}).json()
    assert (sampled.value.message, sampled.value.details) == (raw["error"], raw["details"])
    assert "opponents" in sampled.value.message
    with pytest.raises(Invalid, match="dimension"):
        api.leaderboard(dimension="beauty")
    assert stored(client) == []  # nothing refused was stored


def test_an_unreachable_server_is_a_typed_error() -> None:
    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with Client(f"http://127.0.0.1:{port}", KEY, timeout=5) as api, pytest.raises(Unreachable) as caught:
        api.judges()
    assert caught.value.status is None and f"127.0.0.1:{port}/api/judges" in caught.value.message


# ---- votes ----------------------------------------------------------------------------------


def test_a_vote_is_stored_once_and_feeds_judge_health(api: Client, client: TestClient) -> None:
    if "/api/votes" not in client.get("/openapi.json").json()["paths"]:
        pytest.skip("POST /api/votes is not on this branch yet (it is being built on another one); "
                    "this test runs once the route is merged")
    ids = api.submit(FRAME)
    good, mid = ids[0], ids[1]
    vote = api.vote(good, mid, "A", "alice", first=mid)
    assert (vote.judge, vote.created) == ("human/alice", True)
    again = api.vote(good, mid, Verdict.A, "alice", first=mid)
    assert (again.id, again.created) == (vote.id, False)
    with pytest.raises(Conflict):
        api.vote(good, mid, "B", "alice", first=mid)  # a vote is final
    assert "human/alice" in set(api.judges()["judge"])


# ---- over a socket --------------------------------------------------------------------------


def test_the_client_over_a_real_socket(api_settings: Settings, env: Settings, db: Store) -> None:
    with serving(api_settings) as url, Client(url, KEY) as api:
        ids = api.submit(FRAME)
        assert api.submit(FRAME) == ids and len(ids) == 6
        assert api.tournament(judge=JUDGE, dry_run=True).calls == 12
        run = api.tournament(judge=JUDGE)
        work(env, db, run.id)
        final = api.wait(run, progress=False)
        assert (final.status, final.matches_done) == (TournamentStatus.DONE, 6)
        assert list(api.leaderboard(tournament=run)["player"]) == ["good", "mid", "bad"]
        assert len(api.judgements(run)) == 6
        with pytest.raises(NotFound):
            api.status(run.id + 1000)
