"""`Client`: joust's HTTP API from Python, pandas in and out.

Synchronous on purpose: a notebook or a script submits, starts a run and waits for it, one call
after another. (An async twin would double every method and its tests for callers who can
already run these calls in `asyncio.to_thread`.)

Every call either returns a typed value or frame, or raises a `JoustError` subclass carrying the
API's status, message and details (see `joust.errors`). Wherever a tournament is taken, its id
and the `Tournament` value `tournament()` or `status()` returned both work. The clock and the
sleep `wait` uses are passed in, so a test can run a wait without waiting.
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Integral
from typing import TYPE_CHECKING, Any, TextIO

import httpx

from .errors import JoustError, Unreachable, WaitTimeout, error_for
from .humans import Humans, packed
from .progress import Bar, Progress
from .types import DryRun, Judgement, Submission, SubmissionRef, Tournament, Verdict, Vote
from .wire import as_list, json_default, tls

# pandas and numpy (.frames) are imported by the calls that use them: `import joust` stays light for the CLI.
if TYPE_CHECKING:
    import pandas as pd
    from typing_extensions import Self

__all__ = ["Client", "TournamentRef"]

TournamentRef = int | Tournament
"""A tournament as the client takes it: its id, or the value the client returned for it."""

PAGE = 1000  # rows asked for per page of a list: the API's default `limit`


def tournament_id(tournament: TournamentRef) -> int:
    """The id of a tournament given by id or as a `Tournament`."""
    if isinstance(tournament, Tournament):
        return tournament.id
    if isinstance(tournament, Integral) and not isinstance(tournament, bool):
        return int(tournament)
    raise TypeError(f"a tournament is its id or the Tournament the client returned, not {type(tournament).__name__}"
                    + (" (a dry run creates no tournament)" if isinstance(tournament, DryRun) else ""))


def _frames() -> Any:
    """joust.frames, imported on first use: it needs pandas, which `import joust` does not load."""
    from . import frames

    return frames


class Client:
    """joust's API at `url` (e.g. "http://127.0.0.1:8000"). `api_key` is needed for writes
    (submit, tournament, vote): the server's key, `<data-dir>/api_key` under `joust up`.
    `http` is an `httpx.Client` to send requests through (then `timeout` is its own, and the
    caller closes it); otherwise the client opens its own, closed by `close()` or `with`.

    `submit` sends at most `batch_size` rows and about `batch_bytes` of JSON per request; when the
    server's limits are lower (`JOUST_MAX_BATCH`, `JOUST_MAX_BODY_BYTES`: a 413) it halves the
    batch until the server takes it, and keeps that size for the rest of the rows. Lists
    (`submissions`, `judgements`) are read `page_size` rows a request, following the API's `next`
    links until the last page."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        http: httpx.Client | None = None,
        batch_size: int = 1000,
        batch_bytes: int = 4 * 1024 * 1024,
        page_size: int = PAGE,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch_size < 1 or batch_bytes < 1 or page_size < 1:
            raise ValueError("batch_size, batch_bytes and page_size must be at least 1")
        self.url = url.rstrip("/")
        self.batch_size, self.batch_bytes, self.page_size = batch_size, batch_bytes, page_size
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._owned = http is None
        self._http = http if http is not None else httpx.Client(timeout=timeout, verify=tls(self.url))
        self._clock, self._sleep = clock, sleep

    def __repr__(self) -> str:
        return f"Client({self.url!r}, api_key={'set' if self._headers else None})"

    def close(self) -> None:
        """Close the HTTP client this client opened (one passed in stays open)."""
        if self._owned:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the wire ---------------------------------------------------------------------------

    def _request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                 body: Any = None, content: bytes | None = None) -> Any:
        """Send one request; its JSON answer, or the JoustError for an error answer."""
        headers = dict(self._headers)
        if body is not None:
            content = json.dumps(body, ensure_ascii=False, default=json_default).encode("utf-8")
        if content is not None:
            headers["Content-Type"] = "application/json"
        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(method, self.url + path, params=query or None, content=content,
                                          headers=headers)
        except httpx.TransportError as exc:
            raise Unreachable(None, f"{method} {self.url}{path}: {type(exc).__name__}: {exc}") from exc
        try:
            answer = response.json() if response.content else None
        except ValueError:
            answer = None
        if response.status_code >= 400:
            fallback = response.text.strip()[:500] or response.reason_phrase or "no message"
            raise error_for(response.status_code, answer, fallback)
        return answer

    def _pages(self, path: str, key: str, params: Mapping[str, Any] | None = None,
               most: int | None = None) -> tuple[list[Any], dict]:
        """Every row of a paged list (or its first `most`): `key`'s rows of each page, following
        `next` until it is null, and the last page's other fields. Only `next`'s query is taken
        (the offset the server chose): the path and host stay this client's, so a proxy in
        between that rewrites them changes nothing."""
        size = self.page_size if most is None else max(1, min(self.page_size, most))
        query: dict[str, Any] = {**(params or {}), "limit": size}
        rows: list[Any] = []
        while True:
            page = self._request("GET", path, params=query)
            rows.extend(page[key])
            following = page.get("next")
            if not following or (most is not None and len(rows) >= most):
                return rows[:most], {k: v for k, v in page.items() if k not in (key, "next")}
            query = dict(httpx.URL(following).params.multi_items())

    # ---- submissions ------------------------------------------------------------------------

    def submit(self, rows: pd.DataFrame | Mapping[str, Any] | Iterable[Mapping[str, Any]], *,
               metadata: Sequence[str] = (), reference: str | None = None) -> list[int]:
        """Store generator outputs: a DataFrame with columns question, model, output and
        optionally scenario, question_id, reference, metadata (or records with those keys); an
        output may be a conversation, a list of {"role": "user"|"assistant", "content"} turns
        (then question may be left out: its first user turn). `reference` states one reference
        answer for every row that has none (rows of one question: a question has one). The columns
        named in `metadata` are stored in each row's metadata, a column `id` is ignored (so
        `df["id"] = client.submit(df)` can be sent again), and any other column is refused by the
        API by name (Invalid). Returns the submission ids in row order. Idempotent: the same rows
        again return the same ids and store nothing new. A row whose key (question_id, model, scenario) holds a different
        output raises Conflict and its batch stores nothing; batches sent before it stay stored,
        so fix the row and submit everything again. An error raised for a batch has `rows`, the
        rows it held: the API's `submissions[i]` is row `rows[i]`."""
        return [ref.id for ref in self.submit_refs(rows, metadata=metadata, reference=reference)]

    def submit_refs(self, rows: pd.DataFrame | Mapping[str, Any] | Iterable[Mapping[str, Any]], *,
                    metadata: Sequence[str] = (), reference: str | None = None) -> list[SubmissionRef]:
        """`submit`, with each row's `created` flag beside its id (False: the row was stored already)."""
        records = _frames().records_of(rows, metadata)
        if reference is not None:
            records = [{"reference": reference, **r} for r in records]
        encoded = [json.dumps(r, ensure_ascii=False, default=json_default).encode("utf-8") for r in records]
        refs: list[SubmissionRef] = []
        size, start = self.batch_size, 0
        while start < len(records):
            end, length = start + 1, len(encoded[start]) + 2
            while end < len(records) and end - start < size and length + len(encoded[end]) + 1 <= self.batch_bytes:
                length += len(encoded[end]) + 1
                end += 1
            try:
                answer = self._request("POST", "/api/submissions", content=b"[" + b",".join(encoded[start:end]) + b"]")
            except JoustError as exc:
                if exc.status == 413 and end - start > 1:
                    size = (end - start) // 2  # the server's limit is lower: halve until it fits
                    continue
                exc.rows = range(start, end)
                raise
            refs.extend(SubmissionRef(int(ref["id"]), bool(ref.get("created", False))) for ref in answer["submissions"])
            start = end
        return refs

    def submissions(self, *, model: str | None = None, scenario: str | None = None,
                    question_id: str | None = None) -> pd.DataFrame:
        """Stored submissions (all pages), in id order: id, question_id, question, model,
        scenario, output, metadata, created_at (UTC)."""
        rows, _ = self._pages("/api/submissions", "submissions",
                              {"model": model, "scenario": scenario, "question_id": question_id})
        return _frames().submissions_frame(rows)

    def submission(self, submission_id: int) -> Submission:
        """One stored submission with its output (`GET /api/submissions/{id}`)."""
        return Submission.from_json(self._request("GET", f"/api/submissions/{int(submission_id)}"))

    # ---- tournaments ------------------------------------------------------------------------

    def tournament(
        self,
        *,
        name: str | None = None,
        mode: str | None = None,
        judge: str | None = None,
        order: str | None = None,
        criteria: str | None = None,
        models: Iterable[str] | None = None,
        scenarios: Iterable[str] | None = None,
        questions: Iterable[str] | None = None,
        opponents: int | None = None,
        seed: int | None = None,
        budget: float | None = None,
        rpm: float | None = None,
        tpm: float | None = None,
        delivery: str | None = None,
        schedule: str | None = None,
        level: str | None = None,
        round_size: int | None = None,
        max_calls: int | None = None,
        target_ci_width: float | None = None,
        anchors: Iterable[str] | None = None,
        baseline: str | None = None,
        reference_model: str | None = None,
        reference_scenario: str | None = None,
        judges: Iterable[str] | None = None,
        aggregation: str | None = None,
        panel: str | None = None,
        dry_run: bool = False,
    ) -> Tournament | DryRun:
        """Start a tournament (`POST /api/tournaments`) and return it as it stands, or with
        `dry_run=True` return its price (a `DryRun`) and create nothing. Options left None take
        the server's defaults: mode "round_robin" ("sampled" with `opponents` and `seed`,
        "adaptive" with `round_size`, `max_calls`, `target_ci_width`, "anchored" with `anchors`,
        "baseline" with `baseline`: every other player against that one; `level` for those three),
        the server's judge, order "both", criteria "overall"; `models`,
        `scenarios`, `questions` narrow the field; `budget` in USD, `rpm`/`tpm` this run's rate
        limits, `delivery` "live" or "batch", `schedule` a five-field cron (UTC) to recur;
        `reference_model` (under `reference_scenario`) the model whose output on each question is
        the judge's reference answer; `judges` a judge panel instead of one judge (`aggregation`
        "majority" or "separate", `panel` its name)."""
        body = {
            "name": name, "mode": mode, "judge": judge, "order": order, "criteria": criteria,
            "models": as_list(models), "scenarios": as_list(scenarios), "questions": as_list(questions),
            "opponents": opponents, "seed": seed, "budget": budget, "rpm": rpm, "tpm": tpm, "delivery": delivery,
            "schedule": schedule, "level": level, "round_size": round_size, "max_calls": max_calls,
            "target_ci_width": target_ci_width, "anchors": as_list(anchors), "baseline": baseline,
            "reference_model": reference_model, "reference_scenario": reference_scenario,
            "judges": as_list(judges), "aggregation": aggregation, "panel": panel,
        }
        body = {k: v for k, v in body.items() if v is not None}
        if dry_run:
            return DryRun.from_json(self._request("POST", "/api/tournaments", params={"dry_run": "true"}, body=body))
        created = self._request("POST", "/api/tournaments", body=body)
        view = self._request("GET", f"/api/tournaments/{int(created['id'])}")
        return Tournament.from_json(view, queued=created.get("queued"))

    def status(self, tournament: TournamentRef) -> Tournament:
        """The tournament as it stands now (`GET /api/tournaments/{id}`)."""
        return Tournament.from_json(self._request("GET", f"/api/tournaments/{tournament_id(tournament)}"))

    def tournaments(self) -> list[Tournament]:
        """Every tournament (all pages, following `next`), newest first (`GET /api/tournaments`)."""
        return [Tournament.from_json(t) for t in self._pages("/api/tournaments", "tournaments")[0]]

    def cancel(self, tournament: TournamentRef) -> Tournament:
        """Cancel its unjudged matches, schedule and runs in flight; the tournament then (`extra["stopped"]`)."""
        return Tournament.from_json(self._request("POST", f"/api/tournaments/{tournament_id(tournament)}/cancel"))

    def retry(self, tournament: TournamentRef) -> Tournament:
        """Hand a finished run's failed matches out again (Conflict while it runs or when nothing
        failed); the tournament as it stands then, with `extra["retried"]` the matches handed out."""
        answer = self._request("POST", f"/api/tournaments/{tournament_id(tournament)}/retry")
        return Tournament.from_json({**self._request("GET", f"/api/tournaments/{answer['id']}"),
                                     "retried": answer.get("retried")})

    def wait(self, tournament: TournamentRef, progress: bool | TextIO = True, poll: float = 1.0,
             timeout: float | None = None) -> Tournament:
        """Poll every `poll` seconds until the tournament is done, failed or cancelled, and
        return it then. With `progress` (True: stderr, or a file) draw a bar: matches done, failed
        and left, calls per minute (estimated; a batch run: its batches pending) and the spend.
        After `timeout` seconds raise WaitTimeout (the run goes on)."""
        tid = tournament_id(tournament)
        file = (sys.stderr if progress is True else progress) if progress else None
        bar = Bar(tid, file) if file is not None else None
        try:
            since_s = self._clock()
            since = now = self.status(tid)
            now_s = since_s
            while True:
                if bar is not None:
                    bar.show(Progress.between(since, since_s, now, now_s))
                if now.finished:
                    return now
                left = None if timeout is None else timeout - (now_s - since_s)
                if left is not None and left <= 0:
                    raise WaitTimeout(f"tournament {tid} is still {now.status.value} after {timeout:g} s "
                                      f"({now.matches_pending} matches left)", now)
                self._sleep(poll if left is None else min(poll, left))
                now, now_s = self.status(tid), self._clock()
        finally:
            if bar is not None:
                bar.close()

    def judgements(self, tournament: TournamentRef) -> pd.DataFrame:
        """The tournament's judgements (all pages), one row per judged match, calls flattened
        (`call_1_first`, `call_1_winner`, `call_1_reason`, ..., `call_2_...`; see
        `joust.frames.judgements_frame`)."""
        rows, rest = self._pages(f"/api/tournaments/{tournament_id(tournament)}/judgements", "judgements")
        return _frames().judgements_frame({**rest, "judgements": rows})

    def judgement(self, judgement_id: int, *, outputs: bool = False) -> Judgement:
        """One judgement (`GET /api/judgements/{id}`): the question, both sides, the outcome,
        whether the orders agreed, every call with its reason; with `outputs`, both outputs
        (`a.output`, `b.output`)."""
        return Judgement.from_json(self._request("GET", f"/api/judgements/{int(judgement_id)}",
                                                 params={"outputs": "true"} if outputs else None))

    def find_judgements(self, *, judge: str | None = None, level: str = "model", player: str | None = None,
                        opponent: str | None = None, question_id: str | None = None, filter: str | None = None,
                        tournament: TournamentRef | None = None, limit: int | None = None) -> pd.DataFrame:
        """One judge's judgements, newest first (`GET /api/judgements`; all pages, or the first
        `limit` rows): the judgements behind a board's row (`player` at `level`: "model",
        "scenario" or "model+scenario") or a matrix cell (`player` and `opponent`), narrowed by
        `question_id`, `filter` ("inconsistent", "ties", "decided") and `tournament`. `judge`
        left None: the board's judge, as the server chooses it. See `joust.frames.judgement_list_frame`
        for the columns; `frame.attrs` says whose judgements they are and why."""
        if limit is not None and limit < 1:
            raise ValueError("limit must be at least 1 (None: every row)")
        params = {"judge": judge, "level": level, "player": player, "opponent": opponent,
                  "question_id": question_id, "filter": filter,
                  "tournament": tournament_id(tournament) if tournament is not None else None}
        rows, rest = self._pages("/api/judgements", "judgements", params, most=limit)
        return _frames().judgement_list_frame(rows, rest)

    # ---- boards and judges ------------------------------------------------------------------

    def leaderboard(self, by: str = "model", *, judge: str | None = None, tournament: TournamentRef | None = None,
                    dimension: str | None = None, ties: str = "half", turn: int | None = None, votes: str = "each",
                    intervals: str = "closed") -> pd.DataFrame:
        """The board (`GET /api/leaderboard`), best first: player, rating, ci_low, ci_high, rank, rank_low, rank_high,
        elo, wins, losses, ties, matches, win_rate, ci_missing (why a row has no interval), flags (tuples of
        `Flag(kind, evidence)`); `by` "model", "scenario" or "model+scenario"; `ties` "half" or "davidson"; `turn` one
        turn only; `votes` "majority": each pair once, by its majority; `intervals` "closed" or "bootstrap" (resampled
        questions, seeded); the board's metadata (judge, revision, tie_parameter...) in `frame.attrs`."""
        params = {"by": by, "judge": judge, "dimension": dimension, "ties": ties, "turn": turn, "votes": votes,
                  "intervals": intervals, "tournament": tournament_id(tournament) if tournament is not None else None}
        return _frames().leaderboard_frame(self._request("GET", "/api/leaderboard", params=params))

    def effects(self, *, judge: str | None = None, tournament: TournamentRef | None = None, turn: int | None = None,
                votes: str = "each") -> pd.DataFrame:
        """Model and scenario effects (`GET /api/leaderboard/effects`), one row per effect: kind ("model" or
        "scenario"), name, component (its group of systems), effect, ci_low, ci_high in Elo points (NaN where
        `bounded` is False: the verdicts do not bound it); groups, judge and the rest in `frame.attrs`."""
        params = {"judge": judge, "turn": turn, "votes": votes,
                  "tournament": tournament_id(tournament) if tournament is not None else None}
        return _frames().effects_frame(self._request("GET", "/api/leaderboard/effects", params=params))

    def winrate(self, baseline: str | None = None, by: str | None = None, *, judge: str | None = None,
                tournament: TournamentRef | None = None) -> pd.DataFrame:
        """Every player's win rate against `baseline` (`GET /api/leaderboard/winrate`): AlpacaEval's
        win_rate, standard_error, n_wins, n_wins_base, n_draws, n_total, and lc_win_rate, the
        length-controlled win rate (NaN with `lc_unavailable` saying why when outputs are missing);
        baseline, by, judge and tournament in `frame.attrs`. `by` defaults to "model"; for a
        baseline tournament (`tournament(mode="baseline", baseline=...)`) `baseline` and `by`
        default to its own. An unknown baseline raises the API's 404."""
        params = {"baseline": baseline, "by": by, "judge": judge,
                  "tournament": tournament_id(tournament) if tournament is not None else None}
        return _frames().winrate_frame(self._request("GET", "/api/leaderboard/winrate", params=params))

    def judges(self, judge: str | None = None, *, humans: Humans = None, turn: int | None = None) -> pd.DataFrame:
        """Judge health (`GET /api/judges`), one row per judge: consistency, first-position win rate, tie rate,
        parse-failure rate, longer-wins rate, agreement with the `humans` (names or patterns: "human/expert_*")
        as a share and as Krippendorff's alpha, on `turn` only if given; alpha between judges in `frame.attrs`."""
        params = {"judge": judge, "humans": packed(humans), "turn": turn}
        return _frames().judges_frame(self._request("GET", "/api/judges", params=params))

    def vote(self, a: int, b: int, winner: Verdict | str, voter: str, first: int | None = None) -> Vote:
        """Record a person's vote on submissions `a` and `b` (`POST /api/votes`): `winner` is
        "A" (a is better), "B", "TIE" or "BOTH_BAD", relative to a and b; `first`, when known, is
        the submission shown first. The same vote again returns the stored one (`created` False)."""
        body = {"a": a, "b": b, "winner": winner.value if isinstance(winner, Verdict) else winner, "voter": voter,
                **({"first": first} if first is not None else {})}
        answer = self._request("POST", "/api/votes", body=body)
        return Vote.from_json(answer["votes"][0] if "votes" in answer else answer)
