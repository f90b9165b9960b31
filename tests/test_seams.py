"""One figure, every surface (DESIGN.md, "Seams"): hypothesis draws awkward stores
(`tests/seams_stores.py`: groups never compared, a model that wins everything, players with one
or two matches, ties only, imported verdicts without calls, human votes beside LLM verdicts,
several judges, a second turn, files with and without question text, votes imported apart with
`--human`), imports each as `joust import battles` does, serves it with a real uvicorn server,
and checks for every judge's board (each voter's, and `human`: all of them) and level:

- the API's board (closed intervals; `?turn=`, `?votes=majority`), matrix, effects and judge
  health (rates, agreement with the votes, Krippendorff's alpha with the votes and between
  judges) equal an independent recomputation (`tests/seams_expected.py`: plain Newton,
  breadth-first groups, counting, scipy's linear programming); the bootstrap board keeps the
  closed board's ratings and counts, and its rank ranges are the ones its intervals allow;
- the Python client, the CLI (`joust board`, `joust effects`, `joust judges`, `--format json`)
  and the export (`joust export board`) show the API's figures to the last digit, and the page
  (board, effects, judge health) shows them as it rounds them;
- no interval (board, bootstrap, effect, alpha) is of zero width or as wide as the prior alone
  would make it without being marked (`ci_missing`, `bounded: false`, `*ci_missing`);
- `joust export judgements` re-imports into an empty data dir, and the copy's boards, effects
  and judge health are the recomputation's again.

The client is read at every level; the CLI, the export and the page at one level per judge,
turning with the judge and the store (they read each level through the same parameter).
A new figure joins here. The quick run (`test_seams`) draws `JOUST_SEAMS_EXAMPLES` stores of each
shape (default 3, derandomized: the same stores every run); `test_seams_many` (slow) draws
`JOUST_SEAMS_MANY` of any shape (default 24, in four seeded parts that the test processes share). Each defect the harness found is kept below as an
explicit store (`test_regression_*`).
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, seed, settings

from service.cli import main
from service.config import Settings
from service.store import Store
from service.web.app import create_app
from tests import seams_expected as expected
from tests.seams_stores import SHAPES, StoreSpec, Verdict, stores
from tests.seams_surfaces import BOARD_FIELDS, Surfaces
from tests.serving import serving

EXAMPLES = int(os.environ.get("JOUST_SEAMS_EXAMPLES", "3"))  # per shape, in the quick run
MANY = int(os.environ.get("JOUST_SEAMS_MANY", "24"))  # of any shape, in the slow one
MANY_PARTS = 4
ELO = 1e-4  # Elo points: two Newton solvers at 1e-10 nats agree far closer than this
WIDE = 3000.0  # Elo points: an interval this wide is the ridge prior's, not the verdicts'
LEVELS = expected.LEVELS
CLIENT_FIELDS = BOARD_FIELDS + ("elo", "rank_low", "rank_high", "ci_missing")
EFFECT_FIELDS = ("kind", "name", "component", "effect", "ci_low", "ci_high", "bounded")
# No shrinking: each example is a served store, and a failure names its verdicts already.
SEAMS = settings(derandomize=True, deadline=None, database=None, max_examples=EXAMPLES, report_multiple_bugs=False,
                 phases=(Phase.explicit, Phase.generate),
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                        HealthCheck.data_too_large])


def close(x: Any, y: Any, tol: float = ELO) -> bool:
    if x is None or y is None:
        return x is None and y is None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y)):
        return bool(x == y)
    return math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=tol)


def served(spec: StoreSpec, root: Path, redis_url: str) -> tuple[Any, Path]:
    data = Path(tempfile.mkdtemp(dir=root)) / "data"
    data.mkdir()
    store = Store(f"sqlite:///{data / 'joust.db'}")
    try:
        spec.load(store, data.parent)
    finally:
        store.close()
    return serving(Settings(data_dir=data, redis_url=redis_url, api_key="seams-key")), data


def boards_of(spec: StoreSpec) -> list[str]:
    """The judges with a board: each one's, and every human voter's together (`human`)."""
    return spec.judges() + (["human"] if any(j.startswith("human/") for j in spec.judges()) else [])


def check_store(spec: StoreSpec, root: Path, redis_url: str) -> None:
    """Every surface of `spec`'s store against the recomputation and against the API; then the
    store's export, re-imported into an empty data dir, against the recomputation again."""
    server, data = served(spec, root, redis_url)
    with server as url, Surfaces(url, data) as surfaces:
        for index, judge in enumerate(boards_of(spec)):
            # the surfaces other than the API at one level per judge (they read every level through
            # the same parameter), turning with the judge and the store so that every level is read
            shown = LEVELS[(index + len(spec.verdicts)) % len(LEVELS)]
            page, page_effects = surfaces.board_page(shown, judge)
            for level in LEVELS:
                check_board(surfaces, spec, judge, level, page=page if level == shown else None)
            check_effects(surfaces, spec, judge, page=page_effects)
        check_health(surfaces, spec)
        exported = surfaces.export_judgements()
    check_reimported(spec, exported, root, redis_url)


def check_reimported(spec: StoreSpec, exported: Path, root: Path, redis_url: str) -> None:
    """`joust export judgements` re-imports into an empty data dir (`joust import battles`), and
    the copy's boards, effects and judge health are the recomputation's (issue 24, item 5)."""
    data = Path(tempfile.mkdtemp(dir=root)) / "data"
    data.mkdir()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["import", "battles", str(exported), "--data-dir", str(data)])
    assert code == 0, ("re-import", err.getvalue())
    # the API alone is read here: in this process (a socket's server takes 0.1 s to stop)
    with TestClient(create_app(Settings(data_dir=data, redis_url=redis_url, api_key="seams-key"))) as http, \
            Surfaces("http://testserver", data, http) as copy:
        for judge in boards_of(spec):
            for level in LEVELS:  # every level of every verdict; the slices by system (they hold the turns)
                for part in slices(spec, judge) if level == "model+scenario" else [{}]:
                    want = expected.board(expected.counted(spec, judge, turn=part.get("turn"),
                                                           majority=part.get("votes") == "majority"), level)
                    assert_recomputed(copy.board_api(by=level, judge=judge, **part)["rows"], want,
                                      f"re-imported {judge} by {level} {part}")
            check_effects(copy, spec, judge, other_surfaces=False, every_slice=False)
        check_health(copy, spec, other_surfaces=False)


# ---- boards --------------------------------------------------------------------------------------


def slices(spec: StoreSpec, judge: str) -> list[dict[str, Any]]:
    """The verdicts a board may count: every one, each pair's majority, the second turn."""
    found: list[dict[str, Any]] = [{}, {"votes": "majority"}]
    if any(v.turn == 2 for v in expected.counted(spec, judge)):
        found.append({"turn": 2})
    return found


def check_board(surfaces: Surfaces, spec: StoreSpec, judge: str, level: str, *,
                page: list[list[str]] | None) -> None:
    """The API against the recomputation for every slice (closed intervals, the matrix, the
    bootstrap's own checks); the client against the API at every level; with the `page`'s board
    rows (read at this level), the client, the CLI and the export for every slice, and the page,
    against the API."""
    for part in slices(spec, judge):
        turn, votes = part.get("turn"), part.get("votes", "each")
        want = expected.board(expected.counted(spec, judge, turn=turn, majority=votes == "majority"), level)
        api = surfaces.board_api(by=level, judge=judge, **part)
        where = f"{judge} by {level} {part}"
        assert_recomputed(api["rows"], want, where)
        assert_marked(api["rows"], where)
        assert api["components"] == len({r.component for r in want.rows}), where
        matrix = surfaces.api("/api/leaderboard/matrix", by=level, judge=judge, **part)
        assert matrix["players"] == want.players, where
        for i, p in enumerate(matrix["players"]):
            for j, q in enumerate(matrix["players"]):
                games = want.games.get((p, q), 0)
                assert matrix["battles"][i][j] == games, (where, p, q)
                assert close(matrix["win_rate"][i][j], want.points[p, q] / games if games else None, 1e-12), where
        if page is None:  # the bootstrap of every verdict, and the client, at every level
            if not part:
                boot = surfaces.board_api(by=level, judge=judge, intervals="bootstrap")
                check_bootstrap(boot["rows"], api["rows"], f"bootstrap {where}")
                same_rows(surfaces.board_client(level, judge=judge), api["rows"], CLIENT_FIELDS, f"client {where}")
            continue
        boot = surfaces.board_api(by=level, judge=judge, intervals="bootstrap", **part)
        check_bootstrap(boot["rows"], api["rows"], f"bootstrap {where}")
        same_rows(surfaces.board_client(level, judge=judge, **part), api["rows"], CLIENT_FIELDS, f"client {where}")
        same_rows(surfaces.board_cli(level, judge=judge, **part), api["rows"], BOARD_FIELDS, f"cli {where}")
        same_rows(surfaces.board_export(level, judge=judge, **part), api["rows"], BOARD_FIELDS + ("elo",),
                  f"export {where}")
        same_rows(surfaces.board_client(level, judge=judge, intervals="bootstrap", **part), boot["rows"],
                  BOARD_FIELDS + ("rank_low", "rank_high", "ci_missing"), f"client bootstrap {where}")
        if not part:
            same_rows(surfaces.board_cli(level, judge=judge, intervals="bootstrap"), boot["rows"], BOARD_FIELDS,
                      f"cli bootstrap {where}")
            check_page(page, api["rows"], f"page {where}")


def assert_recomputed(rows: list[dict], want: expected.Board, where: str) -> None:
    assert [r["player"] for r in rows] == want.players, where
    for row in rows:
        mine = want.row(row["player"])
        for name in ("component", "bounded", "rank", "rank_low", "rank_high", "wins", "losses", "ties", "matches"):
            assert row[name] == getattr(mine, name), (where, row["player"], name, row[name], getattr(mine, name))
        for name in ("rating", "ci_low", "ci_high", "elo", "win_rate"):
            assert close(row[name], getattr(mine, name)), (where, row["player"], name, row[name], getattr(mine, name))


def assert_marked(rows: list[dict], where: str) -> None:
    """An interval has width and is not the prior's; a row without one says why."""
    for row in rows:
        if row["ci_low"] is None or row["ci_high"] is None:
            assert row["ci_low"] is None and row["ci_high"] is None and row["ci_missing"], (where, row)
            assert row["bounded"] or row["ci_missing"] == "unbounded", (where, row)
        else:
            assert row["ci_missing"] is None and row["bounded"], (where, row)
            assert 1e-6 < row["ci_high"] - row["ci_low"] < WIDE, (where, row)
            assert row["ci_low"] - 1e-9 <= row["rating"] <= row["ci_high"] + 1e-9 or row["ci_missing"], (where, row)


def check_bootstrap(rows: list[dict], closed: list[dict], where: str) -> None:
    """The same players, ratings and counts as the closed board; its own intervals, marked where
    missing, and the rank ranges those intervals allow (unbounded groups keep the closed ones)."""
    assert [r["player"] for r in rows] == [r["player"] for r in closed], where
    for row, base in zip(rows, closed):
        for name in ("component", "bounded", "rank", "rating", "wins", "losses", "ties", "matches", "win_rate"):
            assert row[name] == base[name], (where, row["player"], name)
        if row["ci_low"] is None:
            assert row["ci_missing"] in ("unbounded", "no_spread"), (where, row)
            assert row["bounded"] or row["ci_missing"] == "unbounded", (where, row)
        else:
            assert 1e-6 < row["ci_high"] - row["ci_low"] < WIDE, (where, row)
    for component in {r["component"] for r in rows}:
        group = [r for r in rows if r["component"] == component]
        if not group[0]["bounded"]:
            assert [(r["rank_low"], r["rank_high"]) for r in group] == \
                   [(r["rank_low"], r["rank_high"]) for r in closed if r["component"] == component], where
            continue
        for r in group:
            if r["ci_low"] is None:  # no interval: any rank of its group
                assert (r["rank_low"], r["rank_high"]) == (1, len(group)), (where, r)
                continue
            ahead = sum(o["ci_low"] is not None and o["ci_low"] > r["ci_high"] for o in group)
            behind = sum(o["ci_high"] is not None and o["ci_high"] < r["ci_low"] for o in group)
            assert (r["rank_low"], r["rank_high"]) == (1 + ahead, len(group) - behind), (where, r)


def same_rows(rows: list[dict], api: list[dict], fields: tuple[str, ...], where: str) -> None:
    """A surface's rows are the API's, to the last digit (a figure is computed in one place)."""
    assert [r["player"] for r in rows] == [r["player"] for r in api], where
    for row, base in zip(rows, api):
        for name in fields:
            assert row[name] == base[name], (where, row["player"], name, row[name], base[name])


def whole(value: float) -> str:
    """A rating as the page prints it: whole Elo points."""
    return f"{value:.0f}"


def check_page(rows: list[list[str]], api: list[dict], where: str) -> None:
    """The page's board rows: rank (range), player, rating, interval, win rate, W / L / T, matches."""
    assert [r[1].removesuffix(" few").strip() for r in rows] == [r["player"] for r in api], where
    for cells, base in zip(rows, api):
        rank = cells[0].split()[0]
        assert rank == str(base["rank"]), (where, cells)
        assert f"({base['rank_low']}–{base['rank_high']})" in cells[0] or base["rank_low"] == base["rank_high"], \
            (where, cells, base)
        if base["ci_low"] is None:
            assert cells[2] == "—" if not base["bounded"] else True, (where, cells)
            assert cells[4] in ("unbounded", "—"), (where, cells)
        else:
            assert cells[2] == whole(base["rating"]), (where, cells, base)
            assert cells[4] == f"{whole(base['ci_low'])} – {whole(base['ci_high'])}", (where, cells, base)
        assert cells[5] == f"{100 * base['win_rate']:.1f}%", (where, cells, base)
        assert cells[6] == f"{base['wins']} / {base['losses']} / {base['ties']}", (where, cells)
        assert cells[7] == str(base["matches"]), (where, cells)


# ---- effects and judge health ---------------------------------------------------------------------


def check_effects(surfaces: Surfaces, spec: StoreSpec, judge: str, *, page: list[dict[str, Any]] | None = None,
                  other_surfaces: bool = True, every_slice: bool = True) -> None:
    """The API's effects against the recomputation for every slice (or every verdict only); the
    client's and the CLI's against the API's, and the page's (`page`: its effects rows, every
    verdict) as it prints them."""
    for part in slices(spec, judge) if every_slice else [{}]:
        turn, votes = part.get("turn"), part.get("votes", "each")
        where = f"effects {judge} {part}"
        want = expected.effects(expected.counted(spec, judge, turn=turn, majority=votes == "majority"))
        api = surfaces.api("/api/leaderboard/effects", judge=judge, **part)
        assert (api["turn"], api["votes"]) == (turn, votes), where
        rows = [{"kind": kind, "name": r[kind], **r} for kind in ("model", "scenario") for r in api[kind + "s"]]
        assert sorted((r["kind"], r["name"], r["component"]) for r in rows) == sorted(want), where
        assert api["components"] == len({c for _, _, c in want} | {g["component"] for g in api["groups"]}), where
        for r in rows:
            mine = want[r["kind"], r["name"], r["component"]]
            assert r["bounded"] == mine.bounded, (where, r, mine)
            if mine.bounded:
                for name in ("effect", "ci_low", "ci_high"):
                    assert close(r[name], getattr(mine, name), 1e-3), (where, r, mine)
                assert 1e-6 < r["ci_high"] - r["ci_low"] < WIDE, (where, r)
            else:
                assert r["effect"] is None and r["ci_low"] is None and r["ci_high"] is None, (where, r)
        if not other_surfaces:
            continue
        shown = [{k: r[k] for k in EFFECT_FIELDS} for r in rows]
        for name, other in (("client", surfaces.effects_client(judge=judge, **part)),
                            ("cli", surfaces.effects_cli(judge=judge, **part))):
            assert len(other) == len(shown), (name, where)
            for o, r in zip(other, shown):
                assert {k: o[k] for k in EFFECT_FIELDS} == r, (name, where, o, r)
        if page is not None and not part:
            several = len(api["groups"]) > 1  # the page: group by group, its models then its scenarios
            by_group = sorted(shown, key=lambda r: (r["component"], r["kind"]))
            assert [(e["kind"], e["name"], e["component"]) for e in page] == \
                   [(r["kind"], r["name"], r["component"] if several else 1) for r in by_group], (where, page)
            for e, r in zip(page, by_group):
                cells = [signed(r["effect"]), f"{signed(r['ci_low'])} – {signed(r['ci_high'])}"] if r["bounded"] \
                    else ["unbounded", "—"]
                assert e["cells"] == cells, ("page", where, e, r)


def signed(value: float) -> str:
    """An effect as the page prints it: whole Elo points with a sign."""
    return f"{value:+.0f}"


def check_health(surfaces: Surfaces, spec: StoreSpec, *, other_surfaces: bool = True) -> None:
    turns = [None] + ([2] if any(v.turn == 2 for v in spec.verdicts) else [])
    for turn in turns:
        want = expected.health(spec, turn=turn)
        body = surfaces.api("/api/judges", turn=turn)
        api = {row["judge"]: row for row in body["judges"]}
        assert sorted(api) == sorted(want), turn
        for judge, mine in want.items():
            for name, value in mine.items():
                assert close(api[judge][name], value, 1e-12), (turn, judge, name, api[judge][name], value)
            row = api[judge]
            assert_spread(row["human_alpha"], row["human_alpha_low"], row["human_alpha_high"],
                          row["human_alpha_ci_missing"], (turn, judge, "human alpha"))
        couples = expected.judge_agreement(spec, turn=turn)
        assert [(a["judge"], a["other"]) for a in body["judge_agreement"]] == sorted(couples), turn
        for found in body["judge_agreement"]:
            for name, value in couples[found["judge"], found["other"]].items():
                assert close(found[name], value, 1e-12), (turn, found, name, value)
            assert_spread(found["alpha"], found["ci_low"], found["ci_high"], found["ci_missing"], (turn, found))
        if not other_surfaces:
            continue
        for name, rows in (("client", surfaces.judges_client(turn)), ("cli", surfaces.judges_cli(turn))):
            assert sorted(r["judge"] for r in rows) == sorted(api), name
            for r in rows:
                for field, value in r.items():
                    if field in api[r["judge"]]:
                        assert value == api[r["judge"]][field], (name, turn, r["judge"], field, value)
        if turn is None:
            page, between = surfaces.judges_page()
            for judge, row in api.items():
                cells = page[judge]
                assert cells[1] == str(row["calls"]), (judge, cells)
                for column, name in ((2, "consistency"), (3, "first_position_win_rate"), (4, "tie_rate"),
                                     (6, "longer_wins_rate")):
                    assert cells[column] == percent(row[name]), (judge, name, cells)
                for column, name, pairs in ((7, "human_agreement", "human_pairs"),
                                            (8, "human_agreement_decided", "human_decided_pairs")):
                    n = row[pairs]
                    shown = "—" if row[name] is None else f"{percent(row[name])} ({n} pair{'' if n == 1 else 's'})"
                    assert cells[column] == shown, (judge, name, cells)
                assert cells[9] == alpha_text(row["human_alpha"], row["human_alpha_low"], row["human_alpha_high"]), \
                    (judge, cells)
            assert between == {f"{a['judge']} · {a['other']}": [alpha_text(a["alpha"], a["ci_low"], a["ci_high"]),
                                                               str(a["pairs"])] for a in body["judge_agreement"]}


def percent(share: float | None) -> str:
    """A share as the page prints it."""
    return "—" if share is None else f"{100 * share:.1f}%"


def alpha_text(value: float | None, low: float | None, high: float | None) -> str:
    """An alpha as the page prints it: two decimals, and its interval where it has one."""
    if value is None:
        return "—"
    return f"{value:.2f}" + ("" if low is None else f" [{low:.2f}, {high:.2f}]")


def assert_spread(alpha: float | None, low: float | None, high: float | None, missing: str | None,
                  where: object) -> None:
    """An alpha's bootstrap interval has width; an alpha without one says why ("no_spread":
    its resamples never vary it)."""
    assert (low is None) == (high is None), where
    if low is None:
        assert missing == ("no_spread" if alpha is not None else None), (where, alpha, missing)
    else:
        assert high - low > 1e-9 and missing is None, (where, low, high, missing)


# ---- the runs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_seams(shape: str, tmp_path: Path, redis_url: str) -> None:
    """`EXAMPLES` stores of each shape, the same every run."""

    @settings(SEAMS, max_examples=EXAMPLES)
    @given(spec=stores(shape))
    def check(spec: StoreSpec) -> None:
        check_store(spec, tmp_path, redis_url)

    check()


@pytest.mark.slow
@pytest.mark.parametrize("part", range(MANY_PARTS))
def test_seams_many(part: int, tmp_path: Path, redis_url: str) -> None:
    """`MANY` stores of any shape, more of what the quick run draws (about 2.5 s each), in
    `MANY_PARTS` parts with a seed each, so that the test processes share them."""

    @seed(part)
    @settings(SEAMS, max_examples=max(1, MANY // MANY_PARTS), derandomize=False)
    @given(spec=stores())
    def check(spec: StoreSpec) -> None:
        check_store(spec, tmp_path, redis_url)

    check()


# ---- what the harness found, each kept as an explicit store ---------------------------------------

ONE_PAIR = StoreSpec("sparse", (Verdict("import/j0", "q0", 1, ("m0", "s0"), ("m1", "s0"), "one_a", "A"),
                                Verdict("human/h0", "q0", 1, ("m0", "s0"), ("m1", "s0"), "one", "A")))


def test_regression_an_alpha_its_resamples_never_vary_has_no_interval(tmp_path: Path, redis_url: str) -> None:
    """Judge health gave alpha `1.0 [1.00, 1.00]` from one pair judged by a judge and a voter (and
    between two judges): every bootstrap resample is that pair, a zero-width interval the data
    cannot support. Now alpha has no interval there, and says why (`no_spread`)."""
    spec = StoreSpec("sparse", ONE_PAIR.verdicts + (Verdict("import/j1", "q0", 1, ("m1", "s0"), ("m0", "s0"), "one",
                                                            "B"),))
    check_store(spec, tmp_path, redis_url)
    server, data = served(spec, tmp_path, redis_url)
    with server as url, Surfaces(url, data) as surfaces:
        body = surfaces.api("/api/judges")
    judge = next(row for row in body["judges"] if row["judge"] == "import/j0")
    assert (judge["human_alpha"], judge["human_alpha_low"], judge["human_alpha_high"],
            judge["human_alpha_ci_missing"]) == (1.0, None, None, "no_spread")
    [between] = body["judge_agreement"]
    assert (between["alpha"], between["ci_low"], between["ci_high"], between["ci_missing"]) == \
           (1.0, None, None, "no_spread")


def test_regression_the_cli_prints_every_digit_of_a_figure(tmp_path: Path, redis_url: str) -> None:
    """`joust board`, `joust effects` and `joust judges` with `--format json` printed 15 decimals
    (pandas' `to_json`): a win rate of 1/3 lost its 16th digit and a tiny effect (1e-30) most of
    its own, so a figure read there was not the API's; they now print the API's numbers exactly."""
    spec = StoreSpec("random", tuple(Verdict("import/j0", f"q{q}", 1, a, b, "one", r) for q, (a, b, r) in enumerate(
        [(("m0", "s0"), ("m1", "s0"), "A"), (("m1", "s0"), ("m2", "s1"), "A"), (("m2", "s1"), ("m0", "s1"), "A"),
         (("m0", "s1"), ("m1", "s0"), "B"), (("m1", "s0"), ("m0", "s0"), "TIE"), (("m2", "s0"), ("m0", "s0"), "B")])))
    server, data = served(spec, tmp_path, redis_url)
    with server as url, Surfaces(url, data) as surfaces:
        rates = []
        for level in LEVELS:
            rows = surfaces.board_api(by=level, judge="import/j0")["rows"]
            same_rows(surfaces.board_cli(level, judge="import/j0"), rows, BOARD_FIELDS, f"cli by {level}")
            rates += [r["win_rate"] for r in rows]
        assert 1 / 3 in rates  # 0.3333333333333333: 16 digits
        effects = surfaces.api("/api/leaderboard/effects", judge="import/j0")
        assert [r["effect"] for r in surfaces.effects_cli(judge="import/j0")] == \
               [r["effect"] for kind in ("models", "scenarios") for r in effects[kind]]
        health = {r["judge"]: r for r in surfaces.api("/api/judges")["judges"]}
        for row in surfaces.judges_cli():
            assert all(row[k] == health[row["judge"]][k] for k in row if k in health[row["judge"]]), row


def test_regression_a_file_with_the_question_text_joins_one_without(tmp_path: Path) -> None:
    """Two judges' files on the same questions and outputs, one without question text (Chatbot
    Arena's rows have none) and one with it: the second was refused ("already holds a different
    question"), so two sources could not be compared on one board. Found by the harness drawing
    placeholder rows and votes in one file (`seams_stores` draws them so again). Now a row without
    the text takes the one known for its question, and a file with it fills it in where an import
    stored only the id (`service.usecases.importers.battles._questions`)."""
    rows = [{"question_id": "q1", "model_a": "m1", "model_b": "m2", "winner": "model_a", "output_a": "x",
             "output_b": "y"}, {"question_id": "q1", "question": "What is q1?", "model_a": "m1", "model_b": "m2",
                                "winner": "model_b", "output_a": "x", "output_b": "y", "judge": "j2"}]
    data = tmp_path / "data"
    for n, row in enumerate(rows):
        path = tmp_path / f"j{n}.jsonl"
        path.write_text(json.dumps(row) + "\n", encoding="utf-8")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["import", "battles", str(path), "--data-dir", str(data)]) == 0, row
