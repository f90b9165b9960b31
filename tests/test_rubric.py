"""The structural rubric scorer: a golden case per rule, object names from questions, and its
agreement with the human experts of the Comparative-QA benchmark (when ../shared/data is here)."""
from __future__ import annotations

import math

import pytest

from bench.offline_agreement import (
    DEFAULT_DATA,
    HUMAN_TABLE,
    cohen_kappa,
    load_rows,
    measure,
    pair_agreement,
    spearman,
)
from leaderboard.answer_layout import parse_layout
from leaderboard.rubric import (
    COVERED,
    MAX_POINTS,
    RubricScore,
    objects_from_question,
    score_structure,
)
from tests.required import skip_required

# Its module-scoped fixture is built once: every test of the module runs in one of the suite's processes.
pytestmark = pytest.mark.xdist_group("test_rubric")

INTRO = ("Python and Java are two of the most widely used programming languages. "
         "This comparison weighs their performance, ease of learning and ecosystem.")
ASPECTS = [
    ("Performance", ("Java usually runs faster than Python thanks to its just-in-time compiler. "
                     "Python trades raw speed for quicker development.")),
    ("Ease of learning", ("Python reads almost like English, while Java asks for more boilerplate. "
                          "Beginners therefore write working Python code sooner.")),
    ("Ecosystem", "Java rules large enterprise back ends. Python leads in data science and scripting."),
    ("Typing", ("Java checks types when compiling, whereas Python checks them at run time. "
                "Static checks catch some Java mistakes early.")),
    ("Community", "Both Python and Java have huge communities. Questions about either get answered quickly."),
    ("Tooling", "Java has mature IDEs such as IntelliJ. Python editors are lighter but capable."),
]  # fmt: skip


def answer(intro: str | None = INTRO, aspects: list[tuple[str, str]] | None = None, choice: str | None = "Python",
           bullets: str = "- **{name}**: {text}") -> str:
    """A comparative answer in the benchmark's usual markdown shape."""
    parts = [f"**Summary**\n{intro}"] if intro is not None else []
    body = [bullets.format(name=n, text=t) for n, t in (ASPECTS if aspects is None else aspects)]
    parts.append("**Main Aspects of Comparison**\n" + "\n".join(body))
    if choice is not None:
        parts.append(f"**Best Option**\n{choice}")
    return "\n\n".join(parts)


def score(text: str) -> RubricScore:
    return score_structure(text, "Python", "Java")


GOOD = answer()


def test_a_well_built_answer_gets_every_structural_point() -> None:
    result = score(GOOD)
    assert result.points == {c: MAX_POINTS[c] for c in COVERED}, result.notes
    assert result.total == result.max_total == 11
    assert sorted(result.notes) == sorted(COVERED)


def test_flattened_text_scores_like_the_markdown() -> None:
    # The evaluation tables hold answers with their newlines turned into runs of spaces.
    assert score(GOOD.replace("\n", "  ")).points == score(GOOD).points


# --- one rule at a time (each case breaks exactly what its criterion checks) --------------------


def test_c1_introduction_missing_or_too_long() -> None:
    assert score(answer(intro=None)).points[1] == 0
    long_intro = " ".join([INTRO] * 6)  # about 130 words
    assert score(answer(intro=long_intro)).points[1] == 0
    assert score(answer()).points[1] == 1


def test_c1_plain_prose_counts_its_first_sentence_as_the_introduction() -> None:
    prose = " ".join(f"Python differs from Java in respect number {i}." for i in range(8))
    layout = parse_layout(prose, ("Python", "Java"))
    assert layout.intro == ("Python differs from Java in respect number 0.",)
    assert score(prose).points[1] == 1


def test_c2_c4_c5_c6_need_aspects() -> None:
    prose = "Python and Java differ. " + " ".join(t for _, t in ASPECTS) + " Overall, Python is the better choice."
    result = score(prose)
    assert [result.points[c] for c in (2, 4, 5, 6)] == [0, 0, 0, 0]


def test_c2_counts_in_terms_of_paragraphs_as_aspects_but_c4_wants_blocks() -> None:
    paragraphs = "\n\n".join(f"In terms of {n.lower()}, {t}" for n, t in ASPECTS)
    result = score(f"{INTRO}\n\n{paragraphs}")
    assert (result.points[2], result.points[4]) == (1, 0)


def test_c5_and_c6_unlabelled_bullets() -> None:
    result = score(answer(bullets="- {text}"))
    assert (result.points[2], result.points[4], result.points[5], result.points[6]) == (1, 1, 0, 0)


def test_c5_object_names_are_not_aspect_names() -> None:
    per_object = [("Python", "Slower but friendlier to beginners and scientists."),
                  ("Java", "Faster and stricter, a favourite of large companies.")]  # fmt: skip
    assert score(answer(aspects=per_object)).points[5] == 0


def test_c6_labels_without_descriptions() -> None:
    bare = [(n, "Java.") for n, _ in ASPECTS]
    assert score(answer(aspects=bare)).points[6] == 0


@pytest.mark.parametrize(
    "choice, points",
    [
        ("Python", 1),
        ("Java", 1),
        ("**Java**", 1),
        ("Tie", 1),
        (None, 0),
        ("It depends on your needs and preferences.", 0),
        ("Subjective", 0),
        (("Python for beginners, Java for large teams, although the choice really rests on many other "
         "factors worth weighing carefully"), 0),
    ],
)
def test_c7_explicit_final_choice(choice: str | None, points: int) -> None:
    assert score(answer(choice=choice)).points[7] == points


def test_c7_a_closing_sentence_that_picks_one_object() -> None:
    picks = answer(choice=None) + "\n\nOverall, Python is the better choice for most newcomers."
    hedges = answer(choice=None) + "\n\nUltimately, the choice between Python and Java depends on the project."
    assert score(picks).points[7] == 1
    assert score(hedges).points[7] == 0


def test_c7_inline_and_heading_forms() -> None:
    assert score(answer(choice=None) + "\n\nBest Option: Python").points[7] == 1
    assert score(answer(choice=None) + "\n\n### The best option: Java").points[7] == 1
    assert score(answer(choice=None) + "\n\n**The Better Option** Python").points[7] == 1


def test_c3_introduction_names_the_aspects() -> None:
    vague = "Python and Java are two of the most widely used programming languages. Both have fans."
    assert score(answer(intro=vague)).points[3] == 0
    assert score(answer()).points[3] == 1


def test_c10_each_argument_names_both_objects() -> None:
    one_sided = ASPECTS[:-1] + [("Community", "Python has a huge, friendly community of volunteers.")]
    neither = ASPECTS[:-1] + [("Community", "Huge communities answer questions quickly.")]
    assert score(answer()).points[10] == 2
    assert score(answer(aspects=one_sided)).points[10] == 1
    assert score(answer(aspects=neither)).points[10] == 0


def test_c10_is_not_scored_without_object_names() -> None:
    result = score_structure(GOOD)
    assert 10 not in result.points and result.max_total == 9
    assert result.points[7] == 1  # a short answer still counts as a choice


def test_c13_repeated_statement() -> None:
    repeated = ASPECTS + [("Speed", "Java usually runs faster than Python thanks to its just-in-time compiler.")]
    result = score(answer(aspects=repeated))
    assert result.points[13] == 0 and "Java usually runs faster" in result.notes[13]
    assert score(answer()).points[13] == 1


@pytest.mark.parametrize("aspects, points", [(2, 0), (5, 1), (9, 1), (12, 0)])
def test_c15_sentence_count(aspects: int, points: int) -> None:
    # 2 intro sentences + 2 per aspect: 6, 12, 20 and 26 sentences.
    many = [(f"Aspect {chr(65 + i)}", (f"Python and Java differ on point {i} in one way. "
                                      f"Another remark {i} about Java versus Python follows.")) for i in range(aspects)]
    result = score(answer(aspects=many))
    assert result.points[15] == points, result.notes[15]


def test_the_appendix_of_used_arguments_is_not_counted() -> None:
    appendix = "\n".join(f"{i}. [{i}] Python is argued to be better than Java, says source {i}." for i in range(1, 15))
    with_appendix = GOOD + "\n\n**Used Arguments**\n" + appendix
    assert score(with_appendix).points == score(GOOD).points


def test_differing_and_totals() -> None:
    a, b = score(GOOD), score(answer(choice=None, intro=None))
    assert a.differing(b) == [1, 3, 7]  # 12 sentences remain: C15 holds
    assert a.total - b.total == 3


# --- object names from questions -------------------------------------------------------------


@pytest.mark.parametrize(
    "question, objects",
    [
        ("Compare python and java", ("python", "java")),
        ("Compare dell and ibm with respect to power of processors", ("dell", "ibm")),
        ("What is better: Canon or Nikon?", ("Canon", "Nikon")),
        ("Which is better, a laptop or a desktop?", ("laptop", "desktop")),
        ("Should I learn Python or R for data analysis?", ("Python", "R")),
        ("Is the PS3 better than the DS or the DS better than the PS3?", None),
        ("iPhone vs Android", ("iPhone", "Android")),
        ("What is the capital of France?", None),
    ],
)
def test_objects_from_question(question: str, objects: tuple[str, str] | None) -> None:
    assert objects_from_question(question) == objects


# --- statistics of the bench ------------------------------------------------------------------


def test_agreement_statistics() -> None:
    assert cohen_kappa([(1, 1), (0, 0), (1, 1), (0, 0)]) == 1
    assert cohen_kappa([(1, 0), (0, 1), (1, 0), (0, 1)]) == -1
    assert cohen_kappa([(1, 1), (1, 0), (0, 1), (0, 0)]) == 0
    assert math.isnan(cohen_kappa([(1, 1), (1, 1)]))
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1)
    assert spearman([1, 1, 2, 2], [1, 2, 3, 4]) == pytest.approx(0.894427, abs=1e-6)
    # (human, offline, length): the pair (10, 12) agrees, (10, 9) disagrees, equal humans skip.
    result = pair_agreement([[(10, 5, 100), (12, 7, 50)], [(10, 5, 1), (9, 6, 2), (9, 6, 3)]])
    assert (result.pairs, result.decided, result.agreement) == (3, 3, pytest.approx(1 / 3))
    assert result.length_agreement == 0


# --- agreement with the human experts --------------------------------------------------------

# Measured by bench/offline_agreement.py on the 367 expert-scored summaries (kappa per criterion,
# over the summaries both annotators scored alike). The bounds are these minus 0.1, about the
# half-width of a bootstrap 95% interval; every interval measured excludes 0 (chance).
MEASURED_KAPPA = {1: 0.31, 2: 0.53, 3: 0.48, 4: 0.50, 5: 0.71, 6: 0.58, 7: 0.80, 10: 0.25, 13: 0.22, 15: 0.60}


@pytest.fixture(scope="module")
def report():
    if not (DEFAULT_DATA / HUMAN_TABLE).is_file():
        skip_required("shared-data", f"missing {DEFAULT_DATA / HUMAN_TABLE}")
    return measure(load_rows(DEFAULT_DATA))


def test_every_covered_criterion_agrees_with_the_experts_above_chance(report) -> None:
    assert report.rows == 367
    kappas = {c.criterion: c.kappa for c in report.criteria}
    assert set(kappas) == set(COVERED) == set(MEASURED_KAPPA)
    low = {c: k for c, k in kappas.items() if not k >= MEASURED_KAPPA[c] - 0.1}
    assert not low, f"kappa fell below the measured value minus 0.1: {low}"
    (c10,) = [c for c in report.criteria if c.criterion == 10]
    assert c10.spearman is not None and c10.spearman >= 0.13  # measured 0.23


def test_structural_total_tracks_the_human_total(report) -> None:
    assert report.total_spearman >= 0.44  # measured 0.54
    assert report.total_pearson >= 0.51  # measured 0.61


def test_pairwise_preferences_match_the_experts_well_above_chance(report) -> None:
    pairs = report.pairs
    assert pairs.pairs > 1000 and pairs.decided >= 0.7 * pairs.pairs  # measured 80% decided
    assert pairs.agreement >= 0.70  # measured 79%, chance 50%
    assert pairs.agreement > pairs.length_agreement + 0.2  # "longer wins" is at chance (47%)
