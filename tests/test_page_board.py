"""The board page (`/`) over a real app and store: the selector form and its choices in the
address, one judge's board per view, groups the verdicts never linked shown apart, unbounded
groups shown without ratings, players with few matches marked, mean output lengths, the
problem pages for choices that are not ones, and the ETag on the store's mark."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from leaderboard.types import Level, Winner
from service.config import Settings
from service.store.imports import ImportedJudgement
from service.web.pages.prepared import View
from tests.api_fixtures import MakeClient, app_state_of, store_of
from tests.page_text import rows_of, settled, visible

KEY = "board-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
JUDGE, OTHER = "import/gpt4", "import/claude"
BOARD = "Models board"


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(api_key=KEY)


def submit(client: TestClient, outputs: dict[str, str], question: str, scenario: str = "default") -> dict[str, int]:
    """One submission per model for `question`; their ids by model."""
    batch = [{"question": f"text of {question}", "question_id": question, "model": model, "scenario": scenario,
              "output": output} for model, output in outputs.items()]
    response = client.post("/api/submissions", json=batch, headers=AUTH)
    assert response.status_code == 201, response.text
    return {model: s["id"] for model, s in zip(outputs, response.json()["submissions"])}


def answer(model: str, question: str, chars: int) -> str:
    """A different answer to each question, exactly `chars` long (the same text every time would
    be flagged as near-constant output, `leaderboard.flags`)."""
    rng = random.Random(f"{model}/{question}")
    words = " ".join(rng.choice(("river", "model", "light", "table", "city", "music", "value", "forest", "signal"))
                     for _ in range(chars))
    return words[:chars]


def verdict(key: str, a: int, b: int, winner: str) -> ImportedJudgement:
    return ImportedJudgement(key, a, b, Winner(winner), [{"first": a, "winner": winner}])


def seed(client: TestClient, rng: random.Random, questions: int = 12) -> None:
    """Models x, y, z answering `questions` questions (x's outputs longest); JUDGE prefers x to y
    to z with some upsets, OTHER judges only x against y, and always for y."""
    mine, others = [], []
    for q in range(questions):
        ids = submit(client, {m: answer(m, f"q{q}", n) for m, n in (("x", 300), ("y", 200), ("z", 100))}, f"q{q}")
        for (p, r), favourite in ((("x", "y"), 0.7), (("y", "z"), 0.7), (("x", "z"), 0.8)):
            mine.append(verdict(f"m{q}{p}{r}", ids[p], ids[r], "A" if rng.random() < favourite else "B"))
        others.append(verdict(f"o{q}", ids["x"], ids["y"], "B"))
    store = store_of(client)
    store.import_judgements(name="mine", source="test", judge=JUDGE, criteria="overall", rows=mine)
    store.import_judgements(name="others", source="test", judge=OTHER, criteria="overall", rows=others)


def get(client: TestClient, path: str, status: int = 200) -> str:
    response = client.get(path)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def players(text: str, board: str = BOARD) -> list[str]:
    return [row[1].removesuffix(" few").strip() for row in rows_of(text, board) if len(row) > 2]


def test_the_form_names_every_choice_and_keeps_them_in_the_address(client: TestClient) -> None:
    seed(client, random.Random(1))
    text = get(client, f"/?judge={JUDGE}&by=model")
    assert players(text)[0] == "x"
    assert f'<option value="{JUDGE}" selected>' in text and f'<option value="{OTHER}">' in text
    assert '<option value="model" selected>' in text
    for name in ("scenario", "system"):
        assert f'<option value="{name}">' in text
    assert "Other judges:" in visible(text) and f"?judge={OTHER.replace('/', '%2F')}&amp;by=model" in text


def matches(text: str) -> int:
    return sum(int(row[7]) for row in rows_of(text, BOARD) if len(row) > 2)


def test_one_judges_verdicts_per_view(client: TestClient) -> None:
    seed(client, random.Random(2))
    mine, others = get(client, f"/?judge={JUDGE}"), get(client, f"/?judge={OTHER}")
    assert f"Judge {JUDGE}" in visible(mine) and f"Judge {OTHER}" in visible(others)
    assert players(others) == ["y", "x"]  # the other judge always chose y, and never saw z
    assert matches(others) == 2 * 12  # its 12 verdicts, two sides each
    assert matches(mine) == 2 * 36


def test_an_unbounded_group_shows_ranks_but_no_ratings(client: TestClient) -> None:
    seed(client, random.Random(3))
    rows = rows_of(get(client, f"/?judge={OTHER}"), BOARD)
    assert "won every game against the rest" in rows[0][0]  # the group's heading explains
    y, x = rows[1], rows[2]
    assert y[1] == "y" and y[2] == "—" and y[4] == "unbounded"  # the prior's number is not shown
    assert x[6] == "0 / 12 / 0"


def test_groups_never_compared_are_shown_apart(client: TestClient) -> None:
    ids = submit(client, {"a": "aa", "b": "b"}, "q1") | submit(client, {"c": "cc", "d": "d"}, "q2")
    store_of(client).import_judgements(name="split", source="test", judge=JUDGE, criteria="overall", rows=[
        verdict("s1", ids["a"], ids["b"], "A"), verdict("s2", ids["a"], ids["b"], "B"),
        verdict("s3", ids["c"], ids["d"], "TIE"), verdict("s4", ids["c"], ids["d"], "A"),
    ])
    text = get(client, "/")
    headings = [row[0] for row in rows_of(text, BOARD) if len(row) == 1]
    assert [h.split(" (")[0] for h in headings] == ["Group 1 of 2", "Group 2 of 2"]
    assert "2 groups never compared with each other" in visible(text)


def test_few_matches_are_marked_and_lengths_shown(client: TestClient) -> None:
    seed(client, random.Random(4), questions=3)
    rows = {row[1].split()[0]: row for row in rows_of(get(client, f"/?judge={JUDGE}"), BOARD)}
    assert all(row[1].endswith("few") for row in rows.values())  # 6 matches each: fewer than 10
    assert [rows[p][8] for p in "xyz"] == ["300", "200", "100"]  # mean output length in characters
    seed(client, random.Random(4), questions=12)  # 15 questions now: 10 matches each or more
    assert not any(row[1].endswith("few") for row in rows_of(get(client, f"/?judge={JUDGE}"), BOARD))


def test_levels_and_scopes(client: TestClient) -> None:
    seed(client, random.Random(5))
    text = get(client, f"/?judge={JUDGE}&by=system")
    assert players(text, "Systems (model + scenario) board")[0] == "x + default"
    tournaments = client.get("/api/tournaments").json()["tournaments"]
    theirs = next(t["id"] for t in tournaments if t["name"] == "others")
    scoped = get(client, f"/?tournament={theirs}")
    assert f"Judge {OTHER}" in visible(scoped) and players(scoped) == ["y", "x"]
    assert f'<option value="{theirs}" selected>' in scoped


@pytest.mark.parametrize(("query", "status", "says"), [
    ("by=team", 422, "by='team' is not a level"),
    ("tournament=abc", 422, "is not a tournament id"),
    ("dimension=beauty", 422, "dimension='beauty' is not one of"),
    ("tournament=999", 404, "999"),
    ("judge=nobody/none", 404, "no verdicts from judge 'nobody/none'"),
])
def test_choices_that_are_not_ones_get_a_page_saying_why(client: TestClient, query: str, status: int,
                                                         says: str) -> None:
    seed(client, random.Random(6), questions=2)
    text = get(client, f"/?{query}", status)
    assert says in visible(text)
    if "judge=" in query:
        assert f'href="/?judge={JUDGE.replace("/", "%2F")}"' in text  # the judges there are, linked


def test_a_page_at_the_same_mark_is_not_sent_twice(client: TestClient) -> None:
    seed(client, random.Random(7), questions=2)
    first = client.get("/?by=model")
    etag = first.headers["etag"]
    again = client.get("/?by=model", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert client.get("/?by=scenario", headers={"If-None-Match": etag}).status_code == 200  # another view
    submit(client, {"x": "new", "y": "newer"}, "q99")
    ids = [s["id"] for s in client.get("/api/submissions?question_id=q99").json()["submissions"]]
    store_of(client).import_judgements(name="more", source="test", judge=JUDGE, criteria="overall",
                                       rows=[verdict("late", ids[0], ids[1], "A")])
    assert client.get("/?by=model", headers={"If-None-Match": etag}).status_code == 200  # the store moved


def test_pictures_of_a_bounded_board_link_to_their_judgements(client: TestClient) -> None:
    seed(client, random.Random(8))
    text = get(client, f"/?judge={JUDGE}")
    assert text.count('class="chart chart-bar"') == 3  # one bar per row, on the board's axis
    assert 'class="chart chart-intervals"' in text and text.count('class="chart chart-heatmap-') == 2
    cell = f'href="/judgements?judge={JUDGE.replace("/", "%2F")}&amp;by=model&amp;player=x&amp;opponent=y"'
    assert cell in text  # a heatmap cell opens the judgements between its two players
    assert "The data as a table" in text  # each chart's text alternative


def test_an_unbounded_board_draws_no_ratings(client: TestClient) -> None:
    seed(client, random.Random(9))
    text = get(client, f"/?judge={OTHER}")  # y won every game against x
    assert "chart-bar" not in text and "chart-intervals" not in text  # the prior's numbers are not drawn
    assert text.count('class="chart chart-heatmap-') == 2  # who beat whom is still shown


def test_a_page_with_effects_still_being_refitted_is_fetched_again(client: TestClient) -> None:
    seed(client, random.Random(10), questions=2)
    assert "etag" in settled(client, f"/?judge={JUDGE}").headers  # the first fit done: all current
    submit(client, {"x": "one more", "y": "and another"}, "q50")
    ids = [s["id"] for s in client.get("/api/submissions?question_id=q50").json()["submissions"]]
    store_of(client).import_judgements(name="more", source="test", judge=JUDGE, criteria="overall",
                                       rows=[verdict("late", ids[0], ids[1], "A")])
    stale = client.get(f"/?judge={JUDGE}")  # the effects are refitted in the background; the page does not wait
    assert "etag" not in stale.headers and 'data-mark="' in stale.text and '~pending"' in stale.text
    assert "newer being added" in visible(stale.text)
    cache = app_state_of(client).boards
    assert cache.effects_soon(wait_s=30, judge=JUDGE).revision == store_of(client).revision()
    fresh = client.get(f"/?judge={JUDGE}")
    assert "etag" in fresh.headers and "~pending" not in fresh.text


def test_a_board_slow_to_fit_is_refitted_behind_the_page(client: TestClient) -> None:
    """A board whose fit is slow (hundreds of players; here every fit counts as slow) is served
    from its last fit while the refit runs, and says so; the API's board stays current."""
    seed(client, random.Random(11), questions=2)
    cache = app_state_of(client).boards._boards  # type: ignore[attr-defined]  # the cache behind its timing
    cache.slow_fit_s = 0.0
    first = settled(client, f"/?judge={JUDGE}")
    assert matches(first.text) == 2 * 6 and "etag" in first.headers
    submit(client, {"x": "one more", "y": "and another"}, "q60")
    ids = [s["id"] for s in client.get("/api/submissions?question_id=q60").json()["submissions"]]
    store_of(client).import_judgements(name="more", source="test", judge=JUDGE, criteria="overall",
                                       rows=[verdict("later", ids[0], ids[1], "A")])
    stale = client.get(f"/?judge={JUDGE}")
    assert matches(stale.text) == 2 * 6 and "etag" not in stale.headers and '~pending"' in stale.text
    assert "newer being added" in visible(stale.text)
    api = client.get(f"/api/leaderboard?judge={JUDGE}").json()  # the API waits for nothing stale
    assert sum(r["matches"] for r in api["rows"]) == 2 * 7
    cache._refreshes.join(("overall", Level.MODEL, JUDGE), 30)
    assert matches(client.get(f"/?judge={JUDGE}").text) == 2 * 7


def test_a_big_board_is_prepared_behind_the_page(client: TestClient) -> None:
    """A board big enough to cost tens of milliseconds to draw and render (here every board counts
    as big) is served as last prepared while the current one is prepared in the background, and
    says so; once prepared, the page is current again, and one unchanged board is not drawn twice."""
    seed(client, random.Random(12), questions=2)
    pages = app_state_of(client).pages
    pages.behind_from = 0
    view = View(Level.MODEL, JUDGE, None, None)
    first = settled(client, f"/?judge={JUDGE}")
    assert matches(first.text) == 2 * 6 and "etag" in first.headers
    kept = pages._kept.latest(view)
    assert client.get(f"/?judge={JUDGE}").text.count("<svg") == first.text.count("<svg")
    assert pages._kept.latest(view) is kept  # nothing moved: nothing prepared again
    submit(client, {"x": "one more", "y": "and another"}, "q70")
    ids = [s["id"] for s in client.get("/api/submissions?question_id=q70").json()["submissions"]]
    store_of(client).import_judgements(name="more", source="test", judge=JUDGE, criteria="overall",
                                       rows=[verdict("latest", ids[0], ids[1], "A")])
    stale = client.get(f"/?judge={JUDGE}")
    assert matches(stale.text) == 2 * 6 and "etag" not in stale.headers and '~pending"' in stale.text
    assert "newer being added" in visible(stale.text)
    fresh = settled(client, f"/?judge={JUDGE}")  # the board, then its flags and effects, behind the page
    assert matches(fresh.text) == 2 * 7 and "etag" in fresh.headers and "~pending" not in fresh.text


def test_mean_lengths_follow_new_submissions(client: TestClient) -> None:
    """Lengths are kept as running sums: a submission added after the page was shown moves its
    player's mean, and only its player's."""
    ids = submit(client, {"x": "x" * 300, "y": "y" * 10}, "q1")
    store_of(client).import_judgements(name="one", source="test", judge=JUDGE, criteria="overall",
                                       rows=[verdict("k", ids["x"], ids["y"], "A")])

    def lengths() -> dict[str, str]:
        return {r[1].split()[0]: r[8] for r in rows_of(get(client, f"/?judge={JUDGE}"), BOARD) if len(r) > 2}

    assert lengths() == {"x": "300", "y": "10"}
    submit(client, {"x": "x" * 100}, "q2")
    assert lengths() == {"x": "200", "y": "10"}


def test_two_stores_never_share_their_output_lengths(make_client: MakeClient, tmp_path: Path) -> None:
    """Two apps in one process, each on its own store, whose newest submissions have one id."""
    clients = [make_client(), make_client(data_dir=tmp_path / "other", database_url=None)]
    for client, long in zip(clients, (300, 20)):
        ids = submit(client, {"x": "x" * long, "y": "y" * 10}, "q1")
        store_of(client).import_judgements(name="one", source="test", judge=JUDGE, criteria="overall",
                                           rows=[verdict("k", ids["x"], ids["y"], "A")])
    for client, long in zip([*clients, clients[0]], (300, 20, 300)):
        row = next(r for r in rows_of(get(client, f"/?judge={JUDGE}"), BOARD) if len(r) > 2 and r[1].startswith("x"))
        assert row[8] == str(long)
