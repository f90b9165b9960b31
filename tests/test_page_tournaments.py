"""The tournaments pages, `/tournaments` and `/tournaments/{id}`, over a real app and store:
tournaments started through the API with the offline judge, their matches judged by a real RQ
worker taken from the real Redis queue in-process, or resolved and failed with the store calls a
worker makes; scheduled runs started by the real scheduler's tick; an import's layers; stops for
the budget, a failing judge and a cancel."""
from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient
from rq import Queue

from leaderboard.adaptive import StopReason
from leaderboard.keys import content_hash
from leaderboard.spec import RunSpec
from leaderboard.types import Winner
from service.config import Settings
from service.ops.scheduler import Scheduler
from service.store import NewJudgement, Store
from service.store.imports import ImportedJudgement
from service.store.matches import STOPPED_FAILING
from service.web.api_views import TournamentSummary
from service.web.pages.tournament_view import stop_reason
from tests.api_fixtures import app_state_of, store_of
from tests.worker_fixtures import set_env, work_until
from workers import jobs
from workers.budget import BUDGET, UNPRICED

KEY = "tpage-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
QUEUE = "joust-tpage-test"
JUDGE = "offline/rubric"
EVIL = "<script>x</script>"


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(api_key=KEY, queue_name=QUEUE)


# ---- seeding through the API ------------------------------------------------------------------


def submit(client: TestClient, models: str = "abc", question: str = "q1") -> dict[str, int]:
    """One answer per model to `question` (model "a" answers shortest); their ids by model."""
    batch = [{"question": f"text of {question}", "question_id": question, "model": m,
              "output": f"answer of {m} " * (i + 1)} for i, m in enumerate(models)]
    response = client.post("/api/submissions", json=batch, headers=AUTH)
    assert response.status_code == 201, response.text
    return {m: s["id"] for m, s in zip(models, response.json()["submissions"])}


def create(client: TestClient, queue: Queue, **body: object) -> tuple[int, list[int]]:
    """Start a tournament with the offline judge; its id and match ids, taken off the queue."""
    response = client.post("/api/tournaments", json={"judge": JUDGE, **body}, headers=AUTH)
    assert response.status_code == 202, response.text
    matches = [job.args[0] for job in queue.get_jobs()]
    queue.empty()  # the store calls below play the worker
    return response.json()["id"], matches


def judge(store: Store, match_id: int) -> None:
    """What a worker stores for one match: a judgement for the longer answer, in both orders."""
    ctx = store.match_context(match_id)
    assert store.start_match(match_id)
    a_wins = len(ctx.a.output) > len(ctx.b.output)
    calls = [{"first": ctx.a.id, "winner": "A" if a_wins else "B"},
             {"first": ctx.b.id, "winner": "B" if a_wins else "A"}]
    outcome = Winner.A if a_wins else Winner.B
    judgement_id, _ = store.save_judgement(NewJudgement(
        key=f"key-{match_id}", judge=JUDGE, criteria="overall", template_version="t1", a_id=ctx.a.id, b_id=ctx.b.id,
        a_hash=content_hash(ctx.a.output), outcome=outcome, consistent=True, calls=calls, cost_usd=0.25,
        match_id=match_id,
    ))
    assert store.resolve_match(match_id, judgement_id, outcome, True, made=True)


def fail(store: Store, match_id: int, error: str, stop_after: int = 0) -> bool:
    """What a worker stores when a match fails for good."""
    assert store.start_match(match_id)
    return store.fail_match(match_id, error, final=True, stop_after=stop_after)


# ---- reading the pages ------------------------------------------------------------------------


def get(client: TestClient, path: str, status: int = 200) -> str:
    response = client.get(path)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def text_of(fragment: str) -> str:
    """What a reader sees: tags dropped, entities decoded, spaces collapsed (none before
    punctuation or inside brackets)."""
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())
    return re.sub(r"\(\s+", "(", re.sub(r"\s+([).,:;])", r"\1", text))


def live(page: str, name: str) -> str:
    """The HTML of the page's `data-live` region `name`."""
    found = re.search(rf'<section data-live="{name}"[^>]*>(.*?)</section>', page, re.S)
    assert found, f"no live region {name!r}"
    return found.group(1)


def list_rows(page: str) -> list[list[str]]:
    """The list's rows as the text of their cells (a row's folded runs left out)."""
    body = page.split("<caption>Tournaments</caption>")[1].split("</table>")[0].split("<tbody>")[1]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", re.sub(r"<details.*?</details>", "", row, flags=re.S), re.S)
        rows.append([text_of(cell) for cell in cells])
    return rows


def listed_ids(page: str) -> list[int]:
    return [int(row[0]) for row in list_rows(page) if row[0].isdigit()]


# ---- the list ---------------------------------------------------------------------------------


def test_the_list_shows_each_tournament_newest_first_with_progress_failures_and_spend(
        client: TestClient, queue: Queue) -> None:
    store = store_of(client)
    submit(client)
    first, _ = create(client, queue, name="plain")
    second, matches = create(client, queue, name="capped", budget=5.0)
    judge(store, matches[0])
    fail(store, matches[1], "ProviderError: 500")
    page = get(client, "/tournaments")
    rows = list_rows(page)
    assert [row[0] for row in rows] == [str(second), str(first)]
    created = rows[0][9]
    assert rows[0][:9] == [str(second), "capped", "running", JUDGE, "round_robin", "1 / 3", "1",
                           "$0.2500 of $5.00", "—"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", created)
    assert rows[1][:8] == [str(first), "plain", "queued", JUDGE, "round_robin", "0 / 3", "0",
                           "$0.0000 (no budget)"]
    assert f'<a href="/tournaments/{second}">capped</a>' in page  # the name links to its page
    assert '<progress value="1" max="3" aria-label="1 of 3 matches judged">' in page
    assert '<progress value="0.25" max="5.0"' in page  # spend against the budget
    # the same figures the API serves
    api = client.get(f"/api/tournaments/{second}").json()
    assert (api["matches_done"], api["matches_failed"], api["spent_usd"]) == (1, 1, 0.25)
    listed = client.get("/api/tournaments").json()["tournaments"]
    assert [(t["id"], t["matches_done"], t["matches_failed"], t["matches_total"]) for t in listed] == [
        (second, 1, 1, 3), (first, 0, 0, 3)]


def test_no_tournaments_yet(client: TestClient) -> None:
    page = get(client, "/tournaments")
    assert list_rows(page) == [["No tournaments yet: submit outputs and start one (API)."]]
    assert 'rel="next"' not in page and 'rel="prev"' not in page


def test_the_list_is_paged_fifty_at_a_time(client: TestClient) -> None:
    store = store_of(client)
    spec = RunSpec(judge=JUDGE)
    ids = [store.create_tournament(f"t{n}", spec, []) for n in range(52)]
    store.create_tournament("a run of the first", spec, [], parent_id=ids[0])  # not a row of its own
    page = get(client, "/tournaments")
    assert listed_ids(page) == ids[::-1][:50]
    assert '<a href="/tournaments?offset=50" rel="next">Older tournaments</a>' in page
    assert 'rel="prev"' not in page
    older = get(client, "/tournaments?offset=50")
    assert listed_ids(older) == [ids[1], ids[0]]
    assert '<a href="/tournaments" rel="prev">Newer tournaments</a>' in older and 'rel="next"' not in older
    assert "1 run, latest" in live(older, "tournaments")
    beyond = get(client, "/tournaments?offset=500")
    assert list_rows(beyond) == [["No tournaments this far back: the newest ones."]]
    for bad in ("-1", "x", "1.5", str(2**63)):
        problem = get(client, f"/tournaments?offset={bad}", 422)
        assert "is not a number of tournaments to skip" in problem


def test_scheduled_runs_and_import_layers_are_folded_under_their_parent(
        client: TestClient, queue: Queue, api_settings: Settings) -> None:
    store = store_of(client)
    ids = submit(client)
    parent, matches = create(client, queue, name="nightly", schedule="0 3 * * *")
    for match in matches:
        judge(store, match)
    scheduler = Scheduler(store, app_state_of(client).queue, api_settings)
    runs = []
    for night in range(2):  # each tick at the next due time starts that night's run
        runs += scheduler.tick(store.get_tournament(parent).next_run_at).started
        started = [job.args[0] for job in queue.get_jobs()]
        queue.empty()
        if night == 0:  # the first night's run is judged; the second's waits
            for match in started:
                judge(store, match)
    assert len(runs) == 2
    # an import with a repeated verdict on one pair: the repeat goes to a layer
    a, b = ids["a"], ids["b"]
    verdicts = [ImportedJudgement(f"v{n}", a, b, Winner.A, [{"first": a, "winner": "A"}]) for n in range(2)]
    imported = store.import_judgements(name="crowd", source="test", judge="import/crowd", criteria="overall",
                                       rows=verdicts)
    (layer,) = imported.layers

    page = get(client, "/tournaments")
    assert listed_ids(page) == [imported.tournament_id, parent]  # runs and layers are no rows of their own
    region = live(page, "tournaments")
    summary = text_of(region.split(f'<details id="runs-{parent}">')[1].split("</summary>")[0])
    assert summary == f"2 runs, latest #{runs[1]} queued"
    folded = region.split(f'<details id="runs-{parent}">')[1].split("</details>")[0]
    assert [int(i) for i in re.findall(r'<a href="/tournaments/(\d+)">', folded)] == runs[::-1]
    assert f"#{runs[0]} done, 3 / 3 judged" in text_of(folded)
    assert text_of(region.split(f'<details id="runs-{imported.tournament_id}">')[1].split("</summary>")[0]) == \
        f"1 layer, latest #{layer} done"

    # the parent's page lists its runs; a run's page links back to its parent
    parent_page = get(client, f"/tournaments/{parent}")
    listed = live(parent_page, "runs")
    assert [int(i) for i in re.findall(r'<td class="num"><a href="/tournaments/(\d+)">', listed)] == runs[::-1]
    assert "2 runs, one started at each due time of its schedule" in text_of(listed)
    run_page = get(client, f"/tournaments/{runs[0]}")
    assert f'one of the runs of <a href="/tournaments/{parent}">tournament #{parent}</a>' in run_page
    assert 'data-live="runs"' not in run_page
    assert "one of the layers of" in get(client, f"/tournaments/{layer}")

    # the finished runs' boards were snapshotted at the ticks: the parent's page draws their history
    chart = live(get(client, f"/tournaments/{parent}"), "history")
    assert "<svg" in chart and f"History of nightly (#{parent}): rating by run (2 runs)" in chart  # the first run and the first night's


def test_a_run_judged_by_a_real_worker(client: TestClient, api_settings: Settings,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline judge's verdicts, by an RQ worker in this process reading the app's queue."""
    store = store_of(client)
    submit(client, "abcd")
    response = client.post("/api/tournaments", json={"judge": JUDGE, "name": "worked"}, headers=AUTH)
    tid = response.json()["id"]
    before = get(client, f"/tournaments/{tid}")
    assert text_of(live(before, "progress")).startswith("Progress 0 / 6 matches judged.")
    assert "No board yet: no verdicts in this tournament." in text_of(live(before, "board"))
    set_env(monkeypatch, {"JOUST_DATA_DIR": str(api_settings.data_dir), "REDIS_URL": api_settings.redis_url,
                          "DATABASE_URL": api_settings.resolved_database_url, "JOUST_QUEUE": QUEUE})
    try:
        work_until(Settings.from_env(), lambda: store.get_tournament(tid).matches_pending == 0)
    finally:
        jobs.shutdown(drain_s=5)
    after = get(client, f"/tournaments/{tid}")
    assert live(after, "progress") != live(before, "progress")
    assert text_of(live(after, "progress")).startswith("Progress 6 / 6 matches judged.")
    assert "Finished: every match settled (6 judged)." in text_of(live(after, "status"))
    board = text_of(live(after, "board"))
    assert f"The top 4 of 4 models by {JUDGE}" in board
    shown = re.findall(r'<tr><td class="num">\d+</td><td>(.*?)</td>', live(after, "board"))
    assert shown == [row["player"] for row in client.get(f"/api/leaderboard?tournament={tid}&by=model").json()["rows"]]
    assert f'<a href="/?tournament={tid}">its board</a>' in after


# ---- one tournament ---------------------------------------------------------------------------


def test_a_running_tournament_shows_progress_pace_spend_and_board(client: TestClient, queue: Queue) -> None:
    store = store_of(client)
    submit(client)
    tid, matches = create(client, queue, name="going", budget=2.0)
    judge(store, matches[0])
    judge(store, matches[1])
    page = get(client, f"/tournaments/{tid}")
    for region in ("status", "progress", "spend", "failures", "board"):
        assert f'data-live="{region}"' in page
    status = text_of(live(page, "status"))
    assert f"Status running Judge {JUDGE} (criteria overall) Mode round_robin Delivery live Order both" in status
    assert "Retried 0 matches handed out again" in status and "Finished —" in status
    progress = text_of(live(page, "progress"))
    assert progress.startswith("Progress 2 / 3 matches judged. Judged 2 Failed 0 Cancelled 0 Left 1")
    assert ("Pace over the last 5 minutes: 2 matches judged, 0.4 a minute, about 0.8 judge calls a minute "
            "(two calls a match, one per order;") in progress
    assert text_of(live(page, "spend")).startswith("Spend $0.5000 of $2.00 (25.0% of the budget).")
    assert text_of(live(page, "failures")) == "Failures No match failed."
    board = live(page, "board")
    assert f"The top 3 of 3 models by {JUDGE}" in text_of(board)  # b and c beat a; b and c never met
    assert "1 b — unbounded 1 / 0 / 0 2 c — unbounded 1 / 0 / 0 3 a — unbounded 0 / 2 / 0" in text_of(board)
    assert f'<a href="/?tournament={tid}">The whole board</a>' in board
    assert '<a href="/tournaments">All tournaments</a>' in page


def test_failed_matches_are_grouped_by_message_newest_first(client: TestClient, queue: Queue) -> None:
    store = store_of(client)
    submit(client, "abcde")
    tid, matches = create(client, queue)
    rate, parse = "RateLimitError: 429 too many requests", "VerdictParseError: no verdict in the reply"
    for match in matches[:3]:
        fail(store, match, rate)
    fail(store, matches[3], parse)
    judge(store, matches[4])
    page = get(client, f"/tournaments/{tid}")
    failures = live(page, "failures")
    # no streak: a judgement came after the failures
    assert text_of(failures.split("<table")[0]) == "Failures 4 matches failed, with 2 messages."
    rows = re.findall(r"<tr>\s*<td>(.*?)</td>\s*<td class=\"num\">(\d+)</td>\s*<td>(.*?)</td>", failures, re.S)
    assert [(text_of(error), int(n)) for error, n, _ in rows] == [(rate, 3), (parse, 1)]
    newest = [int(i) for i in re.findall(r"match (\d+) ", text_of(rows[0][2]))]
    assert newest == matches[:3][::-1]  # the newest failure first
    assert "after 1 attempt" in text_of(rows[1][2])
    assert client.get(f"/api/tournaments/{tid}").json()["matches_failed"] == 4


def test_failure_report_keeps_the_largest_groups_and_counts_the_rest(client: TestClient, queue: Queue) -> None:
    store = store_of(client)
    submit(client, "abcde")
    tid, matches = create(client, queue)
    for n, match in enumerate(matches[:7]):
        fail(store, match, f"error {n % 3}")  # error 0 fails 3, error 1 and error 2 two each
    report = store.tournament_failures(tid, groups=2, examples=1)
    assert (report.failed, report.messages, report.streak, report.unshown) == (7, 3, 7, 2)
    assert [(g.error, g.matches, [e.match_id for e in g.examples]) for g in report.groups] == [
        ("error 0", 3, [matches[6]]), ("error 1", 2, [matches[4]])]
    for n, match in enumerate(matches[7:], start=7):
        fail(store, match, f"odd {n}")  # three messages of one match each
    failures = live(get(client, f"/tournaments/{tid}"), "failures")
    errors = [text_of(e) for e in re.findall(r'<div class="output">(.*?)</div>', failures)]
    assert errors == ["error 0", "error 1", "error 2", "odd 7", "odd 8"]  # the page shows five messages
    assert "And 1 match under 1 other message." in text_of(failures)


def test_stops_are_explained_in_words(client: TestClient, queue: Queue) -> None:
    store = store_of(client)
    submit(client, "abcd")
    budgeted, matches = create(client, queue, name="capped", budget=0.5)
    judge(store, matches[0])
    judge(store, matches[1])
    assert store.stop_tournament(budgeted, "budget")  # what a worker does when the next call does not fit
    status = text_of(live(get(client, f"/tournaments/{budgeted}"), "status"))
    assert ("Status cancelled (budget) Why it ended Stopped when its spend reached its budget of $0.5000. "
            "The 4 matches not judged by then were cancelled.") in status

    failing, matches = create(client, queue, name="broken")
    assert not fail(store, matches[0], "AuthenticationError: invalid x-api-key", stop_after=3)
    assert not fail(store, matches[1], "AuthenticationError: invalid x-api-key", stop_after=3)
    assert fail(store, matches[2], "AuthenticationError: invalid x-api-key", stop_after=3)
    status = text_of(live(get(client, f"/tournaments/{failing}"), "status"))
    assert ("Status failed (failing) Why it ended Stopped after 3 failed matches in a row with no judgement "
            "between them") in status
    assert (f"The 3 matches not judged by then were cancelled. Once the judge is fixed, retry it "
            f"(POST /api/tournaments/{failing}/retry)") in status

    cancelled, _ = create(client, queue, name="changed my mind")
    assert client.post(f"/api/tournaments/{cancelled}/cancel", headers=AUTH).status_code == 200
    status = text_of(live(get(client, f"/tournaments/{cancelled}"), "status"))
    assert f"Status cancelled Why it ended Cancelled on request (POST /api/tournaments/{cancelled}/cancel" in status
    assert "The 6 matches not judged by then were cancelled." in status
    assert "Not running: no pace to measure." in get(client, f"/tournaments/{cancelled}")

    empty, _ = create(client, queue, name="nobody", models=["nobody"])
    assert "Nothing to judge: no pair of submissions matched its filters." in \
        text_of(live(get(client, f"/tournaments/{empty}"), "status"))
    listed = {row[0]: row for row in list_rows(get(client, "/tournaments"))}
    assert listed[str(budgeted)][2] == "cancelled (budget)" and listed[str(failing)][2] == "failed (failing)"


def test_every_stop_reason_the_code_sets_has_words(client: TestClient, queue: Queue) -> None:
    submit(client)
    ended = TournamentSummary(**store_of(client).cancel_tournament(create(client, queue)[0]).as_json())
    reasons = {r.value for r in StopReason} | {BUDGET, UNPRICED, STOPPED_FAILING}
    for reason in sorted(reasons):
        words = stop_reason(ended.model_copy(update={"stopped_reason": reason}), streak=10)
        assert words and words != f"Stopped: {reason}. The 3 matches not judged by then were cancelled.", reason
    assert stop_reason(ended.model_copy(update={"stopped_reason": "new"}), 0) == \
        "Stopped: new. The 3 matches not judged by then were cancelled."


def test_a_batch_run_shows_its_requests(client: TestClient, queue: Queue) -> None:
    submit(client)
    response = client.post("/api/tournaments", json={"judge": "anthropic/claude-x", "delivery": "batch"},
                           headers=AUTH)
    tid = response.json()["id"]
    batches = text_of(live(get(client, f"/tournaments/{tid}"), "batches"))
    assert batches.startswith("Batches Requests: 0 pending, 0 submitted, 0 done, 0 failed.")
    assert "No batch yet" in batches
    assert 'data-live="batches"' not in get(client, f"/tournaments/{create(client, queue)[0]}")


def test_a_board_that_cannot_be_computed_leaves_the_rest_of_the_page(
        client: TestClient, queue: Queue, monkeypatch: pytest.MonkeyPatch) -> None:
    submit(client)
    tid, _ = create(client, queue, name="kept")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the fit diverged")

    monkeypatch.setattr(app_state_of(client).boards._boards, "judged_soon", broken)  # type: ignore[attr-defined]
    page = get(client, f"/tournaments/{tid}")
    assert "No board: its board could not be computed: the fit diverged." in text_of(live(page, "board"))
    assert "0 / 3" in live(page, "progress")


def test_unknown_and_malformed_ids_answer_pages(client: TestClient) -> None:
    missing = get(client, "/tournaments/999", 404)
    assert "no tournament 999: the tournaments are listed at /tournaments" in missing
    assert "<title>Tournaments · joust</title>" in missing
    for bad in ("abc", "0", "-3", "1e3", str(2**31)):
        malformed = get(client, f"/tournaments/{bad}", 422)
        assert "is not a tournament id" in malformed and "<h1>Tournaments</h1>" in malformed


def test_an_evil_name_is_shown_never_run(client: TestClient, queue: Queue) -> None:
    submit(client)
    tid, _ = create(client, queue, name=EVIL)
    for page in (get(client, "/tournaments"), get(client, f"/tournaments/{tid}")):
        assert "<script>x" not in page
        assert "&lt;script&gt;x&lt;/script&gt;" in page
