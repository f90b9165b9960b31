"""`?humans=` names a real panel of reference voters (issue 24, item 6): 58 expert voters named by
the pattern `human/expert_*`, by patterns repeated, and by their names packed into comma lists
within the URL's limits (20 values of 255 characters, as the client packs them) all give the
agreement worked out here from the planted votes; bad names and patterns, and lists past the
limits, are a 4xx that says what is wrong. The client (a list of 58 names, or a pattern), the page
and `joust judges` take the same set. SQLite, then PostgreSQL. On LLMFAO's crowd, split by worker,
a reference set of 58 workers gives the agreement computed from the files."""
from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from joust import Client
from joust.humans import CHARS, VALUES, packed
from service.cli import main
from service.config import Settings
from service.usecases.importers.battles import load_battles
from service.web.routes.judges import HUMANS_CHARS, HUMANS_VALUES
from tests.api_fixtures import store_of
from tests.required import shared_data
from tests.serving import serving

EXPERTS = [f"expert_{i:02d}" for i in range(58)]
AUTHORS = ["author_0", "author_1", "author_2"]
PAIRS = [("q1", "m1", "m2"), ("q1", "m1", "m3"), ("q2", "m2", "m3"), ("q3", "m1", "m2")]
JUDGE_SAYS = {"q1/m1/m2": "model_a", "q1/m1/m3": "tie", "q2/m2/m3": "model_b", "q3/m1/m2": "model_b"}
WINNERS = ("model_a", "model_b", "tie")


def planted(tmp_path: Path) -> tuple[Path, Path, dict[str, dict[str, str]]]:
    """A judge's verdicts on four pairs, and votes on them: every expert and author votes on every
    pair, expert i's verdict cycling with i (so the experts' votes differ from the authors')."""
    votes: dict[str, dict[str, str]] = {}
    for i, voter in enumerate(EXPERTS + AUTHORS):
        votes[voter] = {f"{q}/{a}/{b}": WINNERS[(i + k) % 3 if voter in EXPERTS else 0]
                        for k, (q, a, b) in enumerate(PAIRS)}
    judge = tmp_path / "gpt4.csv"
    judge.write_text("question_id,model_a,model_b,winner\n"
                     + "".join(f"{q},{a},{b},{JUDGE_SAYS[f'{q}/{a}/{b}']}\n" for q, a, b in PAIRS))
    crowd = tmp_path / "votes.csv"
    crowd.write_text("question_id,model_a,model_b,winner,voter\n" + "".join(
        f"{q},{a},{b},{votes[v][f'{q}/{a}/{b}']},{v}\n" for v in votes for q, a, b in PAIRS))
    return judge, crowd, votes


def agreement_here(votes: dict[str, dict[str, str]], voters: list[str]) -> tuple[float, int]:
    """The judge's agreement with the votes of `voters`: every (verdict, vote) on a pair compared."""
    agree = total = 0
    for pair, said in JUDGE_SAYS.items():
        for voter in voters:
            total += 1
            agree += votes[voter][pair] == said
    return agree / total, total


@pytest.fixture
def panel(client: TestClient, tmp_path: Path) -> dict[str, dict[str, str]]:
    judge, crowd, votes = planted(tmp_path)
    store = store_of(client)
    load_battles(store, judge, judge="gpt4")
    load_battles(store, crowd, human=True)
    return votes


def gpt4(body: dict) -> tuple[float, int]:
    [found] = [h for h in body["judges"] if h["judge"] == "import/gpt4"]
    return found["human_agreement"], found["human_votes"]


def test_58_voters_by_pattern_and_by_packed_names(client: TestClient, panel: dict) -> None:
    names = [f"human/{v}" for v in EXPERTS]
    expected = agreement_here(panel, EXPERTS)
    assert expected != agreement_here(panel, EXPERTS + AUTHORS)  # the set matters
    answers = [client.get("/api/judges", params=params) for params in (
        {"humans": "human/expert_*"},
        {"humans": [f"human/expert_{i}*" for i in range(6)]},  # patterns, repeated
        {"humans": packed(names)},  # the names, in comma lists of at most 255 characters
    )]
    assert len(packed(names)) == 4
    for response in answers:
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["humans"] == names
        assert gpt4(body) == (pytest.approx(expected[0]), expected[1])
    every = client.get("/api/judges", params={"humans": "human/*"}).json()
    assert every == client.get("/api/judges").json()  # every human judge: the default
    both = client.get("/api/judges", params={"humans": "human/expert_*, human/author_1"}).json()
    assert both["humans"] == sorted(names + ["human/author_1"])
    assert gpt4(both) == (pytest.approx(agreement_here(panel, EXPERTS + ["author_1"])[0]), 4 * 59)
    page = client.get("/judges", params={"humans": "human/expert_*"})  # the page takes the same patterns
    assert page.status_code == 200 and 'value="human/expert_57" checked' in page.text
    assert 'value="human/author_0" checked' not in page.text


@pytest.mark.parametrize(("humans", "status", "words"), [
    ("expert_*", 422, "'expert_*' is not a human judge"),
    ("import/*", 422, "'import/*' is not a human judge"),
    ("*", 422, "'*' is not a human judge"),
    ("human/nobody_*", 404, "no human judge matches human/nobody_*: the human judges are human/author_0"),
    ("human/expert_*,human/zed", 404, "no votes by human/zed"),
    ("human/expert_[0-9]", 404, "no votes by human/expert_[0-9]"),  # only `*` is a wildcard
    # the limits: a value's characters (58 names in one list), and a request's values (one name each)
    (",".join(f"human/{v}" for v in EXPERTS), 422, "query parameter humans[0]: String should have at most 255"),
    ([f"human/{v}" for v in EXPERTS], 422, "query parameter humans: List should have at most 20 items"),
], ids=["not-human", "import-pattern", "bare-star", "no-match", "unknown-name", "brackets-are-literal",
        "long-value", "many-values"])
def test_bad_names_and_patterns_are_refused(client: TestClient, panel: dict, humans: str | list[str], status: int,
                                            words: str) -> None:
    response = client.get("/api/judges", params={"humans": humans})
    assert response.status_code == status, response.text
    assert words in response.json()["error"]


def test_the_client_and_the_cli_name_a_panel(client: TestClient, panel: dict, api_settings: Settings,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Over a real socket (uvicorn): 58 names in the client's list, a pattern in `joust judges`."""
    names = [f"human/{v}" for v in EXPERTS]
    expected = (pytest.approx(agreement_here(panel, EXPERTS)[0]), 58 * 4)
    with serving(api_settings) as url, Client(url) as remote:
        for humans in (names, "human/expert_*", ["human/expert_*"]):
            frame = remote.judges(humans=humans)
            assert frame.attrs["humans"] == names
            row = frame.set_index("judge").loc["import/gpt4"]
            assert (row["human_agreement"], row["human_votes"]) == expected
        code = main(["judges", "--url", url, "--judge", "import/gpt4", "--humans", "human/expert_*",
                     "--format", "json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        [row] = json.loads(out)
        assert (row["judge"], row["human_agreement"], row["human_votes"]) == ("import/gpt4", *expected)
        assert "58 reference voters: human/expert_00, human/expert_01, human/expert_02 and 55 more" in err
        code = main(["judges", "--url", url, "--humans", "expert_*"])  # the API's 422, its words
        out, err = capsys.readouterr()
        assert (code, out) == (2, "") and "'expert_*' is not a human judge" in err


def test_llmfao_58_workers_as_the_reference(client: TestClient, tmp_path: Path) -> None:
    """LLMFAO's crowd votes filed per worker (`human/<worker>`, a copy with a `voter` column in
    tmp_path), GPT-4's verdicts beside them: against 58 named workers GPT-4's agreement is the
    one counted here from the files on the same pairs, with ties and without."""
    data = shared_data("llmfao")
    crowd = tmp_path / "crowd.csv"
    with (data / "crowd-comparisons.csv").open(newline="") as src, crowd.open("w", newline="") as out:
        reader = csv.DictReader(src)
        writer = csv.DictWriter(out, fieldnames=[*(reader.fieldnames or []), "voter"])
        writer.writeheader()
        rows = list(reader)
        writer.writerows({**r, "voter": f"w{r['worker']}"} for r in rows)
    store = store_of(client)
    load_battles(store, crowd, human=True)
    load_battles(store, data / "gpt4-crowd-comparisons.csv", judge="gpt4")
    workers = sorted({r["worker"] for r in rows}, key=int)[:58]
    assert len(workers) == 58 and len({r["worker"] for r in rows}) > 100

    def verdict(row: dict[str, str]) -> tuple[tuple[str, frozenset[str]], str]:
        """(pair, the name of the model that won, or "tie")."""
        pair = (row["prompt"], frozenset((row["left"], row["right"])))
        return pair, "tie" if row["winner"] == "tie" else row[row["winner"]]

    chosen: dict[tuple, Counter[str]] = defaultdict(Counter)
    for r in rows:
        if r["worker"] in workers:
            pair, said = verdict(r)
            chosen[pair][said] += 1
    agree = total = agree_decided = decided = 0
    with (data / "gpt4-crowd-comparisons.csv").open(newline="") as handle:
        for r in csv.DictReader(handle):
            pair, said = verdict(r)
            counted = chosen.get(pair, Counter())
            total += sum(counted.values())
            agree += counted[said]
            if said != "tie":
                decided += sum(n for w, n in counted.items() if w != "tie")
                agree_decided += counted[said]
    names = packed(f"human/w{w}" for w in workers)
    body = client.get("/api/judges", params={"humans": names, "judge": "import/gpt4"}).json()
    assert len(body["humans"]) == 58
    [found] = body["judges"]
    assert (found["human_agreement"], found["human_votes"]) == (pytest.approx(agree / total, abs=1e-12), total)
    assert (found["human_agreement_decided"], found["human_decided_votes"]) == (
        pytest.approx(agree_decided / decided, abs=1e-12), decided)


def test_the_client_packs_names_within_the_apis_limits() -> None:
    """`joust.humans` mirrors the API's limits and packs a list into as few values as fit them."""
    assert (CHARS, VALUES) == (HUMANS_CHARS, HUMANS_VALUES)
    names = [f"human/expert_{i}" for i in range(300)]
    values = packed(names)
    assert len(values) <= VALUES and all(len(v) <= CHARS for v in values)
    assert ",".join(values).split(",") == names  # every name, in order
    assert packed("human/expert_*") == ["human/expert_*"] and packed(None) is None
    assert packed(["human/" + "x" * 300, "human/a"]) == ["human/" + "x" * 300, "human/a"]  # refused by the API, by name
