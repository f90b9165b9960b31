"""Judge health: each statistic on hand-made golden records, the store's records and parse
failures on a real SQLite file, `reminded` recorded by the worker's pairwise step, and LLMFAO
(crowd, GPT-4, GPT-3.5-turbo-instruct) imported through the real CLI, checked against counts
made directly from the CSV files."""
from __future__ import annotations

import asyncio
import csv
import random
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

import pytest

from leaderboard.judge_health import (
    CallRecord,
    JudgementRecord,
    VoterAgreement,
    consistency,
    first_position_win_rate,
    health_report,
    human_agreement,
    human_votes,
    judge_health,
    longer_wins_rate,
    parse_failure_rate,
    tie_rate,
    voter_agreement,
)
from leaderboard.keys import content_hash
from leaderboard.spec import RunSpec
from leaderboard.types import OrderPolicy, Pair, Submission, Winner
from service.cli import main
from service.store import NewJudgement, NewSubmission, Store
from tests.required import skip_required
from workers.judge import JudgeReply
from workers.pairwise import calls_as_json, judge_pair

# Its module-scoped fixture is built once: every test of the module runs in one of the suite's processes.
pytestmark = pytest.mark.xdist_group("test_health")

A, B, TIE = Winner.A, Winner.B, Winner.TIE
LLMFAO = Path(__file__).resolve().parents[2] / "shared" / "data" / "llmfao"


def call(first: int | None, winner: Winner, reminded: bool | None = None) -> CallRecord:
    return CallRecord(first=first, winner=winner, reminded=reminded)


def rec(*calls: CallRecord, a: int = 1, b: int = 2, outcome: Winner = TIE, judge: str = "j",
        lengths: tuple[int | None, int | None] = (None, None)) -> JudgementRecord:
    return JudgementRecord(judge=judge, a_id=a, b_id=b, outcome=outcome, calls=calls,
                           a_length=lengths[0], b_length=lengths[1])


# ---- each statistic on golden records --------------------------------------------------------


def test_consistency_counts_only_both_order_judgements() -> None:
    records = [
        rec(call(1, A), call(2, B)),  # a wins in both orders: agree
        rec(call(1, A), call(2, A)),  # the first slot wins twice: disagree
        rec(call(2, TIE), call(1, TIE)),  # tie both ways: agree
        rec(call(1, A)),  # one order only: not counted
        rec(call(1, A), call(1, B)),  # same order twice: not a both-order judgement
        rec(call(None, A), call(None, A)),  # positions unknown: not counted
    ]
    assert consistency(records) == pytest.approx(2 / 3)
    assert consistency([rec(call(1, A))]) is None


def test_first_position_win_rate_among_calls_with_a_winner_and_a_known_position() -> None:
    records = [
        rec(call(1, A), call(2, A)),  # first slot wins twice
        rec(call(2, B), call(1, TIE)),  # second slot wins; the tie is left out
        rec(call(None, A)),  # position unknown: left out
        rec(call(7, A)),  # shows a submission that is neither side: left out
    ]
    assert first_position_win_rate(records) == pytest.approx(2 / 3)
    assert first_position_win_rate([rec(call(1, TIE)), rec(call(None, A))]) is None


def test_tie_rate_over_every_call() -> None:
    records = [rec(call(1, TIE), call(2, A)), rec(call(None, TIE)), rec(call(2, B))]
    assert tie_rate(records) == pytest.approx(2 / 4)
    assert tie_rate([]) is None


def test_parse_failure_rate_counts_reminders_and_failed_matches_over_recorded_calls() -> None:
    records = [
        rec(call(1, A, reminded=True), call(2, B, reminded=False)),
        rec(call(1, A, reminded=False)),
        rec(call(None, A)),  # an imported call: joust never parsed it, left out
    ]
    # (1 reminded + 2 failed matches) / (3 recorded calls + 2 failed matches)
    assert parse_failure_rate(records, failed_matches=2) == pytest.approx(3 / 5)
    assert parse_failure_rate(records) == pytest.approx(1 / 3)
    assert parse_failure_rate([rec(call(None, A))]) is None
    assert parse_failure_rate([], failed_matches=1) == 1.0


def test_longer_wins_rate_among_calls_with_a_winner_and_different_lengths() -> None:
    records = [
        # a (10 chars) is longer: shown first and won (longer wins); shown second and lost
        # (shorter wins); the tie is left out
        rec(call(1, A), call(1, B), call(2, TIE), lengths=(10, 5)),
        # position unknown, one call: its winner is the judgement's outcome, b, the longer
        rec(call(None, B), outcome=B, lengths=(3, 8)),
        rec(call(1, A), lengths=(4, 4)),  # equal lengths (imported placeholders): left out
        rec(call(1, A), lengths=(None, 4)),  # length unknown: left out
        rec(call(None, A), call(None, A), outcome=A, lengths=(9, 1)),  # two unknown positions: left out
    ]
    assert longer_wins_rate(records) == pytest.approx(2 / 3)
    assert longer_wins_rate([rec(call(1, A), lengths=(4, 4))]) is None


def test_human_agreement_per_vote_in_either_display_order_ties_only_with_ties() -> None:
    humans = [
        rec(call(1, A), a=1, b=2, outcome=A, judge="human/x"),  # 1 beats 2
        rec(call(2, B), a=2, b=1, outcome=B, judge="human/x"),  # 1 beats 2, shown the other way round
        rec(call(1, TIE), a=1, b=2, outcome=TIE, judge="human/y"),
        rec(call(3, TIE), a=3, b=4, outcome=TIE, judge="human/x"),
    ]
    votes = human_votes(humans + [rec(call(1, A), judge="llm")])  # non-human records are not votes
    assert votes == {(1, 2): Counter({A: 2, TIE: 1}), (3, 4): Counter({TIE: 1})}
    judge = [
        rec(call(2, B), a=2, b=1, outcome=B, judge="llm"),  # 1 beats 2: agrees with 2 of 3 votes
        rec(call(3, A), a=3, b=4, outcome=A, judge="llm"),  # a win against a tie: disagrees
        rec(call(5, A), a=5, b=6, outcome=A, judge="llm"),  # no human vote: not compared
    ]
    agreement = human_agreement(judge, votes)
    assert (agreement.rate, agreement.pairs, agreement.votes) == (pytest.approx(2 / 4), 2, 4)
    tie = human_agreement([rec(call(3, TIE), a=3, b=4, outcome=TIE)], votes)
    assert (tie.rate, tie.pairs, tie.votes) == (1.0, 1, 1)
    decided = human_agreement(judge, votes, decided=True)  # only 1 beats 2 (twice) is decided
    assert (decided.rate, decided.pairs, decided.votes) == (1.0, 1, 2)
    assert human_agreement(judge[2:], votes).rate is None
    assert voter_agreement(votes) == pytest.approx(2 / 6)  # (2*1 + 0) / (3*2 + 1*0)
    assert voter_agreement(votes, decided=True) == 1.0  # (2*1) / (2*1): the two wins of 1 over 2


def test_judge_health_per_judge_with_nulls_where_nothing_counts() -> None:
    records = [
        rec(call(1, A, reminded=False), call(2, B, reminded=True), outcome=A, judge="anthropic/x", lengths=(9, 3)),
        rec(call(None, A), outcome=A, judge="human/crowd"),
        rec(call(1, B), outcome=B, judge="human/crowd"),
    ]
    health = {h.judge: h for h in judge_health(records, {"anthropic/x": 1, "anthropic/broken": 2})}
    assert list(health) == ["anthropic/broken", "anthropic/x", "human/crowd"]
    x = health["anthropic/x"]
    assert (x.calls, x.judgements, x.consistency, x.first_position_win_rate, x.tie_rate) == (2, 1, 1.0, 0.5, 0.0)
    assert x.parse_failure_rate == pytest.approx(2 / 3) and x.longer_wins_rate == 1.0
    assert (x.human_agreement, x.human_pairs, x.human_votes) == (0.5, 1, 2)
    crowd = health["human/crowd"]
    assert (crowd.calls, crowd.first_position_win_rate, crowd.parse_failure_rate) == (2, 0.0, None)
    assert (crowd.human_agreement, crowd.human_pairs, crowd.longer_wins_rate) == (None, 0, None)
    broken = health["anthropic/broken"]
    assert (broken.calls, broken.parse_failure_rate, broken.tie_rate, broken.consistency) == (0, 1.0, None, None)
    assert [h.judge for h in judge_health(records, judges=["anthropic/x"])] == ["anthropic/x"]


def test_agreement_with_and_without_ties_against_a_chosen_reference_set() -> None:
    # pairs (1, 2), (1, 3), (2, 3), (4, 5); outcomes relative to a
    llm = [rec(call(1, A), a=1, b=2, outcome=A, judge="llm"), rec(call(1, TIE), a=1, b=3, outcome=TIE, judge="llm"),
           rec(call(2, B), a=2, b=3, outcome=B, judge="llm"), rec(call(4, A), a=4, b=5, outcome=A, judge="llm")]
    alice = [rec(call(2, B), a=1, b=2, outcome=A), rec(call(1, A), a=1, b=3, outcome=A),
             rec(call(3, TIE), a=2, b=3, outcome=TIE), rec(call(None, B), a=4, b=5, outcome=B)]
    bob = [rec(call(1, A), a=1, b=2, outcome=A), rec(call(1, TIE), a=1, b=3, outcome=TIE),
           rec(call(2, B), a=2, b=3, outcome=B)]
    carol = [rec(call(2, A), a=2, b=1, outcome=A), rec(call(4, B), a=4, b=5, outcome=B)]
    alice, bob, carol = ([replace(r, judge=f"human/{name}") for r in rs]
                         for name, rs in (("alice", alice), ("bob", bob), ("carol", carol)))
    records = llm + alice + bob + carol

    everyone = health_report(records)
    assert everyone.humans == ("human/alice", "human/bob", "human/carol")
    health = {h.judge: h for h in everyone.judges}
    judge = health["llm"]
    # (1,2): 1 won; votes 1, 1, 2 -> 2 of 3. (1,3): tie; votes 1, tie -> 1 of 2. (2,3): 3 won; votes
    # tie, 3 -> 1 of 2. (4,5): 4 won; votes 5, 5 -> 0 of 2.
    assert (judge.human_agreement, judge.human_pairs, judge.human_votes) == (pytest.approx(4 / 9), 4, 9)
    # without ties: (1,3) is left out (the judge's tie), and the tie votes: 2 of 3, 1 of 1, 0 of 2
    assert (judge.human_agreement_decided, judge.human_decided_pairs, judge.human_decided_votes) == (0.5, 3, 6)
    assert all(health[h].human_agreement is None and health[h].human_decided_votes == 0 for h in everyone.humans)
    # between voters: ordered couples (1,2): 6, 2 agree; (1,3): 2, 0; (2,3): 2, 0; (4,5): 2, 2
    assert everyone.voters == VoterAgreement(rate=pytest.approx(4 / 12), pairs=4, votes=9,
                                             decided=0.5, decided_pairs=2, decided_votes=5)  # (2 + 2) / (6 + 2)

    two = health_report(records, humans=["human/alice", "human/bob"])
    health = {h.judge: h for h in two.judges}
    judge = health["llm"]
    assert (judge.human_agreement, judge.human_pairs, judge.human_votes) == (pytest.approx(4 / 7), 4, 7)
    assert (judge.human_agreement_decided, judge.human_decided_pairs, judge.human_decided_votes) == (0.75, 3, 4)
    carol_now = health["human/carol"]  # outside the set: compared with it like any judge
    assert (carol_now.human_agreement, carol_now.human_pairs, carol_now.human_votes) == (pytest.approx(1 / 3), 2, 3)
    assert carol_now.human_agreement_decided == pytest.approx(1 / 3)
    assert health["human/alice"].human_agreement is None
    assert two.voters == VoterAgreement(rate=pytest.approx(2 / 6), pairs=3, votes=6, decided=1.0, decided_pairs=1,
                                        decided_votes=2)

    alone = health_report(records, humans=["human/carol"])
    health = {h.judge: h for h in alone.judges}
    assert (health["llm"].human_agreement, health["llm"].human_votes) == (0.0, 2)
    assert (health["human/alice"].human_agreement, health["human/alice"].human_pairs) == (0.5, 2)
    assert alone.voters == VoterAgreement(None, 0, 0, None, 0, 0)  # one vote per pair: no couple
    assert judge_health(records, humans=["human/carol"]) == list(alone.judges)


# ---- the worker records `reminded` -------------------------------------------------------------


class RemindedOnFirst:
    """A judge whose reply needed the reminder whenever submission 1 is shown first."""

    async def compare(self, question: str, first: str, second: str) -> JudgeReply:
        return JudgeReply(winner=A, reason="r", raw="{}", reminded=first == "one")


def test_each_stored_call_records_whether_the_reminder_was_needed() -> None:
    a = Submission(1, "q", "Q?", "m1", "default", "one")
    b = Submission(2, "q", "Q?", "m2", "default", "two")
    calls, _ = asyncio.run(judge_pair(RemindedOnFirst(), a, b, OrderPolicy.BOTH, random.Random(0)))
    stored = calls_as_json(calls)
    assert sorted((c["first"], c["reminded"]) for c in stored) == [(1, True), (2, False)]


# ---- the store's records -------------------------------------------------------------------


def test_the_store_reads_records_lengths_and_parse_failed_matches(store: Store) -> None:
    ids = [i for i, _ in store.add_submissions([
        NewSubmission("q", "Q?", "m1", "default", "short"),
        NewSubmission("q", "Q?", "m2", "default", "much longer"),
        NewSubmission("q", "Q?", "m3", "default", "mid size"),
    ])]
    calls = [{"first": ids[1], "winner": "A", "reminded": True}, {"first": ids[0], "winner": "B", "reminded": False}]
    store.save_judgement(NewJudgement(key="k1", judge="anthropic/x", criteria="overall", template_version="t",
                                      a_id=ids[0], b_id=ids[1], a_hash=content_hash("short"), outcome=B,
                                      consistent=True, calls=calls))
    store.save_judgement(NewJudgement(key="k2", judge="human/crowd", criteria="overall", template_version="t",
                                      a_id=ids[1], b_id=ids[0], a_hash=content_hash("much longer"), outcome=A,
                                      consistent=True, calls=[{"first": ids[1], "winner": "A"}]))
    store.save_judgement(NewJudgement(key="k3", judge="anthropic/y", criteria="overall", template_version="t",
                                      a_id=ids[0], b_id=ids[2], a_hash=content_hash("short"), outcome=TIE,
                                      consistent=True, calls=[{"first": ids[0], "winner": "TIE"}]))
    tid = store.create_tournament("t", RunSpec(judge="anthropic/x"), [Pair(ids[0], ids[1]), Pair(ids[0], ids[2]),
                                                                   Pair(ids[1], ids[2])])
    other = store.create_tournament("u", RunSpec(judge="anthropic/y"), [Pair(ids[0], ids[1])])
    match = {(ctx.tournament_id, ctx.a.id, ctx.b.id): ctx.match_id for ctx in map(store.match_context, range(1, 5))}
    store.fail_match(match[tid, ids[0], ids[1]], "VerdictParseError: no verdict, even after the reminder", final=True)
    store.fail_match(match[tid, ids[0], ids[2]], "gave up after 3 attempts: TransientJudgeError: 500", final=True)
    # waiting for a retry, not failed
    store.fail_match(match[other, ids[0], ids[1]], "VerdictParseError: no verdict", final=False)
    assert store.get_tournament(tid).matches_failed == 2 and store.get_tournament(other).matches_failed == 0
    assert store.parse_failures() == {"anthropic/x": 1}
    assert store.parse_failures("anthropic/y") == {}

    records = {r.judge: r for r in store.health_records()}
    x = records["anthropic/x"]
    assert (x.a_id, x.b_id, x.outcome, x.a_length, x.b_length) == (ids[0], ids[1], B, 5, 11)
    assert [(c.first, c.winner, c.reminded) for c in x.calls] == [(ids[1], A, True), (ids[0], B, False)]
    assert records["human/crowd"].calls[0].reminded is None
    assert sorted(r.judge for r in store.health_records("anthropic/x")) == ["anthropic/x", "human/crowd"]

    (health,) = store.judge_health("anthropic/x")
    # (1 reminded + 1 parse-failed match) / (2 recorded calls + 1)
    assert health.parse_failure_rate == pytest.approx(2 / 3)
    assert (health.consistency, health.longer_wins_rate, health.human_agreement, health.human_pairs) == (1.0, 1.0, 1.0, 1)
    assert [h.judge for h in store.judge_health()] == ["anthropic/x", "anthropic/y", "human/crowd"]


def test_import_battles_human_files_votes_under_human(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    battles = tmp_path / "votes.csv"
    battles.write_text("id,prompt,winner,left,right\n1,p,left,m1,m2\n2,p,tie,m2,m1\n")
    assert main(["import", "battles", str(battles), "--human", "--data-dir", str(tmp_path)]) == 0
    assert main(["import", "battles", str(battles), "--judge", "llm", "--data-dir", str(tmp_path)]) == 0
    store = Store(f"sqlite:///{tmp_path / 'joust.db'}")
    health = {h.judge: h for h in store.judge_health()}
    store.close()
    assert list(health) == ["human/votes", "import/llm"]
    assert health["human/votes"].first_position_win_rate == 1.0
    llm = health["import/llm"]
    # the same two verdicts on the one pair: each meets both votes, and agrees with one
    assert (llm.human_agreement, llm.human_pairs, llm.human_votes) == (0.5, 1, 4)
    assert (llm.longer_wins_rate, llm.parse_failure_rate, llm.consistency) == (None, None, None)


# ---- LLMFAO: the crowd and two LLM judges on the same pairs ------------------------------------

FILES = {"human/crowd": "crowd-comparisons.csv", "import/gpt4": "gpt4-crowd-comparisons.csv",
         "import/gpt3": "gpt3-crowd-comparisons.csv"}


def read(name: str) -> list[dict[str, str]]:
    with (LLMFAO / name).open(newline="") as fh:
        return list(csv.DictReader(fh))


def verdict(row: dict[str, str]) -> str:
    """The winning model's name, or "tie"."""
    return row[row["winner"]] if row["winner"] in ("left", "right") else "tie"


def pair_of(row: dict[str, str]) -> tuple[str, frozenset[str]]:
    return row["prompt"], frozenset((row["left"], row["right"]))


@pytest.fixture(scope="module")
def llmfao(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not all((LLMFAO / name).exists() for name in FILES.values()):
        skip_required("shared-data", f"missing {LLMFAO} (the LLMFAO comparisons)")
    data_dir = tmp_path_factory.mktemp("llmfao")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("DATABASE_URL", raising=False)
        mp.delenv("JOUST_DATA_DIR", raising=False)
        assert main(["import", "battles", str(LLMFAO / FILES["human/crowd"]), "--human", "--judge", "crowd",
                     "--data-dir", str(data_dir)]) == 0
        for judge in ("gpt4", "gpt3"):
            assert main(["import", "battles", str(LLMFAO / FILES[f"import/{judge}"]), "--judge", judge,
                         "--data-dir", str(data_dir)]) == 0
    store = Store(f"sqlite:///{data_dir / 'joust.db'}")
    health = {h.judge: h for h in store.judge_health()}
    store.close()
    return health


def test_llmfao_first_position_win_rates_are_the_files_left_share(llmfao: dict) -> None:
    assert set(llmfao) == set(FILES)
    for judge, name in FILES.items():
        rows = read(name)
        counts = Counter(r["winner"] for r in rows)
        h = llmfao[judge]
        assert (h.calls, h.judgements) == (len(rows), len(rows))
        assert h.first_position_win_rate == counts["left"] / (counts["left"] + counts["right"])
        assert h.tie_rate == counts["tie"] / len(rows)
        assert (h.consistency, h.parse_failure_rate, h.longer_wins_rate) == (None, None, None)
    # GPT-4 prefers the right slot, GPT-3.5-turbo-instruct the left, the crowd barely either
    assert 0.40 < llmfao["import/gpt4"].first_position_win_rate < 0.5
    assert 0.65 < llmfao["import/gpt3"].first_position_win_rate < 0.75
    assert 0.5 < llmfao["human/crowd"].first_position_win_rate < 0.56


def test_llmfao_agreement_with_the_crowd_over_the_shared_pairs(llmfao: dict) -> None:
    crowd = read(FILES["human/crowd"])
    votes: dict[tuple[str, frozenset[str]], Counter[str]] = defaultdict(Counter)
    for row in crowd:
        votes[pair_of(row)][verdict(row)] += 1
    for judge in ("import/gpt4", "import/gpt3"):
        rows = read(FILES[judge])
        compared = [r for r in rows if pair_of(r) in votes]
        agree = sum(votes[pair_of(r)][verdict(r)] for r in compared)
        total = sum(sum(votes[pair_of(r)].values()) for r in compared)
        h = llmfao[judge]
        assert (h.human_pairs, h.human_votes) == (len({pair_of(r) for r in compared}), total)
        assert h.human_pairs == len(votes) == 2139 and total == len(crowd)
        assert h.human_agreement == agree / total
        assert 0.3 < h.human_agreement < 0.5  # the crowd says tie 39% of the time, the judges rarely
    assert llmfao["import/gpt4"].human_agreement > llmfao["import/gpt3"].human_agreement
    assert llmfao["human/crowd"].human_agreement is None
