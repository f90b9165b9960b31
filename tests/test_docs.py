"""The manual cannot drift: it builds strictly, every example in it runs, and its figures name
their command.

- Every ```python and ```bash (or sh, console, shell) block in docs/ and README.md is marked by
  the HTML comment on the line before it: `<!-- run -->` (this test runs it) or
  `<!-- not run: why -->`. A block marked `<!-- output -->` is what the run block before it
  prints: compared with doctest's rules (`...` matches anything, runs of whitespace are equal).
- The run blocks of each page run in order against one live `joust up` whose judge is the fake
  provider (tests/fake_anthropic.py, preferring the shorter answer), shared by the pages in the
  nav's order, or a fresh one for a page marked `<!-- docs test: a joust of its own -->` (a
  tutorial that starts from nothing): bash blocks in a folder of the page's own, with JOUST_URL
  and JOUST_DATA_DIR set as the tutorial has the reader set them, exported variables carried from
  block to block; python blocks in one namespace per page.
- `mkdocs build --strict` builds the site into a temporary folder, once for the module:
  generated reference pages, nothing from a CDN, search that works opened from file:// (in
  chromium), and the API serves that build at /docs/guide/.
- In docs/benchmarks, every section with figures names the `python bench/...` command that
  printed them; anywhere in the docs, a paragraph quoting a bench names its command.
"""
from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from tests.fake_anthropic import FakeAnthropic, block, verdict_json
from tests.joust_up import Joust, start_joust, stop_joust
from workers.prompts import RESPONSE_A_TAG, RESPONSE_B_TAG

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
EXAMPLE_LANGUAGES = {"python", "py", "bash", "sh", "shell", "console"}
MARK = re.compile(r"^\s*<!--\s*(run|output|not run:\s*\S.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)")


@dataclass
class Block:
    page: str
    line: int
    language: str
    mark: str | None  # "run", "output", "not run: ...", or None
    text: str

    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, each with the mark on the line before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, ticks, language = fence.groups()
        start = i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(ticks):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        mark = MARK.match(lines[before]) if before >= 0 else None
        found.append(Block(str(path.relative_to(REPO)), start + 1, language.lower(),
                           mark.group(1) if mark else None, "\n".join(body) + "\n"))
        i += 1
    return found


def pages_in_nav_order() -> list[Path]:
    """docs/ pages in the order of mkdocs.yml's nav (the tutorials build on each other)."""
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)

    def walk(items: object) -> Iterator[str]:
        if isinstance(items, str):
            yield items
        elif isinstance(items, list):
            for item in items:
                yield from walk(item)
        elif isinstance(items, dict):
            for value in items.values():
                yield from walk(value)

    return [DOCS / page for page in walk(config["nav"]) if (DOCS / page).exists()]


def all_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md")) + [README]


# ---- fast checks -------------------------------------------------------------------------------


def test_every_example_is_marked_run_or_says_why_not() -> None:
    unmarked = [b.where() for p in all_pages() for b in blocks_of(p)
                if b.language in EXAMPLE_LANGUAGES and b.mark not in ("run",) and not (b.mark or "").startswith("not run:")]
    assert not unmarked, ("code blocks without <!-- run --> or <!-- not run: why --> on the line before: "
                          + ", ".join(unmarked))
    outputs = [b for p in all_pages() for b in blocks_of(p) if b.mark == "output"]
    for page in all_pages():
        found = blocks_of(page)
        for before, after in zip(found, found[1:]):
            if after.mark == "output":
                assert before.mark == "run", f"{after.where()}: an output block follows no run block"
    assert outputs, "the docs show no output to check"


def test_the_examples_run_somewhere() -> None:
    """The tutorials are executable: each holds run blocks, and the README's five-minute example too."""
    for page in ["tutorials/first-tournament.md", "tutorials/nightly.md", "tutorials/importing.md",
                 "tutorials/human-votes.md", "tutorials/panels-references.md"]:
        assert any(b.mark == "run" for b in blocks_of(DOCS / page)), page
    assert any(b.mark == "run" and b.language == "python" for b in blocks_of(README))


def test_readme_is_the_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250, f"README.md has {len(text.splitlines())} lines; at most 250"
    # .ci/run's last line is the README's line marked "# test it:", word for word: CI runs exactly it.
    test_lines = [line for line in text.splitlines() if re.match(r"^[^#]+# test it:", line)]
    assert test_lines
    command = re.sub(r"\s+#.*$", "", test_lines[0])
    assert command == "bash scripts/test"
    ci_run = (README.parent / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci_run[-1] == test_lines[0], (ci_run[-1], test_lines[0])
    assert "docs/screenshots/" in text
    for b in [b for page in all_pages() for b in blocks_of(page)]:
        if b.language in EXAMPLE_LANGUAGES and b.mark == "run":
            assert "8000" not in b.text and "joust-data" not in b.text, (
                f"{b.where()}: the port and the data dir are the reader's to choose: use $JOUST_URL, $JOUST_DATA_DIR")


BENCH = re.compile(r"bench/(\w+)\.py")


def test_bench_figures_name_their_command() -> None:
    """No figure a bench prints is typed without the command that printed it."""
    problems = []
    for page in sorted((DOCS / "benchmarks").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for section in re.split(r"\n(?=## )", text):
            has_figures = bool(re.search(r"\d+(\.\d+)? ?(s|ms|%|MB|calls/s)\b|\|\s*[\d.,]+\s*\|", section))
            if has_figures and not re.search(r"python (-m \S+ )?(\S+ )*bench/\w+\.py|python bench/\w+\.py", section):
                problems.append(f"{page.relative_to(REPO)}: section {section.splitlines()[0][:60]!r} has figures "
                                "but no `python bench/...` command")
    for page in all_pages():
        for paragraph in re.split(r"\n\s*\n", page.read_text(encoding="utf-8")):
            names = set(BENCH.findall(paragraph))
            figures = re.search(r"\d+(\.\d+)? ?(s|ms|%)\b|ratio \d", paragraph)
            if names and figures and not re.search(r"python (\S+ )*bench/\w+\.py", paragraph):
                problems.append(f"{page.relative_to(REPO)}: a paragraph quotes figures of "
                                f"{', '.join(sorted(names))} without the command (`python bench/...`)")
    assert not problems, "\n".join(problems)


def test_environment_reference_covers_every_variable_the_settings_read() -> None:
    """The generated page would stop the build on a variable without a note; check the same here,
    and that the generator finds the variables the settings really read."""
    sys.path.insert(0, str(REPO / "scripts" / "docs"))
    try:
        import gen_reference  # type: ignore[import-not-found]  (imported, it writes nothing)
        from env_notes import NOTES  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(REPO / "scripts" / "docs"))
    found = {v.name for v in gen_reference.environment_variables()}
    assert found == set(NOTES), (sorted(found - set(NOTES)), sorted(set(NOTES) - found))

    source = (REPO / "service" / "config.py").read_text(encoding="utf-8")
    read = set(re.findall(r'(?:text|number|_flag|get)\("([A-Z][A-Z0-9_]+)"', source))
    assert read == set(NOTES), (sorted(read - set(NOTES)), sorted(set(NOTES) - read))


def test_guide_route_serves_a_built_site_and_says_how_to_build_one(tmp_path: Path) -> None:
    from service.web.routes.common import ApiError
    from service.web.routes.docs import guide_path

    with pytest.raises(ApiError) as missing:
        guide_path(tmp_path / "site", "index.html")
    assert missing.value.status == 404 and "mkdocs build" in missing.value.message
    site = tmp_path / "site"
    (site / "reference").mkdir(parents=True)
    (site / "index.html").write_text("home")
    (site / "reference" / "cli.html").write_text("cli")
    (tmp_path / "secret.txt").write_text("no")
    assert guide_path(site, "").read_text() == "home"
    assert guide_path(site, "reference/cli.html").read_text() == "cli"
    for outside in ("../secret.txt", "reference/../../secret.txt", "nothing.html"):
        with pytest.raises(ApiError) as refused:
            guide_path(site, outside)
        assert refused.value.status == 404


# ---- the site, built ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`mkdocs build --strict` into a temporary folder, once for the module (about 5 s: it imports
    the app for the OpenAPI page and the CLI for its parsers, and mkdocstrings reads the client's
    source). Any warning (a broken link or anchor, a page not in the nav, a docstring mkdocstrings
    cannot read) fails it."""
    site = tmp_path_factory.mktemp("manual") / "site"
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return site


@pytest.mark.xdist_group("test_docs_site")
def test_mkdocs_builds_strictly_offline(built_site: Path) -> None:
    """The strict build makes every page, the generated reference included, and the site works
    from the file system: search's index is a script the pages load, nothing comes from another host."""
    site = built_site
    for page in ("index.html", "reference/http-api.html", "reference/cli.html", "reference/environment.html",
                 "reference/client.html", "tutorials/first-tournament.html", "tutorials/nightly.html",
                 "explanations/faults.html"):
        assert (site / page).is_file(), page
    api = (site / "reference/http-api.html").read_text()
    assert "/api/tournaments" in api and "SubmissionsCreated" in api
    assert "joust tournament create" in (site / "reference/cli.html").read_text()
    assert "JOUST_LEASE_TTL" in (site / "reference/environment.html").read_text()
    assert "def leaderboard" in (site / "reference/client.html").read_text() or \
        "leaderboard" in (site / "reference/client.html").read_text()
    # Offline: search's index as a script the pages load from file://, and nothing from another host.
    assert (site / "search" / "search_index.js").is_file()
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        remote = re.findall(r'<(?:script|link|img|iframe)[^>]+(?:src|href)="((?:https?:)?//[^"]+)"', text)
        assert not remote, f"{html.relative_to(site)} loads {remote}"


@pytest.mark.slow
@pytest.mark.xdist_group("test_docs_site")
def test_the_built_manual_searches_from_the_file_system(built_site: Path, browser: object) -> None:
    """Opened from file:// in chromium, as a reader with no server would: the search finds a
    command of the generated reference, and the pages ask nothing of the network."""
    page = browser.new_page()  # type: ignore[attr-defined]
    asked: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    try:
        page.goto((built_site / "index.html").as_uri())
        page.locator("input.md-search__input").first.click(force=True)
        page.keyboard.type("healthcheck")
        page.wait_for_selector(".md-search-result__item", timeout=20_000)
        found = page.locator(".md-search-result__item").all_inner_texts()
    finally:
        page.close()
    assert any("joust healthcheck" in item for item in found), found
    assert [url for url in asked if not url.startswith(("file:", "data:", "blob:"))] == []
    assert errors == []


@pytest.mark.xdist_group("test_docs_site")
@pytest.mark.parametrize("api_database_url", ["sqlite"], indirect=True)
def test_the_api_serves_the_built_manual(built_site: Path, client: TestClient,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """/docs/guide/ serves the site `mkdocs build` wrote (here the strict build above, in place of
    the checkout's site/), with its search, under the manual's own Content-Security-Policy."""
    from service.web.routes import docs

    monkeypatch.setattr(docs, "GUIDE", built_site)
    root = client.get("/docs/guide", follow_redirects=False)
    assert root.status_code == 307 and root.headers["location"] == "guide/index.html"
    home = client.get("/docs/guide/index.html")
    assert home.status_code == 200 and "joust" in home.text
    policy = home.headers["content-security-policy"]  # the manual's own: its theme's inline scripts
    assert policy == docs.GUIDE_HEADERS["Content-Security-Policy"] and "https:" not in policy
    assert client.get("/docs/guide/").text == home.text
    for page in ("reference/http-api.html", "tutorials/nightly.html", "search/search_index.js",
                 "assets/iframe-worker/shim.js"):
        assert client.get(f"/docs/guide/{page}").status_code == 200, page
    assert client.get("/docs/guide/nothing.html").status_code == 404
    assert client.get("/docs/guide/..%2F..%2Fpyproject.toml").status_code == 404


# ---- every example, against a live joust ---------------------------------------------------------


def shorter_wins(system: str, users: list[str]) -> str:
    """The docs' fake judge: the shorter response wins, equal lengths tie (in both orders alike)."""
    a = block(users[0], RESPONSE_A_TAG) if users else None
    b = block(users[0], RESPONSE_B_TAG) if users else None
    if a is None or b is None:
        return verdict_json("TIE", "I could not find two responses.")
    if len(a) == len(b):
        return verdict_json("TIE", "Both are as concise.")
    return verdict_json("A" if len(a) < len(b) else "B", "It says the same in fewer words.")


CHECKER = doctest.OutputChecker()
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def check_output(run: Block, want: Block, got: str) -> None:
    assert CHECKER.check_output(want.text, got, FLAGS), (
        f"{run.where()} printed what {want.where()} does not show:\n--- shown\n{want.text}--- printed\n{got}")


class Runner:
    """Runs one page's blocks: bash in the page's folder, python in the page's namespace."""

    def __init__(self, joust: Joust, workdir: Path) -> None:
        self.workdir = workdir
        self.state = workdir / ".exports"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("JOUST_", "ANTHROPIC_", "OPENAI_"))},
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "JOUST_URL": joust.url, "JOUST_DATA_DIR": str(joust.data_dir.resolve()),
            "COLUMNS": "120",
        }
        self.state.write_text("")
        self.namespace: dict[str, object] = {"__name__": "__docs__"}

    def bash(self, code: str) -> str:
        script = f"set -euo pipefail\nsource {shlex.quote(str(self.state))}\n{code}\nexport -p > {shlex.quote(str(self.state))}\n"
        done = subprocess.run(["bash", "-c", script], cwd=self.workdir, env=self.env, capture_output=True,
                              text=True, timeout=240)
        assert done.returncode == 0, f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
        return done.stdout

    def python(self, code: str) -> str:
        exported = {}
        for line in self.state.read_text().splitlines():  # what the bash blocks exported
            match = re.match(r'declare -x (\w+)="(.*)"$', line)
            if match:
                exported[match.group(1)] = match.group(2)
        out = io.StringIO()
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        os.environ.update({k: v for k, v in self.env.items() if k.startswith("JOUST_")})
        os.environ.update({k: v for k, v in exported.items() if k.startswith("JOUST_")})
        os.chdir(self.workdir)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, "<docs>", "exec"), self.namespace)  # noqa: S102 - the docs' own examples
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        return out.getvalue()


@dataclass
class DocsJoust:
    """The module's `joust up` and the pages whose examples already ran against it."""

    joust: Joust
    ran: set[Path]


@pytest.fixture(scope="module")
def docs_joust(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocsJoust]:
    with FakeAnthropic(shorter_wins) as fake:
        running = start_joust(tmp_path_factory.mktemp("docs") / "joust-data", fake)
        try:
            yield DocsJoust(running, set())
        finally:
            stop_joust(running)


def runnable_pages() -> list[Path]:
    return [p for p in pages_in_nav_order() + [README] if any(b.mark == "run" for b in blocks_of(p))]


# A page that starts from nothing (the nightly tutorial: "from nothing to a nightly tournament")
# says so with this mark, and runs against a `joust up` of its own, empty as the reader's is.
OWN_JOUST = "<!-- docs test: a joust of its own -->"


def has_own_joust(page: Path) -> bool:
    return OWN_JOUST in page.read_text(encoding="utf-8")


def run_page(page: Path, docs: DocsJoust, workdir: Path) -> None:
    """Run one page's examples in order, checking each shown output."""
    docs.ran.add(page)
    runner = Runner(docs.joust, workdir)
    found = blocks_of(page)
    for index, current in enumerate(found):
        if current.mark != "run":
            continue
        code = textwrap.dedent(current.text)
        try:
            got = runner.python(code) if current.language in ("python", "py") else runner.bash(code)
        except AssertionError as exc:
            raise AssertionError(f"{current.where()} failed: {exc}") from None
        following = found[index + 1] if index + 1 < len(found) else None
        if following is not None and following.mark == "output":
            check_output(current, following, got)


def example_pages() -> list[object]:
    """The pages with examples, as parameters: those sharing the module's joust in one process, in
    the nav's order (the tutorials build on each other: human votes are cast on the first
    tournament's outputs), and a page with a joust of its own in a process of its own."""
    return [pytest.param(page, id=str(page.relative_to(REPO)), marks=pytest.mark.xdist_group(
                f"test_docs_{page.stem}" if has_own_joust(page) else "test_docs_examples"))
            for page in runnable_pages()]


@pytest.mark.slow
@pytest.mark.parametrize("page", example_pages())
def test_examples_run_and_print_what_they_show(page: Path, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Each page's examples, in order, against one `joust up` shared by the module (started once,
    about 5 s); the pages before it in the nav run first when they have not (a page chosen alone
    with -k, or a group split), since a tutorial reads what the ones before it left in joust.
    A page marked OWN_JOUST runs against a fresh `joust up` of its own instead, in a process of
    its own. A page takes a few seconds (the fake judge answers at once; each `joust` command of a
    bash block costs about half a second of start-up). The nightly tutorial takes 10-20 s (over
    20 s on a loaded machine): it starts its own joust (about 5 s), runs nine `joust` commands,
    and waits for its run's batches to end at the fake provider (JOUST_BATCH_POLL=1)."""
    if has_own_joust(page):
        with FakeAnthropic(shorter_wins) as fake:
            own = start_joust(tmp_path / "joust-data", fake)
            try:
                workdir = tmp_path / "work"
                workdir.mkdir()
                run_page(page, DocsJoust(own, set()), workdir)
            finally:
                stop_joust(own)
        return
    docs_joust: DocsJoust = request.getfixturevalue("docs_joust")
    pages = [p for p in runnable_pages() if not has_own_joust(p)]
    for before in pages[:pages.index(page)]:
        if before not in docs_joust.ran:
            workdir = tmp_path / before.stem
            workdir.mkdir()
            try:
                run_page(before, docs_joust, workdir)
            except AssertionError as exc:
                raise AssertionError(f"{before.relative_to(REPO)}, which {page.relative_to(REPO)} "
                                     f"builds on, failed: {exc}") from None
    run_page(page, docs_joust, tmp_path)
