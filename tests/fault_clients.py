"""A clients thread for fault-injection runs: it asks the API a round of ordinary requests over
and over (health, the run's status and judgements, the board, a re-sent submission, a missing
run) and records every answer in the run's `History`, for the checker's 5xx rule. The API's URL
is read before each request, so a schedule that restarts the API on another port points the
clients there (`Clients.url`)."""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from tests.fault_history import ApiAnswer, History

STEP_S = 0.05  # between two requests: a few per second beside the run's own work
TIMEOUT_S = 5.0  # an API frozen or waiting on a frozen part: no answer, counted as unreachable


class Clients:
    """Start it, set `tournament_id` once there is one, stop it at the end."""

    def __init__(self, history: History, url: str, key: str, submission: list[dict]) -> None:
        self.history = history
        self.url = url
        self.key = key
        self.submission = submission
        self.tournament_id: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-clients", daemon=True)

    def start(self) -> Clients:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=TIMEOUT_S * 2)

    def _round(self) -> list[tuple[str, str, Any]]:
        tid = self.tournament_id
        round_ = [("GET", "/api/health", None), ("POST", "/api/submissions", self.submission),
                  ("GET", "/api/leaderboard", None), ("GET", "/api/tournaments/999999", None)]
        if tid is not None:
            round_ += [("GET", f"/api/tournaments/{tid}", None), ("GET", f"/api/tournaments/{tid}/judgements", None)]
        return round_

    def _run(self) -> None:
        while not self._stop.is_set():
            for method, path, body in self._round():
                if self._stop.is_set():
                    return
                status, answer = self.ask(method, path, body)
                self.history.answers.append(ApiAnswer(time.monotonic(), method, path, status, answer))
                self._stop.wait(STEP_S)

    def ask(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(status, JSON body or text); status 0 when no answer came."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", f"Bearer {self.key}")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                status, raw = response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read().decode(errors="replace")
        except (urllib.error.URLError, OSError):
            return 0, None
        try:
            return status, json.loads(raw)
        except json.JSONDecodeError:
            return status, raw
