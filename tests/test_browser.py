"""The pages in a real browser: Debian's chromium driven by Playwright, against a running
`joust up` whose judge is the fake Messages API. Each test does what a person would: switch the
judge and the level, watch a tournament's judgements reach the board without a reload, check
that a phone-wide window never scrolls sideways, and run axe-core (the file the app serves, not
a CDN) for WCAG 2.1 A/AA violations. Screenshots of each page land in test-output/screenshots/.
"""
from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, prefer
from tests.joust_up import REPO, Joust, start_joust, stop_joust

# slow: `joust up`, its processes and a browser; one process of the suite runs the module (its
# fixture starts them once).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_browser")]

WORDS = ("because", "often", "the", "result", "depends", "on", "context", "data", "which", "shows", "a", "clear",
         "trend", "over", "time", "while", "other", "factors", "matter", "less", "in", "practice", "see", "below")
MODELS = ["good", "mid", "bad"]
SCENARIOS = ["plus", "base"]
SYSTEMS = [f"{m}/{s}" for m in MODELS for s in SCENARIOS]
JUDGE = "anthropic/claude-sonnet-4-5"
OTHER_JUDGE = "offline/rubric"
SHOTS = REPO / "test-output" / "screenshots"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1366, "height": 900}
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
PAGES = ["/", "/?by=system", "/judges", "/tournaments", "/tournaments/1", "/judgements", "/judgements/1", "/vote"]


def detail(q: int, model: str, scenario: str, sentences: int) -> str:
    """Sentences of varied words, different for every answer, as real outputs are (answers that
    repeat one sentence would rightly be flagged as near-constant on the board)."""
    rng = random.Random(f"{q}/{model}/{scenario}")
    return " ".join(" ".join(rng.choice(WORDS) for _ in range(6)).capitalize() + "." for _ in range(sentences)) + " "


@dataclass
class Site:
    """The running joust and its fake judge."""

    joust: Joust
    fake: FakeAnthropic

    @property
    def url(self) -> str:
        return self.joust.url

    def call(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.joust.call(method, path, body)
        assert status < 300, (status, answer)
        return answer

    def submit(self, questions: range) -> None:
        self.call("POST", "/api/submissions", [
            {"question": f"Question {q}: explain topic {q}.", "question_id": f"q{q}", "model": m, "scenario": s,
             "output": f"[{m}/{s}] An answer to question {q}. " + detail(q, m, s, q % 4 + (3 if s == "plus" else 1))}
            for q in questions for m in MODELS for s in SCENARIOS])

    def run(self, judge: str, name: str) -> int:
        """Start a tournament over every submission and wait for it to finish."""
        tid = self.call("POST", "/api/tournaments", {"name": name, "judge": judge})["id"]
        assert self.joust.wait_done(tid)["status"] == "done"
        return tid


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with FakeAnthropic(prefer(SYSTEMS)) as fake:
        running = start_joust(tmp_path_factory.mktemp("browser") / "data", fake, workers=1)
        try:
            site = Site(running, fake)
            site.submit(range(4))
            site.run(OTHER_JUDGE, "offline night")
            site.run(JUDGE, "claude night")
            yield site
        finally:
            stop_joust(running)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=DESKTOP)
    opened = context.new_page()
    yield opened
    context.close()


def shoot(page: Any, name: str) -> Path:
    """A full-page screenshot under test-output/screenshots/."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "board"


def axe_violations(page: Any, base: str) -> list[dict]:
    """axe-core's WCAG 2.1 A/AA violations on the open page: rule, impact and a few nodes."""
    page.add_script_tag(url=f"{base}/static/axe.min.js")
    return page.evaluate(
        """async (tags) => (await axe.run(document, {runOnly: {type: 'tag', values: tags}})).violations
              .map(v => ({id: v.id, impact: v.impact, help: v.help,
                          nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))""",
        WCAG,
    )


def test_the_board_switches_judge_and_level_from_its_form(site: Site, page: Any) -> None:
    page.goto(site.url + "/")
    judge_line = page.locator("p.judge")
    assert JUDGE in judge_line.inner_text()  # the latest tournament's judge
    page.select_option("select[name=judge]", OTHER_JUDGE)  # the script submits the form on change
    page.wait_for_url(re.compile(r"judge=offline%2Frubric"))
    assert "Judge offline/rubric" in page.locator("p.judge").inner_text()
    page.select_option("select[name=by]", "scenario")
    page.wait_for_url(re.compile(r"by=scenario"))
    assert page.locator("#board-title").inner_text() == "Scenarios"
    players = page.locator("table.board tbody td:nth-child(2)").all_inner_texts()
    assert sorted(p.replace("few", "").strip() for p in players) == sorted(SCENARIOS)
    assert "judge=offline%2Frubric" in page.url  # the view is a link: every choice is in the address
    shoot(page, "board-scenarios")


def test_the_board_sorts_by_a_column(site: Site, page: Any) -> None:
    page.goto(site.url + "/?by=system")
    page.locator("table.board thead th", has_text="Length").locator("button").click()
    lengths = [float(v) for v in page.locator("table.board tbody td:nth-child(9)").evaluate_all(
        "cells => cells.map(c => c.dataset.value)")]
    assert lengths == sorted(lengths, reverse=True) and len(lengths) == len(SYSTEMS)


def test_judgements_reach_the_board_without_a_reload(site: Site, page: Any) -> None:
    page.goto(site.url + "/?" + f"judge={JUDGE}&by=system")
    before = int(page.locator("#stamp").get_attribute("data-revision"))
    matches_before = page.locator("table.board tbody td:nth-child(8)").evaluate_all(
        "cells => cells.map(c => Number(c.dataset.value))")
    page.evaluate("window.__notReloaded = true")
    site.fake.latency_s = 0.05  # judgements arrive over a few seconds while the page watches
    site.submit(range(4, 6))
    tid = site.call("POST", "/api/tournaments", {"name": "claude extra", "judge": JUDGE})["id"]
    page.wait_for_function("(before) => Number(document.getElementById('stamp').dataset.revision) > before",
                           arg=before, timeout=60_000)
    site.joust.wait_done(tid)
    page.wait_for_function(
        "(want) => Array.from(document.querySelectorAll('table.board tbody td:nth-child(8)'))"
        ".reduce((n, c) => n + Number(c.dataset.value), 0) >= want",
        arg=sum(matches_before) + 2 * 15 * 2, timeout=60_000)  # 2 questions x 15 pairs, 2 sides each
    assert page.evaluate("window.__notReloaded") is True
    assert re.search(r"updated \d\d:\d\d:\d\d, revision \d+", page.locator("#stamp").inner_text())
    site.fake.latency_s = 0.0


@pytest.mark.parametrize("path", PAGES)
def test_a_phone_never_scrolls_sideways(site: Site, browser: Any, path: str) -> None:
    context = browser.new_context(viewport=PHONE, device_scale_factor=1)
    try:
        phone = context.new_page()
        phone.goto(site.url + path)
        width = phone.evaluate("document.documentElement.scrollWidth")
        shoot(phone, f"phone-{slug(path)}")
        assert width <= PHONE["width"], f"{path} is {width} px wide at {PHONE['width']}"
    finally:
        context.close()


@pytest.mark.parametrize("path", PAGES)
def test_no_wcag_violations(site: Site, page: Any, path: str) -> None:
    page.goto(site.url + path)
    assert page.evaluate("document.documentElement.scrollWidth") <= DESKTOP["width"]
    shoot(page, slug(path))
    assert axe_violations(page, site.url) == []


def human_agreement(site: Site, judge: str) -> tuple[float | None, int]:
    """`GET /api/judges`' agreement of `judge` with people, and on how many votes it rests."""
    [health] = [h for h in site.call("GET", "/api/judges")["judges"] if h["judge"] == judge]
    return health["human_agreement"], health["human_votes"]


def test_votes_cast_by_keyboard_reach_judge_health(site: Site, page: Any) -> None:
    key = site.call("POST", "/api/keys", {"name": "carol", "scopes": ["vote"]})["secret"]
    _, before = human_agreement(site, JUDGE)
    page.goto(site.url + "/vote")
    page.fill("#voter-key", key)
    page.locator("form.sign-in button").click()
    page.wait_for_selector("#vote-form")
    page.locator("#vote-keys").wait_for(state="visible")  # the script announces the shortcuts once it runs
    assert page.locator("#vote-keys").is_visible()
    outputs = page.locator(".answer .output").all_inner_texts()
    assert len(outputs) == 2 and all(o.startswith("[") for o in outputs)
    assert not any(m in page.locator(".ballot h2").all_inner_texts() for m in MODELS)  # anonymous
    shoot(page, "vote")
    for n, key_press in enumerate(("1", "2", "t")):
        page.keyboard.press(key_press)
        page.wait_for_selector("p.receipt")
        assert f"{n + 1} vote" in page.locator("p.voter").inner_text()
    receipt = page.locator("p.receipt").inner_text()
    assert "It was" in receipt and any(m in receipt for m in MODELS)  # revealed after the vote
    agreement, votes = human_agreement(site, JUDGE)
    assert votes >= before + 3 and agreement is not None
    page.goto(site.url + "/judges")
    row = page.locator("tr", has=page.locator(f"a:text-is('{JUDGE}')")).first
    assert "pair" in row.inner_text()  # the page shows the judge's agreement with people now
    assert "human/carol" in page.locator("main").inner_text()


def test_a_heatmap_cell_opens_its_judgements_and_one_judgement_its_outputs(site: Site, page: Any) -> None:
    page.goto(site.url + f"/?judge={JUDGE}&by=system")
    cell = page.locator("svg.chart-heatmap-win-rate a").first
    cell.click()
    page.wait_for_url(re.compile(r"/judgements\?.*opponent="))
    heading = page.locator("#list-title").inner_text()
    assert " against " in heading
    rows = page.locator("table tbody tr")
    assert rows.count() >= 1
    rows.first.locator("a").first.click()
    page.wait_for_url(re.compile(r"/judgements/\d+$"))
    outputs = page.locator(".answer .output").all_inner_texts()
    assert len(outputs) == 2 and all(o.startswith("[") for o in outputs)
    calls = page.locator("ol.calls > li").all_inner_texts()
    assert len(calls) == 2 and all("shown first" in c for c in calls)  # both orders, each with its order
    assert "orders agreed" in page.locator("main").inner_text() or "orders disagreed" in page.locator("main").inner_text()
    shoot(page, "judgement")
