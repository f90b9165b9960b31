"""The seams harness's surfaces: one store served by a real uvicorn server, read through each
surface that shows a figure, each figure brought to one shape (a dict per row, None for no number)
so the harness can set them side by side: the HTTP API, the page (parsed as a person reads it,
`tests/page_text.py`), the Python client (`joust.Client` over the socket), the CLI over HTTP
(`joust board`, `joust effects`, `joust judges`, in this process through `service.cli.main`) and
the export (`joust export board` and `joust export judgements`, on the data dir's database)."""
from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import httpx

from joust import Client
from service.cli import main
from tests.page_text import tables

BOARD_FIELDS = ("player", "component", "rank", "rating", "ci_low", "ci_high", "wins", "losses", "ties", "matches",
                "win_rate")


def plain(value: Any) -> Any:
    """A cell as JSON has it: NaN, None and pandas' NA are None; numpy scalars are Python's."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        return plain(value.item())
    return None if str(value) == "<NA>" else value


class Surfaces:
    """Every surface of the joust at `url` (its data dir `data_dir`, for the export)."""

    def __init__(self, url: str, data_dir: Path, http: httpx.Client | None = None) -> None:
        """`http`: the API through this client (a TestClient) rather than a new one to `url`."""
        self.url, self.data_dir = url.rstrip("/"), data_dir
        self.http = http or httpx.Client(base_url=self.url, timeout=60)
        self.client = Client(self.url, timeout=60)

    def close(self) -> None:
        self.http.close()
        self.client.close()

    def __enter__(self) -> Surfaces:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def api(self, path: str, **params: Any) -> dict[str, Any]:
        response = self.http.get(path, params={k: v for k, v in params.items() if v is not None})
        assert response.status_code == 200, (path, params, response.text)
        return response.json()

    def page(self, path: str, **params: Any) -> str:
        response = self.http.get(path, params={k: v for k, v in params.items() if v is not None})
        assert response.status_code == 200, (path, params, response.text[:500])
        return response.text

    def cli(self, *argv: str) -> tuple[str, str]:
        """A `joust` command run in this process; (stdout, stderr); it must exit 0."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*argv])
        assert code == 0, (argv, code, err.getvalue())
        return out.getvalue(), err.getvalue()

    # ---- boards, each surface's rows by player ------------------------------------------------

    def board_api(self, **params: Any) -> dict[str, Any]:
        return self.api("/api/leaderboard", **params)

    def board_client(self, by: str, **params: Any) -> list[dict[str, Any]]:
        frame = self.client.leaderboard(by, **params)
        return [{k: plain(v) for k, v in row.items() if k != "flags"} for row in frame.to_dict("records")]

    def board_cli(self, by: str, *, judge: str, turn: int | None = None, votes: str = "each",
                  intervals: str = "closed") -> list[dict[str, Any]]:
        argv = ["board", "--url", self.url, "--by", by, "--judge", judge, "--votes", votes, "--intervals", intervals,
                "--format", "json"] + (["--turn", str(turn)] if turn else [])
        out, _ = self.cli(*argv)
        return json.loads(out) if out.strip() else []

    def board_export(self, by: str, *, judge: str, turn: int | None = None, votes: str = "each") -> list[dict]:
        target = self.data_dir.parent / "board.jsonl"
        self.cli("export", "board", "--data-dir", str(self.data_dir), "--by", by, "--judge", judge, "--votes", votes,
                 "--format", "jsonl", "-o", str(target), *(["--turn", str(turn)] if turn else []))
        return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]

    def board_page(self, by: str, judge: str) -> tuple[list[list[str]], list[dict[str, Any]]]:
        """The page of `judge`'s board at `by`: the board table's player rows (a group's heading
        row left out) as cell texts, and the effects tables' rows as {kind, name, component,
        cells} (`component` 1 when the page shows one group, so names no group)."""
        text = self.page("/", judge=judge, by={"model+scenario": "system"}.get(by, by))
        found = tables(text)
        label = next(name for name in found if name.endswith(" board"))
        effects = []
        for name, rows in found.items():
            caption, _, group = name.partition(" in group ")
            kind = {"Models": "model", "Scenarios": "scenario"}.get(caption.removesuffix(" effects"))
            if kind is None:
                continue
            effects += [{"kind": kind, "name": row[0], "component": int(group.removesuffix(" effects") or 1),
                         "cells": row[1:]} for row in rows if len(row) == 3]
        return [row for row in found[label] if len(row) > 2], effects

    def export_judgements(self) -> Path:
        """`joust export judgements` of every judge, as JSON lines: what a data dir re-imports."""
        target = self.data_dir.parent / "judgements.jsonl"
        self.cli("export", "judgements", "--data-dir", str(self.data_dir), "--format", "jsonl", "-o", str(target))
        return target

    # ---- effects and judge health ---------------------------------------------------------------

    def effects_client(self, **params: Any) -> list[dict[str, Any]]:
        return [{k: plain(v) for k, v in row.items()} for row in self.client.effects(**params).to_dict("records")]

    def effects_cli(self, *, judge: str, turn: int | None = None, votes: str = "each") -> list[dict[str, Any]]:
        out, _ = self.cli("effects", "--url", self.url, "--judge", judge, "--votes", votes, "--format", "json",
                          *(["--turn", str(turn)] if turn else []))
        return json.loads(out) if out.strip() else []

    def judges_client(self, turn: int | None = None) -> list[dict[str, Any]]:
        return [{k: plain(v) for k, v in row.items()} for row in self.client.judges(turn=turn).to_dict("records")]

    def judges_cli(self, turn: int | None = None) -> list[dict[str, Any]]:
        out, _ = self.cli("judges", "--url", self.url, "--format", "json", *(["--turn", str(turn)] if turn else []))
        return json.loads(out) if out.strip() else []

    def judges_page(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Each judge's row of the health tables, by judge; and the agreement between judges,
        by couple ("a · b"), as (alpha, pairs)."""
        found = tables(self.page("/judges"))
        judges = {row[0]: row for label in ("LLM and imported judges", "Human voters")
                  for row in found.get(label, []) if len(row) > 2}
        between = next((rows for label, rows in found.items() if label.startswith("Agreement between judges")), [])
        return judges, {row[0]: row[1:] for row in between}
