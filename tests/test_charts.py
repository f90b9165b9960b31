"""The page's charts (service/web/charts): well-formed SVG, escaping, contrast, labels inside the
viewBox, round ticks, unique ids, links, and the history chart on the page."""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from leaderboard.standings import standings
from leaderboard.types import Rating
from service.web.charts import (
    Chart,
    HeadToHead,
    Interval,
    Measure,
    Run,
    choose_ticks,
    contrast_ratio,
    draw_heatmap,
    draw_history,
    draw_interval_bar,
    draw_intervals,
    estimate_width,
    fit_axis,
    pick_text_colour,
    read_intervals,
    read_runs,
    relative_luminance,
    spread_apart,
)
from service.web.charts.colour import DIVERGING, PALETTE, SEQUENTIAL, WHITE
from service.web.charts.history import LINE_GAP

SVG = "{http://www.w3.org/2000/svg}"
EVIL = "<script>alert(\"x\")</script>&'"
LONG = "a-model-with-an-exceptionally-long-name-WWWWWWWWWW"
# a beats b twice, a ties c, b beats c, c beats a; d met nobody.
SMALL = [("a", "b", "A"), ("a", "b", "A"), ("a", "c", "TIE"), ("b", "c", "A"), ("c", "a", "A")]
DAY = 86_400.0


def parse(chart: Chart) -> ET.Element:
    """The chart's SVG as XML (raises on malformed markup)."""
    root = ET.fromstring(chart.svg)
    assert root.tag == f"{SVG}svg"
    return root


def find(root: ET.Element, tag: str) -> list[ET.Element]:
    return list(root.iter(f"{SVG}{tag}"))


def head_to_head(battles: list[tuple[str, str, str]], order: list[str] | None = None) -> HeadToHead:
    return HeadToHead.from_standings(standings(battles), order)


def intervals() -> list[Interval]:
    return [Interval("gpt-4", 1062.0, 1007.0, 1116.0, 94), Interval("mistral", 993.0, 943.0, 1043.0, 12),
            Interval("claude", 958.0, None, None, 40)]


def snapshots() -> list[dict]:
    """`Store.snapshots` as it returns them: run 2 added m3, and m2's interval went missing."""
    first = [{"player": "m0", "rating": 1030.0, "ci_low": 1000.0, "ci_high": 1060.0},
             {"player": "m1", "rating": 1000.0, "ci_low": 970.0, "ci_high": 1030.0},
             {"player": "m2", "rating": 970.0, "ci_low": 940.0, "ci_high": 1000.0}]
    second = [{"player": "m0", "rating": 1040.0, "ci_low": 1010.0, "ci_high": 1070.0},
              {"player": "m3", "rating": 1001.0, "ci_low": 975.0, "ci_high": 1027.0},
              {"player": "m1", "rating": 1000.0, "ci_low": 972.0, "ci_high": 1028.0},
              {"player": "m2", "rating": 960.0, "ci_low": None, "ci_high": None},
              {"player": "gone", "rating": None, "ci_low": None, "ci_high": None}]
    return [{"run": 1, "time": 1_700_000_000.0, "rows": first},
            {"run": 2, "time": 1_700_000_000.0 + DAY, "rows": second}]


def every_chart(name: str = "a", prefix: str = "c") -> list[Chart]:
    """One chart of each kind with `name` among the players, ids from `prefix`."""
    battles = [(name, "b", "A"), ("b", name, "TIE"), ("b", "c", "B")]
    item = Interval(name, 1000.0, 980.0, 1020.0, 3)
    runs = [Run(1, 1_700_000_000.0, (item, Interval("b", 990.0))), Run(2, 1_700_000_000.0 + DAY, (item,))]
    return [
        draw_heatmap(head_to_head(battles), id_prefix=f"{prefix}-wr"),
        draw_heatmap(head_to_head(battles), Measure.BATTLES, id_prefix=f"{prefix}-n"),
        draw_intervals([item, Interval("b", 990.0, None, None, 3)], id_prefix=f"{prefix}-iv"),
        draw_interval_bar(item, low=900.0, high=1100.0, id_prefix=f"{prefix}-bar"),
        draw_history(runs, id_prefix=f"{prefix}-h"),
    ]


# ---- colours ----------------------------------------------------------------------------------

def test_contrast_ratio_and_luminance_match_wcag_known_values() -> None:
    assert relative_luminance("#ffffff") == pytest.approx(1.0)
    assert relative_luminance("#000000") == 0.0
    assert contrast_ratio("#ffffff", "#000000") == pytest.approx(21.0)
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)  # either order
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # famously just fails AA
    assert contrast_ratio("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # just passes
    assert contrast_ratio("#123456", "#123456") == 1.0
    with pytest.raises(ValueError):
        relative_luminance("red")


def test_text_colour_is_whichever_of_black_and_white_reads_on_the_background() -> None:
    assert pick_text_colour("#000000") == "#ffffff"
    assert pick_text_colour("#ffffff") == "#000000"
    assert pick_text_colour("#2166ac") == "#ffffff"  # the win-rate scale's dark blue
    assert pick_text_colour("#ef8a62") == "#000000"  # its light red
    assert pick_text_colour("#08306b") == "#ffffff"


@pytest.mark.parametrize("scale", [DIVERGING, SEQUENTIAL], ids=["diverging", "sequential"])
def test_cell_text_meets_wcag_aa_everywhere_on_the_scales(scale) -> None:
    for k in range(101):
        background = scale(k / 100)
        assert contrast_ratio(pick_text_colour(background), background) >= 4.5, background
    assert scale(0.0) == scale.stops[0] and scale(1.0) == scale.stops[-1] and scale(0.5) == scale.stops[2]


def test_history_line_colours_are_readable_as_label_text_on_white() -> None:
    assert len(set(PALETTE)) == len(PALETTE)
    assert min(contrast_ratio(colour, WHITE) for colour in PALETTE) >= 4.5


# ---- ticks and layout helpers -----------------------------------------------------------------

@pytest.mark.parametrize("low, high", [(906.8, 1116.1), (0.0, 1.0), (-3.2, 47.0), (999.4, 1000.6),
                                       (1000.0, 1000.0), (0.0013, 0.0091), (-250.0, -12.5)])
def test_ticks_are_round_numbers_that_cover_the_data(low: float, high: float) -> None:
    ticks = choose_ticks(low, high)
    mantissa = ticks.step / 10 ** math.floor(math.log10(ticks.step))
    assert round(mantissa, 9) in (1.0, 2.0, 5.0)
    assert ticks.low <= low and ticks.high >= high and ticks.low < ticks.high
    assert 2 <= len(ticks.values) <= 8
    for value in ticks.values:
        assert value / ticks.step == pytest.approx(round(value / ticks.step), abs=1e-9)
    assert ticks.values == tuple(sorted(set(ticks.values)))


def test_tick_labels_carry_only_the_decimals_the_step_needs() -> None:
    ticks = choose_ticks(906.8, 1116.1)
    assert ticks.values == (900.0, 1000.0, 1100.0, 1200.0)
    assert [ticks.label(v) for v in ticks.values] == ["900", "1000", "1100", "1200"]
    small = choose_ticks(-1.0, 0.9)
    assert [small.label(v) for v in small.values] == ["-1.0", "-0.5", "0.0", "0.5", "1.0"]
    with pytest.raises(ValueError):
        choose_ticks(math.nan, 1.0)


def test_spread_apart_keeps_neighbours_a_gap_apart_inside_the_bounds() -> None:
    assert spread_apart([50.0, 10.0, 80.0], 5.0, 0.0, 100.0) == [50.0, 10.0, 80.0]  # nothing to move
    placed = spread_apart([50.0, 50.0, 51.0], 10.0, 0.0, 100.0)
    assert sorted(placed) == placed and all(b - a >= 10.0 - 1e-9 for a, b in zip(placed, placed[1:]))
    assert spread_apart([100.0, 100.0], 13.0, 0.0, 100.0) == [87.0, 100.0]  # pushed back up from the bottom


def test_width_estimates_err_wide_of_real_glyphs() -> None:
    # Arial's advance widths (em): W .944, m .833, O .778, a .556, i .222
    assert estimate_width("W" * 10, 10) >= 94.4
    assert estimate_width("m" * 10, 10) >= 83.3
    assert estimate_width("GOOD", 10) >= 4 * 7.78
    assert estimate_width("a" * 10, 10) >= 55.6
    assert estimate_width("i" * 10, 10) < estimate_width("a" * 10, 10)


# ---- the heatmap ------------------------------------------------------------------------------

def test_win_rate_heatmap_draws_a_cell_per_pair_with_its_percentage_and_tooltip() -> None:
    chart = draw_heatmap(head_to_head(SMALL + [("d", "d2", "A")]), id_prefix="wr")
    root = parse(chart)
    cells = [r for r in find(root, "rect") if "cell" in r.get("class", "")]
    assert len(cells) == 25  # 5 players, 5 × 5
    empty = [r for r in cells if "empty" in r.get("class")]
    assert len(empty) == 25 - 8  # a–b, a–c, b–c and d–d2, both ways
    assert all(r.get("fill") == "#ffffff" and r.get("stroke-dasharray") for r in empty)
    titles = [t.text for t in find(root, "title")]
    assert "a vs b: 100% of 2 judgements" in titles and "b vs a: 0% of 2 judgements" in titles
    assert "a vs c: 25% of 2 judgements" in titles and "d vs a: never judged" in titles
    numbers = [t.text for t in find(root, "text") if t.get("font-size") == "10"]
    assert sorted(numbers) == sorted(["100%", "0%", "25%", "75%", "100%", "0%", "100%", "0%"])
    assert chart.summary == "Win rates between 5 players; d wins most often (100% overall)."
    assert draw_heatmap(head_to_head(SMALL), id_prefix="wr").summary == (
        "Win rates between 3 players; a wins most often (62% overall).")  # 2 wins, 1 tie of 4
    assert root.find(f"{SVG}desc").text == chart.summary
    assert chart.table.header == ("Player", "a", "b", "c", "d", "d2")
    assert chart.table.rows[0] == ("a", "—", "100% of 2", "25% of 2", "—", "—")


def test_cell_text_colour_is_chosen_by_its_cell_and_passes_aa() -> None:
    root = parse(draw_heatmap(head_to_head(SMALL), id_prefix="wr"))
    groups = find(root, "g")
    assert len(groups) == 6
    for group in groups:
        background, text = group.find(f"{SVG}rect").get("fill"), group.find(f"{SVG}text").get("fill")
        assert text == pick_text_colour(background) and contrast_ratio(text, background) >= 4.5


def test_battle_heatmap_shows_counts_on_a_sequential_scale() -> None:
    battles = SMALL + [("a", "b", "B")] * 1200
    chart = draw_heatmap(head_to_head(battles), Measure.BATTLES, id_prefix="n")
    root = parse(chart)
    numbers = sorted(t.text for t in find(root, "text") if t.get("font-size") == "10")
    assert numbers == sorted(["1.2k", "1.2k", "2", "2", "1", "1"])
    fills = {r.get("fill") for r in find(root, "rect") if r.get("class") == "cell"}
    assert fills <= {SEQUENTIAL(t / 1000) for t in range(1001)}
    assert "a vs b: 1202 judgements, 0% to a" in [t.text for t in find(root, "title")]
    assert chart.summary == "Judgements between 3 players: 1205 in all, the most between a and b (1202)."


def test_a_heatmap_with_nothing_to_draw_is_empty() -> None:
    assert draw_heatmap(HeadToHead((), (), ()), id_prefix="x").svg == ""
    never = HeadToHead(("a", "b"), ((None, None), (None, None)), ((0, 0), (0, 0)))
    chart = draw_heatmap(never, Measure.BATTLES, id_prefix="x")
    assert chart.svg == "" and not chart
    with pytest.raises(ValueError):
        HeadToHead(("a", "b"), ((None,),), ((0,),))


def test_heatmap_cells_link_where_href_gives_an_address() -> None:
    def href(row: str, column: str) -> str | None:
        return None if row == "c" else f"/judgements?a={row}&b={column}"

    root = parse(draw_heatmap(head_to_head(SMALL), id_prefix="wr", href=href))
    links = find(root, "a")
    assert sorted(a.get("href") for a in links) == sorted(
        ["/judgements?a=a&b=b", "/judgements?a=a&b=c", "/judgements?a=b&b=a", "/judgements?a=b&b=c"])
    assert all(a.find(f"{SVG}rect") is not None and a.find(f"{SVG}title") is not None for a in links)
    assert find(parse(draw_heatmap(head_to_head(SMALL), id_prefix="wr")), "a") == []
    assert root.get("role") == "group"  # links inside an "img" could not be reached
    assert parse(draw_heatmap(head_to_head(SMALL), id_prefix="wr")).get("role") == "img"


def test_head_to_head_takes_a_boards_order() -> None:
    matrix = head_to_head(SMALL, order=["c", "a", "b"])
    assert matrix.players == ("c", "a", "b")
    assert matrix.win_rate[1][2] == 1.0 and matrix.win_rate[2][1] == 0.0  # a beat b twice
    assert matrix.win_rate[0][1] == 0.75 and matrix.battles[0][1] == 2 and matrix.win_rate[0][0] is None


# ---- intervals --------------------------------------------------------------------------------

def test_interval_plot_draws_a_row_per_player_best_first_on_round_ticks() -> None:
    chart = draw_intervals(intervals(), id_prefix="iv", few_matches=20)
    root = parse(chart)
    rows = [g for g in find(root, "g") if g.get("class") in ("player", "few")]
    assert [g.find(f"{SVG}text").text for g in rows] == ["gpt-4", "mistral", "claude"]
    assert [g.get("class") for g in rows] == ["player", "few", "player"]
    assert rows[1].find(f"{SVG}line").get("stroke-dasharray")  # few matches: dashed
    unbounded = rows[2]
    assert unbounded.find(f"{SVG}line") is None and unbounded.find(f"{SVG}circle").get("fill") == "#ffffff"
    assert rows[0].find(f"{SVG}title").text == "gpt-4: 1062, 95% interval 1007–1116; 94 matches"
    ticks = [float(t.text) for t in find(root, "text") if t.get("font-size") == "10"]
    assert ticks == [900.0, 950.0, 1000.0, 1050.0, 1100.0, 1150.0]
    notes = " ".join(t.text for t in find(root, "text") if t.text)
    assert "no interval" in notes and "fewer than 20 matches" in notes
    assert chart.summary == ("Ratings of 3 players with 95% intervals; gpt-4 rates highest "
                             "(1062, 95% interval 1007–1116); 1 without an interval.")
    assert chart.table.rows[2] == ("claude", "958", "—", "—", "40")
    assert draw_intervals([], id_prefix="iv").svg == ""


def test_whiskers_sit_where_the_axis_puts_their_bounds() -> None:
    root = parse(draw_intervals(intervals(), id_prefix="iv"))
    ticks = {float(t.text): float(t.get("x")) for t in find(root, "text") if t.get("font-size") == "10"}
    (v0, x0), (v1, x1) = sorted(ticks.items())[:2]
    whisker = next(g for g in find(root, "g") if g.get("class") == "player").find(f"{SVG}line")
    assert float(whisker.get("x1")) == pytest.approx(x0 + (1007.0 - v0) * (x1 - x0) / (v1 - v0), abs=0.1)


def test_read_intervals_drops_the_interval_of_an_unbounded_group() -> None:
    rows = [Rating("a", 1050.0, 1000.0, 1100.0, 1050.0, 3, 1, 0, 4, bounded=True),
            Rating("b", 1010.0, 990.0, 1030.0, 1000.0, 2, 2, 0, 4, bounded=False),
            Rating("c", 950.0, math.nan, math.nan, 950.0, 1, 3, 0, 4)]
    assert read_intervals(rows) == [Interval("a", 1050.0, 1000.0, 1100.0, 4), Interval("b", 1010.0, None, None, 4),
                                    Interval("c", 950.0, None, None, 4)]


def test_interval_bars_share_the_axis_and_stay_tiny() -> None:
    items = intervals()
    axis = fit_axis(items)
    bars = [draw_interval_bar(i, low=axis.low, high=axis.high, id_prefix=f"bar-{k}") for k, i in enumerate(items)]
    assert all(len(b.svg) < 600 for b in bars)
    roots = [parse(b) for b in bars]
    assert roots[0].get("viewBox") == "0 0 120 14"
    first = roots[0].findall(f"{SVG}line")[1]  # after the track
    assert float(first.get("x1")) == pytest.approx(4 + (1007 - axis.low) * 112 / (axis.high - axis.low), abs=0.1)
    same = draw_interval_bar(Interval("x", 1062.0, 1007.0, 1116.0), low=axis.low, high=axis.high, id_prefix="x")
    assert parse(same).find(f"{SVG}circle").get("cx") == roots[0].find(f"{SVG}circle").get("cx")
    assert roots[2].findall(f"{SVG}line")[1:] == [] and roots[2].find(f"{SVG}circle").get("fill") == "#ffffff"
    beyond = parse(draw_interval_bar(Interval("y", 1500.0, 1400.0, 1600.0), low=900.0, high=1100.0, id_prefix="y"))
    assert float(beyond.find(f"{SVG}circle").get("cx")) == 116.0  # held at the edge, inside the box


# ---- history ----------------------------------------------------------------------------------

def test_read_runs_reads_the_stores_snapshots() -> None:
    runs = read_runs(snapshots())
    assert [r.run for r in runs] == [1, 2] and runs[1].time == 1_700_000_000.0 + DAY
    assert [i.player for i in runs[1].rows] == ["m0", "m3", "m1", "m2"]  # no rating, no row
    assert runs[1].rows[3] == Interval("m2", 960.0, None, None)


def test_history_draws_a_line_per_player_of_the_latest_runs_best() -> None:
    chart = draw_history(read_runs(snapshots()), id_prefix="h", players=3)
    root = parse(chart)
    series = [g for g in find(root, "g") if g.get("class") == "series"]
    assert [g.find(f"{SVG}title").text for g in series] == ["m0", "m3", "m1"]
    assert len(find(root, "polyline")) == 3
    assert [len(g.findall(f"{SVG}circle")) for g in series] == [2, 1, 2]
    assert [len(g.findall(f"{SVG}path")) for g in series] == [1, 1, 1]  # the bands
    labels = [t.text for t in find(root, "text") if t.get("font-size") == "10"]
    assert labels[-2:] == ["Nov 14", "Nov 15"] and labels[:-2] == ["950", "1000", "1050", "1100"]
    assert chart.summary == ("Ratings of 3 players over 2 runs from Nov 14 to Nov 15; "
                             "m0 rates highest in the latest run (1040).")
    assert chart.table.header == ("Run (UTC)", "m0", "m3", "m1")
    assert chart.table.rows[0] == ("Nov 14", "1030, 95% interval 1000–1060", "—", "1000, 95% interval 970–1030")


def test_history_band_skips_runs_without_an_interval() -> None:
    root = parse(draw_history(read_runs(snapshots()), id_prefix="h"))
    m2 = next(g for g in find(root, "g") if g.find(f"{SVG}title").text == "m2")
    band = m2.find(f"{SVG}path").get("d")
    assert len(re.findall(r"[ML]", band)) == 4  # run 1 only: a narrow box, not a band into run 2


def test_history_end_labels_are_nudged_apart() -> None:
    root = parse(draw_history(read_runs(snapshots()), id_prefix="h"))
    ends = [g.findall(f"{SVG}text")[-1] for g in find(root, "g") if g.get("class") == "series"]
    ys = sorted(float(t.get("y")) for t in ends)
    assert all(b - a >= LINE_GAP - 0.1 for a, b in zip(ys, ys[1:]))  # m3 (1001) and m1 (1000) end together
    assert any(g.find(f"{SVG}line") is not None for g in find(root, "g") if g.get("class") == "series")


def test_history_of_nothing_is_empty_and_dates_get_times_when_runs_share_a_day() -> None:
    assert draw_history([], id_prefix="h").svg == ""
    assert draw_history([Run(1, 0.0, ())], id_prefix="h").svg == ""
    item = Interval("m", 1000.0)
    same_day = [Run(1, 1_700_000_000.0, (item,)), Run(2, 1_700_003_600.0, (item,))]
    assert draw_history(same_day, id_prefix="h").table.rows[0][0] == "Nov 14 22:13"
    years = [Run(1, 1_700_000_000.0, (item,)), Run(2, 1_700_000_000.0 + 60 * DAY, (item,))]
    assert draw_history(years, id_prefix="h").table.rows[1][0] == "2024-01-13"


# ---- every chart ------------------------------------------------------------------------------

def shown_text(element: ET.Element) -> str:
    """A <text>'s drawn characters (not its <title>)."""
    return (element.text or "") + "".join(child.tail or "" for child in element)


def text_box(element: ET.Element, inherited: float = 11.0) -> list[tuple[float, float]]:
    """The corners of a <text>'s estimated box, rotated as its transform says."""
    x, y = float(element.get("x")), float(element.get("y"))
    size = float(element.get("font-size", inherited))
    width = estimate_width(shown_text(element), size)
    start = {"start": x, "middle": x - width / 2, "end": x - width}[element.get("text-anchor", "start")]
    top = y - size / 2 if element.get("dominant-baseline") == "central" else y - size
    bottom = top + size * 1.25
    corners = [(start, top), (start + width, top), (start, bottom), (start + width, bottom)]
    turn = re.fullmatch(r"rotate\((\S+) (\S+) (\S+)\)", element.get("transform", "rotate(0 0 0)"))
    angle, cx, cy = (float(v) for v in turn.groups())
    cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    return [(cx + (px - cx) * cos - (py - cy) * sin, cy + (px - cx) * sin + (py - cy) * cos) for px, py in corners]


@pytest.mark.parametrize("kind", range(5), ids=["win-rate", "battles", "intervals", "bar", "history"])
def test_labels_of_long_names_stay_inside_the_viewbox(kind: int) -> None:
    chart = every_chart(LONG)[kind]
    root = parse(chart)
    _, _, width, height = map(float, root.get("viewBox").split())
    texts = find(root, "text")
    for text in texts:
        for px, py in text_box(text):
            assert -0.01 <= px <= width + 0.01 and -0.01 <= py <= height + 0.01, (shown_text(text), px, py)
    cut = [t for t in texts if shown_text(t).endswith("…")]
    assert all(t.find(f"{SVG}title").text == LONG for t in cut)
    assert len(cut) == {0: 2, 1: 2, 2: 1, 3: 0, 4: 1}[kind]


@pytest.mark.parametrize("kind", range(5), ids=["win-rate", "battles", "intervals", "bar", "history"])
def test_a_player_named_like_markup_stays_text(kind: int) -> None:
    chart = every_chart(EVIL)[kind]
    root = parse(chart)
    assert "<script" not in chart.svg and not list(root.iter(f"{SVG}script")) and not list(root.iter("script"))
    strings = [s for element in root.iter() for s in (element.text, element.tail) if s]
    assert any(EVIL in s for s in strings)
    assert EVIL in chart.summary or any(EVIL in cell for row in chart.table.rows for cell in row)


def test_every_chart_is_accessible_scalable_and_free_of_inline_style() -> None:
    for chart in every_chart():
        root = parse(chart)
        assert root.get("role") == "img" and "chart" in root.get("class").split()
        assert root.get("viewBox") and root.get("width") and "height" in root.attrib
        title, desc = root.find(f"{SVG}title"), root.find(f"{SVG}desc")
        assert root.get("aria-labelledby") == title.get("id") and title.text
        assert root.get("aria-describedby") == desc.get("id") and desc.text == chart.summary
        assert all("style" not in element.attrib for element in root.iter())
        assert not list(root.iter(f"{SVG}style"))


def test_ids_start_with_the_prefix_and_are_unique_on_a_page() -> None:
    page = "<body>" + "".join(c.svg for c in every_chart(prefix="one") + every_chart(prefix="two")) + "</body>"
    ids = [e.get("id") for e in ET.fromstring(page).iter() if e.get("id")]
    assert len(ids) == 20 and len(set(ids)) == len(ids)
    assert all(i.startswith(("one-", "two-")) for i in ids)
    for bad in ("", "1x", "a b", 'x"'):
        with pytest.raises(ValueError):
            draw_intervals(intervals(), id_prefix=bad)


def test_an_interval_plot_without_notes_is_drawn() -> None:
    """Every player bounded and with matches enough: no note line, and the plot still draws."""
    items = [Interval("a", 1050.0, 1000.0, 1100.0, 50), Interval("b", 950.0, 900.0, 1000.0, 50)]
    root = parse(draw_intervals(items, id_prefix="plain", few_matches=10))
    assert len([g for g in find(root, "g") if g.get("class") == "player"]) == 2
    assert not any("no interval" in (t.text or "") for t in find(root, "text"))
