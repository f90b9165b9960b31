"""The board page with gaming flags in a real browser (Debian's chromium through Playwright) over a
real `joust up` judged by the fake provider: the flagged rows' mark and the evidence are visible
as text, a phone (390 px) never scrolls sideways, and axe-core finds no WCAG 2.1 A/AA violation.
The judge ranks `gamer` first and `strong` second; human votes on the same pairs see `strong`
beat everyone and `gamer` as one of the field: the second opinion the length flag needs, so
`gamer` carries it and `strong` does not."""
from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, prefer
from tests.joust_up import start_joust, stop_joust
from tests.test_browser import DESKTOP, PHONE, axe_violations
from tests.test_flags import NULL_OUTPUT, WORDS

# slow: `joust up`, its processes and a browser; one process of the suite runs the module (its
# fixture starts them once).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_browser_flags")]

JUDGE = "anthropic/claude-sonnet-4-5"
QUESTIONS = 12


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    rng = random.Random(2)
    with FakeAnthropic(prefer(["gamer", "strong", "null", "honest", "copycat"])) as fake:
        joust = start_joust(tmp_path_factory.mktemp("flags") / "data", fake, workers=1)
        try:
            questions = [f"Question {q}: " + " ".join(rng.choice(WORDS) for _ in range(15)) for q in range(QUESTIONS)]
            def answer(model: str) -> Any:
                return lambda q: f"[{model}] " + " ".join(rng.choice(WORDS) for _ in range(rng.choice((8, 40))))
            outputs = {
                "honest": answer("honest"), "gamer": answer("gamer"), "strong": answer("strong"),
                "null": lambda q: "[null] " + NULL_OUTPUT,
                "copycat": lambda q: "[copycat] " + q,
            }
            status, _ = joust.call("POST", "/api/submissions", [
                {"question": q, "question_id": f"q{i}", "model": m, "output": make(q)}
                for i, q in enumerate(questions) for m, make in outputs.items()])
            assert status == 201
            status, run = joust.call("POST", "/api/tournaments", {"name": "flags", "judge": JUDGE})
            assert status == 202 and joust.wait_done(run["id"])["status"] == "done"
            players = list(outputs)
            votes = [{"a": {"question_id": f"q{i}", "model": a}, "b": {"question_id": f"q{i}", "model": b},
                      "winner": "A" if a == "strong" else "B" if b == "strong" else rng.choice("AB"), "voter": "ann"}
                     for i in range(QUESTIONS) for n, a in enumerate(players) for b in players[n + 1:]]
            status, _ = joust.call("POST", "/api/votes", votes)
            assert status == 201
            yield joust.url
        finally:
            stop_joust(joust)


@pytest.mark.parametrize("path", ["/", "/?by=system"])
def test_flags_show_as_text_and_a_phone_never_scrolls_sideways(url: str, browser: Any, path: str) -> None:
    context = browser.new_context(viewport=PHONE, device_scale_factor=1)
    try:
        phone = context.new_page()
        phone.goto(url + path)
        marks = phone.locator("table.board a.flag")
        assert marks.count() == 3 and all(m.is_visible() for m in marks.all())
        flagged = {m.locator("xpath=..").inner_text().split()[0] for m in marks.all()}
        assert flagged == {"null", "copycat", "gamer"}, flagged  # never `strong`
        evidence = phone.locator("ul.flags").inner_text()
        assert "length unexplained" in evidence and "human votes give it" in evidence
        assert "constant output" in evidence and "near-identical" in evidence
        assert "copies question" in evidence and f"{QUESTIONS} of {QUESTIONS} outputs repeat the question" in evidence
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{path} is {width} px wide at {PHONE['width']}"
    finally:
        context.close()


def test_no_wcag_violations_on_a_flagged_board(url: str, browser: Any) -> None:
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        page.goto(url + "/")
        assert page.locator("ul.flags li").count() > 0
        assert axe_violations(page, url) == []
    finally:
        context.close()
