"""JOUST_LOG_FORMAT=json: every line a JSON object; the API's lines carry the request's id (the
client's X-Request-ID, echoed, or one made), a worker's the match and tournament it judges."""
from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest

from service.config import Settings, SettingsError
from service.ops.logs import JsonFormatter
from service.ops.redis_server import free_port
from service.store import Store
from tests.worker_fixtures import start, submit, work
from workers import logcontext


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Message]:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.headers  # names compared without case


def test_the_api_writes_json_lines_with_the_request_id(tmp_path: Path, redis_url: str) -> None:
    port = free_port()
    env = {**os.environ, "JOUST_LOG_FORMAT": "json", "REDIS_URL": redis_url, "JOUST_API_KEY": "k",
           "JOUST_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "service.cli", "api", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):  # until it listens (bounded)
            try:
                get(f"{base}/api/health")
                break
            except OSError:
                time.sleep(0.05)
        status, headers = get(f"{base}/api/submissions", {"X-Request-ID": "trace-123"})
        assert status == 200 and headers["X-Request-ID"] == "trace-123"
        _, made = get(f"{base}/api/tournaments", {"X-Request-ID": "bad id with spaces"})
        generated = made["X-Request-ID"]
        assert generated and generated != "bad id with spaces"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    lines = [json.loads(line) for line in err.decode().splitlines() if line.strip()]  # every line is JSON
    assert lines and all({"time", "level", "logger", "message"} <= set(x) for x in lines)
    mine = [x for x in lines if x.get("request_id") == "trace-123"]
    assert mine and all("/api/submissions" in x["message"] for x in mine)
    assert any(x.get("request_id") == generated and "/api/tournaments" in x["message"] for x in lines)


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """Root's records as JSON lines in a buffer, with the worker's match ids (as `joust worker`
    with JOUST_LOG_FORMAT=json sets them up)."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    logcontext.install()
    level = root.level
    root.setLevel(logging.DEBUG)
    yield buffer
    root.setLevel(level)
    root.removeHandler(handler)


def test_a_worker_s_lines_carry_the_match_and_tournament(captured: io.StringIO, db: Store, env: Settings) -> None:
    submit(db, questions=2)
    tid = start(db, env)
    work(env, db, tid)
    lines = [json.loads(line) for line in captured.getvalue().splitlines()]
    judged = [x for x in lines if x["logger"] == "workers.engine" and x["message"].endswith(": judged")]
    assert len(judged) == 6
    for line in judged:
        assert line["message"] == f"match {line['match_id']}: judged"
        assert line["tournament_id"] == tid
    assert len({x["match_id"] for x in judged}) == 6


def test_the_log_format_is_checked() -> None:
    assert Settings.from_env({"JOUST_LOG_FORMAT": "JSON"}).log_format == "json"
    assert Settings.from_env({}).log_format == "text"
    with pytest.raises(SettingsError, match="JOUST_LOG_FORMAT"):
        Settings.from_env({"JOUST_LOG_FORMAT": "xml"})
    assert Settings.from_env({"JOUST_PRIVATE": "1"}).private
    with pytest.raises(SettingsError, match="JOUST_PRIVATE"):
        Settings.from_env({"JOUST_PRIVATE": "maybe"})
