"""The CLI's HTTP commands (`joust tournament ...`, `joust submit FILE`, `joust board`, `joust
judgements list`) against
a real API on a loopback socket (uvicorn), a real Redis and database, real RQ burst workers and
the real anthropic SDK against the fake Messages API. What each command prints is checked
against the API's own JSON for the same question."""
from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import httpx
import pandas as pd
import pytest

from service.cli import main
from service.config import Settings
from service.store import Store
from tests.fake_anthropic import FakeAnthropic, prefer
from tests.required import require_module
from tests.serving import serving
from tests.test_client import effect_records, two_by_two, unreadable_for
from tests.worker_fixtures import work

KEY = "test-key"
JUDGE = "anthropic/fake-judge"
MODELS = ["good", "mid", "bad"]
ROWS = [{"question": f"Question {q}?", "question_id": f"00{q}", "model": m, "scenario": "default",
         "output": f"[{m}] answer to {q}", "metadata": json.dumps({"row": 3 * q + i})}
        for q in range(2) for i, m in enumerate(MODELS)]


@pytest.fixture
def env_vars(tmp_path: Path) -> dict[str, str]:
    """A price for the fake judge (a budget needs one), and quick retries."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({JUDGE: {"input": 1.0, "output": 1.0}}))
    return {"JOUST_PRICES": str(prices), "JOUST_RETRY_BACKOFF": "0.05"}


@pytest.fixture
def url(env: Settings, monkeypatch: pytest.MonkeyPatch) -> str:
    """The API over a socket, on the worker runtime's database and Redis; the CLI finds it
    through JOUST_URL and sends the key from JOUST_API_KEY."""
    with serving(env.with_(api_key=KEY)) as served:
        monkeypatch.setenv("JOUST_URL", served)
        monkeypatch.setenv("JOUST_API_KEY", KEY)
        yield served


def api(url: str, path: str, **params: object) -> object:
    response = httpx.get(url.rstrip("/") + path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(frame: pd.DataFrame, path: Path, fmt: str) -> Path:
    if fmt in ("csv", "tsv"):
        frame.to_csv(path, sep="\t" if fmt == "tsv" else ",", index=False)
    elif fmt == "parquet":
        require_module("pyarrow", "pyarrow")
        frame.to_parquet(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=fmt == "jsonl", force_ascii=False)
    return path


# ---- submit ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "tsv", "json", "jsonl", "parquet"])
def test_submit_reads_each_format_and_is_idempotent(url: str, tmp_path: Path, fmt: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    frame = pd.DataFrame(ROWS)
    if fmt in ("json", "jsonl", "parquet"):
        frame["metadata"] = [json.loads(m) for m in frame["metadata"]] if fmt != "parquet" else frame["metadata"]
    path = write(frame, tmp_path / f"outputs.{fmt}", fmt)
    assert run(capsys, "submit", str(path)) == (0, f"submitted 6 rows from outputs.{fmt}: 6 new, 0 existing\n", "")
    code, out, _ = run(capsys, "submit", str(path), "--ids")
    stored = api(url, "/api/submissions")["submissions"]
    assert code == 0 and out.split() == [str(s["id"]) for s in stored]  # the same rows: the same ids
    assert [{k: s[k] for k in ("question", "question_id", "model", "scenario", "output", "metadata")}
            for s in stored] == [{**r, "metadata": json.loads(r["metadata"])} for r in ROWS]


def test_submit_folds_named_columns_into_metadata_and_reports_a_refusal(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = pd.DataFrame(ROWS).drop(columns="metadata").assign(temperature="0.7")
    path = write(frame, tmp_path / "outputs.csv", "csv")
    code, _, err = run(capsys, "submit", str(path))
    assert code == 2 and "temperature" in err  # the API refuses an unknown column by name
    assert run(capsys, "submit", str(path), "--metadata", "temperature")[0] == 0
    assert {s["metadata"]["temperature"] for s in api(url, "/api/submissions")["submissions"]} == {"0.7"}
    changed = frame.assign(output="something else")
    code, _, err = run(capsys, "submit", str(write(changed, tmp_path / "changed.csv", "csv")), "--metadata",
                       "temperature")
    assert code == 2 and err.startswith("joust submit: ") and "already" in err  # the API's 409, word for word
    code, _, err = run(capsys, "submit", str(tmp_path / "missing.csv"))
    assert code == 2 and "no such file" in err


def mt_rows(question_id: str) -> list[dict]:
    """MT-Bench-style rows: two models' two-turn conversations on one question."""
    return [{"question_id": question_id, "model": m, "output": [
        {"role": "user", "content": "Write a haiku."}, {"role": "assistant", "content": f"[{m}] haiku"},
        {"role": "user", "content": "Now make it rhyme."}, {"role": "assistant", "content": f"[{m}] rhyme"}]}
        for m in ("good", "bad")]


def test_submit_keeps_turns_apart_unless_told_to_judge_the_whole_conversation(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mt.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in mt_rows("mt1")))
    assert run(capsys, "submit", str(path)) == (0, "submitted 4 rows from mt.jsonl: 4 new, 0 existing\n", "")
    stored = api(url, "/api/submissions")["submissions"]
    assert [(s["question_id"], s["question"], s["output"], s["metadata"]) for s in stored] == [
        ("mt1", "Write a haiku.", "[good] haiku", {"turn": 1}),
        ("mt1#turn2", "Now make it rhyme.", "[good] rhyme", {"turn": 2}),
        ("mt1", "Write a haiku.", "[bad] haiku", {"turn": 1}),
        ("mt1#turn2", "Now make it rhyme.", "[bad] rhyme", {"turn": 2})]
    whole = tmp_path / "whole.jsonl"
    whole.write_text("\n".join(json.dumps(r) for r in mt_rows("mt2")))
    assert run(capsys, "submit", str(whole), "--conversations", "whole")[0] == 0
    kept = api(url, "/api/submissions", question_id="mt2")["submissions"]
    assert [(s["question"], s["output"]) for s in kept] == [("Write a haiku.", r["output"]) for r in mt_rows("mt2")]
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({**mt_rows("mt3")[0], "output": [{"role": "user", "content": "Hi"}] * 2}))
    code, _, err = run(capsys, "submit", str(odd))
    assert code == 2 and "row 1: turns 1-2 are not a user turn and the assistant's reply" in err
    assert len(api(url, "/api/submissions")["submissions"]) == 6


# ---- tournaments ----------------------------------------------------------------------------


@pytest.fixture
def submitted(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    path = write(pd.DataFrame(ROWS), tmp_path / "outputs.csv", "csv")
    assert run(capsys, "submit", str(path))[0] == 0
    return url


def test_create_reaches_every_option_of_the_api(submitted: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = submitted
    dry = httpx.post(url + "api/tournaments?dry_run=true", json={"judge": JUDGE, "models": ["good", "bad"]},
                     headers={"Authorization": f"Bearer {KEY}"}).json()
    code, out, _ = run(capsys, "tournament", "create", "--dry-run", "--judge", JUDGE, "--model", "good",
                       "--model", "bad")
    assert (code, json.loads(out)) == (0, dry)
    assert api(url, "/api/tournaments")["tournaments"] == []  # a dry run creates nothing

    code, out, err = run(capsys, "tournament", "create", "--name", "sampled", "--mode", "sampled", "--opponents", "1",
                       "--seed", "7", "--judge", JUDGE, "--order", "single", "--criteria", "dimensions",
                       "--scenario", "default", "--question", "000", "--question", "001", "--budget", "5",
                       "--rpm", "60", "--tpm", "10000", "--delivery", "live")
    assert code == 0, err
    created = json.loads(out)
    assert code == 0 and (created["status"], created["queued"]) == ("queued", True)
    view = api(url, f"/api/tournaments/{created['id']}")
    assert view["name"] == "sampled" and view["matches_total"] == created["matches_total"]
    spec = view["spec"]
    assert {k: spec[k] for k in ("mode", "opponents", "seed", "judge", "order", "criteria", "budget", "rpm",
                                 "tpm", "delivery")} == {
        "mode": "sampled", "opponents": 1, "seed": 7, "judge": JUDGE, "order": "single", "criteria": "dimensions",
        "budget": 5.0, "rpm": 60.0, "tpm": 10000.0, "delivery": "live"}
    assert (spec["scenarios"], spec["questions"]) == (["default"], ["000", "001"])

    code, out, _ = run(capsys, "tournament", "create", "--judge", JUDGE, "--mode", "adaptive", "--level", "model",
                       "--round-size", "2", "--max-calls", "8", "--target-ci-width", "50", "--schedule", "0 3 * * *")
    spec = api(url, f"/api/tournaments/{json.loads(out)['id']}")["spec"]
    assert code == 0 and {k: spec[k] for k in ("mode", "level", "round_size", "max_calls", "target_ci_width")} == {
        "mode": "adaptive", "level": "model", "round_size": 2, "max_calls": 8, "target_ci_width": 50.0}
    assert api(url, f"/api/tournaments/{json.loads(out)['id']}")["schedule"] == "0 3 * * *"

    code, out, err = run(capsys, "tournament", "create", "--judges", JUDGE, "--judges", "offline/rubric",
                         "--aggregation", "separate", "--panel", "duo")
    assert code == 0, err
    spec = api(url, f"/api/tournaments/{json.loads(out)['id']}")["spec"]
    assert {k: spec[k] for k in ("judge", "judges", "aggregation", "panel")} == {
        "judge": "panel/duo", "judges": sorted([JUDGE, "offline/rubric"]), "aggregation": "separate", "panel": "duo"}


def test_a_refused_request_exits_2_with_the_apis_message(submitted: str, capsys: pytest.CaptureFixture[str]) -> None:
    answer = httpx.post(submitted + "api/tournaments", json={"mode": "anchored", "anchors": ["good", "bad"]},
                        headers={"Authorization": f"Bearer {KEY}"})
    assert answer.status_code == 422
    code, out, err = run(capsys, "tournament", "create", "--mode", "anchored", "--anchor", "good", "--anchor", "bad")
    assert (code, out, err) == (2, "", f"joust tournament create: {answer.json()['error']}\n")
    code, _, err = run(capsys, "tournament", "create", "--budget", "0")
    assert code == 2 and "budget: Input should be greater than 0" in err
    code, _, err = run(capsys, "tournament", "show", "999")
    assert code == 2 and err.startswith("joust tournament show: ") and "999" in err
    assert api(submitted, "/api/tournaments")["tournaments"] == []


def test_the_key_comes_from_the_environment_or_the_data_dir(submitted: str, env: Settings, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("JOUST_API_KEY", "wrong")
    code, _, err = run(capsys, "tournament", "create", "--judge", JUDGE)
    assert code == 2
    assert err == f"joust tournament create: the API key is not valid (key: JOUST_API_KEY; server: {submitted})\n"
    monkeypatch.delenv("JOUST_API_KEY")
    code, _, err = run(capsys, "tournament", "create", "--judge", JUDGE)  # JOUST_DATA_DIR holds no api_key
    assert code == 2 and "authentication required" in err and "set JOUST_API_KEY" in err
    (env.data_dir / "api_key").write_text(KEY + "\n")
    assert run(capsys, "tournament", "create", "--judge", JUDGE)[0] == 0
    other = tmp_path / "other-key"
    other.write_text("wrong")
    code, _, err = run(capsys, "tournament", "create", "--judge", JUDGE, "--api-key-file", str(other))
    assert code == 2 and f"(key: {other};" in err
    code, _, err = run(capsys, "board", "--url", "http://127.0.0.1:9")  # nothing listens there
    assert code == 1 and err.startswith("joust board: http://127.0.0.1:9: ")


def test_list_show_cancel_and_retry(submitted: str, env: Settings, db: Store, fake: FakeAnthropic,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    url = submitted
    fake.decide = unreadable_for("bad", prefer(MODELS))  # the 4 matches holding bad fail
    first = json.loads(run(capsys, "tournament", "create", "--name", "first", "--judge", JUDGE)[1])["id"]
    second = json.loads(run(capsys, "tournament", "create", "--name", "second", "--judge", JUDGE)[1])["id"]
    code, out, _ = run(capsys, "tournament", "list")
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:4] == ["id", "name", "status", "mode"]
    assert [line.split()[:3] for line in lines[1:]] == [[str(second), "second", "queued"],
                                                        [str(first), "first", "queued"]]
    code, out, _ = run(capsys, "tournament", "list", "--format", "json")
    assert [(t["id"], t["name"]) for t in json.loads(out)] == [(second, "second"), (first, "first")]

    code, out, _ = run(capsys, "tournament", "cancel", str(second))
    assert (code, json.loads(out)) == (0, {"id": second, "status": "cancelled", "matches_done": 0,
                                           "matches_cancelled": 6,
                                           "stopped": {"schedule": False, "runs": [], "matches": 6}})
    code, out, _ = run(capsys, "tournament", "show", str(second))
    assert code == 0 and json.loads(out) == api(url, f"/api/tournaments/{second}")

    work(env, db, first)
    assert api(url, f"/api/tournaments/{first}")["matches_failed"] == 4
    fake.decide = prefer(MODELS)  # the judge is fixed: the retried matches get verdicts
    code, out, _ = run(capsys, "tournament", "retry", str(first))
    assert (code, json.loads(out)) == (0, {"id": first, "status": "running", "retried": 4})
    work(env, db, first)
    assert api(url, f"/api/tournaments/{first}")["matches_done"] == 6
    code, _, err = run(capsys, "tournament", "retry", str(first))  # nothing failed now: the API's 409
    assert code == 2 and err.startswith("joust tournament retry: ")


# ---- follow and board -----------------------------------------------------------------------


def test_follow_draws_the_run_and_ends_with_the_board(submitted: str, env: Settings, db: Store,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    url = submitted
    tid = json.loads(run(capsys, "tournament", "create", "--judge", JUDGE)[1])["id"]
    result: list[int] = []
    follower = threading.Thread(target=lambda: result.append(
        main(["tournament", "follow", str(tid), "--progress", "--poll", "0.05", "--timeout", "120"])))
    follower.start()
    work(env, db, tid)  # RQ's worker wants the main thread (signal handlers): the follower waits on its own
    follower.join(150)
    out, err = capsys.readouterr()
    assert result == [0]
    draws = [line for line in err.replace("\r", "\n").splitlines() if line.startswith(f"tournament {tid}: ") and "%|" in line]
    assert draws and all("/6, done " in line for line in draws)
    assert draws[-1].startswith(f"tournament {tid}: 100%") and "6/6, done 6, failed 0, left 0" in draws[-1]
    assert err.rstrip().endswith(f"tournament {tid}: done")
    table = out.splitlines()
    assert table[0].split() == ["component", "rank", "player", "rating", "ci_low", "ci_high", "win_rate", "wins",
                                "losses", "ties", "matches", "flags"]
    assert [line.split()[2] for line in table[1:]] == ["good", "mid", "bad"]
    board = api(url, "/api/leaderboard", tournament=tid)["rows"]
    assert [line.split()[3] for line in table[1:]] == [f"{row['rating']:.1f}" for row in board]


def test_board_formats_agree_with_the_api(submitted: str, env: Settings, db: Store,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    url = submitted
    tid = json.loads(run(capsys, "tournament", "create", "--judge", JUDGE)[1])["id"]
    work(env, db, tid)
    for by in ("model", "model+scenario"):
        rows = api(url, "/api/leaderboard", by=by)["rows"]
        code, out, _ = run(capsys, "board", "--by", by, "--format", "json")
        columns = ["component", "rank", "player", "rating", "ci_low", "ci_high", "win_rate", "wins", "losses",
                   "ties", "matches", "flags"]
        kinds = [",".join(f["kind"] for f in row["flags"]) for row in rows]  # the flags' kinds, comma-separated
        assert code == 0 and json.loads(out) == [{**{c: row[c] for c in columns}, "flags": k} for row, k in zip(rows, kinds)]
        code, out, _ = run(capsys, "board", "--by", by, "--format", "csv", "--tournament", str(tid))
        frame = pd.read_csv(io.StringIO(out))
        assert list(frame.columns) == columns and list(frame["player"]) == [row["player"] for row in rows]
        assert list(frame["wins"]) == [row["wins"] for row in rows]
    body = api(url, "/api/leaderboard", ties="davidson")
    code, out, err = run(capsys, "board", "--ties", "davidson", "--format", "json")
    assert code == 0 and json.loads(out) == [{**{c: row[c] for c in columns},
                                              "flags": ",".join(f["kind"] for f in row["flags"])} for row in body["rows"]]
    nu = body["tie_parameter"]
    assert f"tie parameter nu {nu['nu']:.3f} [{nu['ci_low']:.3f}, {nu['ci_high']:.3f}] (component 1)" in err
    code, out, err = run(capsys, "board", "--ties", "fancy")  # the API's 422, its words
    assert (code, out) == (2, "") and "'half' or 'davidson'" in err
    code, out, err = run(capsys, "board", "--judge", "anthropic/no-such-judge")  # the API's 404, its words
    assert (code, out) == (2, "")
    assert "no verdicts from judge 'anthropic/no-such-judge' here; judges with verdicts: " + JUDGE in err
    code, out, _ = run(capsys, "board", "--by", "nonsense")
    assert code == 2


def test_effects_and_bootstrap_intervals_agree_with_the_api(url: str, db: Store, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    two_by_two(db, tmp_path)
    columns = ["component", "kind", "name", "effect", "ci_low", "ci_high", "bounded"]
    for argv, params in (((), {}), (("--turn", "2"), {"turn": 2}), (("--votes", "majority"), {"votes": "majority"}),
                         (("--judge", "import/gpt4"), {"judge": "import/gpt4"})):
        body = api(url, "/api/leaderboard/effects", **params)
        code, out, err = run(capsys, "effects", *argv, "--format", "json")
        assert code == 0 and json.loads(out) == [{c: row[c] for c in columns} for row in effect_records(body)], argv
        assert "judge import/gpt4 (" in err
    code, out, _ = run(capsys, "effects", "--format", "csv")
    assert list(pd.read_csv(io.StringIO(out)).columns) == columns
    code, out, err = run(capsys, "effects", "--judge", "import/nobody")  # the API's 404, its words
    assert (code, out) == (2, "") and "no verdicts from judge 'import/nobody' here" in err
    board_columns = ["component", "rank", "player", "rating", "ci_low", "ci_high", "win_rate", "wins", "losses",
                     "ties", "matches"]
    for argv, params in ((("--intervals", "bootstrap"), {"intervals": "bootstrap"}),
                         (("--intervals", "bootstrap", "--by", "model+scenario", "--turn", "1"),
                          {"intervals": "bootstrap", "by": "model+scenario", "turn": 1})):
        rows = api(url, "/api/leaderboard", **params)["rows"]
        code, out, err = run(capsys, "board", *argv, "--format", "json")
        assert code == 0 and [{c: r[c] for c in board_columns} for r in json.loads(out)] == \
               [{c: r[c] for c in board_columns} for r in rows], argv
        missing = [f"{r['player']} {r['ci_missing']}" for r in rows if r["ci_missing"]]  # on stderr, as the API says
        assert (f"no interval (-): {', '.join(missing)}" in err) if missing else "no interval" not in err, (argv, err)
    code, out, err = run(capsys, "board", "--turn", "2", "--format", "json")  # one order: no interval, said why
    assert code == 0 and all(r["ci_low"] is None for r in json.loads(out))
    assert "no interval (-): m1 unbounded, m2 unbounded" in err
    code, out, err = run(capsys, "board", "--intervals", "guessed")
    assert (code, out) == (2, "") and "closed" in err and "bootstrap" in err


def test_judgements_list_agrees_with_the_api(submitted: str, env: Settings, db: Store,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    url = submitted
    tid = json.loads(run(capsys, "tournament", "create", "--judge", JUDGE)[1])["id"]
    work(env, db, tid)
    listed = api(url, "/api/judgements", player="good", opponent="bad", limit=10)["judgements"]
    code, out, err = run(capsys, "judgements", "list", "--player", "good", "--opponent", "bad", "--format", "json")
    assert code == 0 and f"judge {JUDGE} (latest tournament), newest first" in err
    shown = json.loads(out)
    assert [row["id"] for row in shown] == [row["id"] for row in listed] and len(shown) == 2
    assert shown[0] == {"id": listed[0]["id"], "outcome": listed[0]["outcome"], "result": "win",
                        "consistent": listed[0]["consistent"], "a_model": listed[0]["a"]["model"],
                        "a_scenario": "default", "b_model": listed[0]["b"]["model"], "b_scenario": "default",
                        "question_id": listed[0]["question_id"], "created_at": shown[0]["created_at"]}
    code, out, _ = run(capsys, "judgements", "list", "--level", "model+scenario", "--player", "mid + default",
                       "--tournament", str(tid), "--limit", "3", "--format", "csv")
    frame = pd.read_csv(io.StringIO(out))
    assert code == 0 and len(frame) == 3 and list(frame.columns[:3]) == ["id", "outcome", "result"]
    assert list(frame["id"]) == [r["id"] for r in api(url, "/api/judgements", player="mid", limit=3)["judgements"]]
    code, out, err = run(capsys, "judgements", "list", "--filter", "sometimes")  # the API's 422, its words
    assert (code, out) == (2, "") and "query parameter filter" in err and "inconsistent" in err
    with pytest.raises(SystemExit):
        run(capsys, "judgements", "list", "--limit", "0")


def test_a_later_turn_is_named_as_the_importers_name_it(tmp_path: Path) -> None:
    """Outputs split by turn and imported votes on that turn name the same question, so the
    votes meet the outputs (an MT-Bench human judgement of turn 2 and its conversation)."""
    from joust.files import read_submissions
    from service.usecases.importers.common import Record
    from service.usecases.importers.verdicts import read_row

    path = tmp_path / "mt.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in mt_rows("81")))
    submitted = set(read_submissions(path)["question_id"])
    vote = read_row(tmp_path / "votes.csv", Record(2, {"question_id": "81", "turn": "2", "model_a": "good",
                                                       "model_b": "bad", "winner": "model_a"}))
    assert vote.question_id in submitted and vote.question_id != "81"
