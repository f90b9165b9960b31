"""The board's win rate and its online Elo on every surface, over a real app and store (SQLite,
then PostgreSQL): `win_rate` is one figure, the same on the API's rows, `joust export board`, the
client's frame, `joust board` and the page; the online Elo, which can rank the fitted leader last,
is no column of the headline table but a folded detail that says why it disagrees.

The planted verdicts: x beats y and z on seven questions, y and z split six, then x loses to
both on four more. The fit ranks x first (14 of its 22 games won); online Elo, replaying the
verdicts in order, ends x last, since its losses came last."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from joust import Client
from leaderboard.types import Winner
from service.cli import main
from service.config import Settings
from service.store.imports import ImportedJudgement
from tests.api_fixtures import store_of
from tests.page_text import heads, rows_of, settled, visible
from tests.serving import serving

KEY = "winrate-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
JUDGE = "import/planted"
BOARD = "Models board"
ELO = "Online Elo, order-dependent"


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(api_key=KEY)


def plant(client: TestClient) -> None:
    """x, y and z answer 17 questions; the verdicts, in the order the module docstring gives."""
    order: list[tuple[str, str, str, Winner]] = []
    order += [(f"w{i}", "x", other, Winner.A) for i in range(7) for other in ("y", "z")]
    order += [(f"s{i}", "y", "z", Winner.A if i % 2 == 0 else Winner.B) for i in range(6)]
    order += [(f"l{i}", "x", other, Winner.B) for i in range(4) for other in ("y", "z")]
    questions = sorted({q for q, *_ in order})
    batch = [{"question": f"text of {q}", "question_id": q, "model": m, "output": f"{m}'s answer to {q}"}
             for q in questions for m in "xyz"]
    response = client.post("/api/submissions", json=batch, headers=AUTH)
    assert response.status_code == 201, response.text
    ids = {(row["question_id"], row["model"]): made["id"] for row, made in zip(batch, response.json()["submissions"])}
    rows = [ImportedJudgement(f"k{n}", ids[(q, a)], ids[(q, b)], w, [{"first": ids[(q, a)], "winner": w.value}])
            for n, (q, a, b, w) in enumerate(order)]
    store_of(client).import_judgements(name="planted", source="test", judge=JUDGE, criteria="overall", rows=rows)


def api_rows(client: TestClient) -> list[dict]:
    response = client.get("/api/leaderboard", params={"judge": JUDGE})
    assert response.status_code == 200, response.text
    return response.json()["rows"]


def test_the_premise_the_fitted_leader_is_last_by_online_elo(client: TestClient) -> None:
    plant(client)
    rows = api_rows(client)
    assert [r["player"] for r in rows][0] == "x"
    assert min(rows, key=lambda r: r["elo"])["player"] == "x"


def test_board_rows_carry_the_win_rate_the_export_client_and_cli_show(
        client: TestClient, api_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    plant(client)
    rows = api_rows(client)
    # one figure: (wins + half the ties) / matches of the row's own counts
    assert {r["player"]: r["win_rate"] for r in rows} == pytest.approx({"x": 14 / 22, "y": 7 / 17, "z": 7 / 17})
    for r in rows:
        assert r["win_rate"] == pytest.approx((r["wins"] + r["ties"] / 2) / r["matches"])

    # the export (the data dir's database, as `joust export` reads it)
    monkeypatch.setenv("DATABASE_URL", api_settings.resolved_database_url)
    out = tmp_path / "board.jsonl"
    assert main(["export", "board", "--judge", JUDGE, "--format", "jsonl", "-o", str(out),
                 "--data-dir", str(api_settings.data_dir)]) == 0
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(e["player"], e["win_rate"], e["elo"]) for e in exported] == [
        (r["player"], r["win_rate"], r["elo"]) for r in rows]

    # the client's frame
    frame = Client("http://testserver", KEY, http=client).leaderboard(judge=JUDGE)
    assert list(frame["win_rate"]) == [r["win_rate"] for r in rows]
    assert list(frame["elo"]) == [r["elo"] for r in rows]  # the online Elo stays a field of the data

    # `joust board`: the headline columns, as the page's
    capsys.readouterr()
    with serving(api_settings) as url:
        monkeypatch.setenv("JOUST_URL", url)
        assert main(["board", "--judge", JUDGE, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [s["player"] for s in shown] == [r["player"] for r in rows]
    assert [s["win_rate"] for s in shown] == pytest.approx([r["win_rate"] for r in rows], abs=1e-12)  # JSON's digits
    assert "elo" not in shown[0]


def test_the_page_shows_the_win_rate_and_folds_the_online_elo_away_with_its_reason(client: TestClient) -> None:
    plant(client)
    rows = api_rows(client)
    page = settled(client, f"/?judge={JUDGE}").text
    head = heads(page)[BOARD]
    assert "Win rate" in head and not any("Elo" in h for h in head)  # no order-dependent column in the ranking
    shown = {r[1].split()[0]: r for r in rows_of(page, BOARD) if len(r) > 2}
    assert {p: shown[p][head.index("Win rate")] for p in shown} == {
        r["player"]: f"{100 * r['win_rate']:.1f}%" for r in rows}

    # the online Elo is in a folded detail, each player's figure beside its rank both ways
    elo_rank = {r["player"]: 1 + sum(o["elo"] > r["elo"] for o in rows) for r in rows}
    assert elo_rank["x"] == 3
    assert heads(page)[ELO] == ["Player", "Rank by rating", "Online Elo", "Rank by online Elo"]
    assert {e[0]: (int(e[1]), e[2], int(e[3])) for e in rows_of(page, ELO)} == {
        r["player"]: (r["rank"], f"{r['elo']:.0f}", elo_rank[r["player"]]) for r in rows}
    moved = sum(r["rank"] != elo_rank[r["player"]] for r in rows)
    text = visible(page)
    assert f"Online Elo, order-dependent: it ranks {moved} of 3 players otherwise than the rating" in text
    assert "in the order the verdicts arrived" in text and "the last verdicts weigh most" in text
