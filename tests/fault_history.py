"""The history of a fault-injection run, and a checker over it (Jepsen's split: the schedule
records, a pure function judges).

Three sources meet here, each read once the run is over:

- `History`: what the schedule did (each fault and its heal, with the calls the provider had in
  flight at that moment, on `time.monotonic()`) and every API answer the clients thread saw
  during it.
- `FinalState`: the store's last word on the tournament (`read_state`): each match's status,
  judgement, failed calls and error; the judgements and the calls each holds.
- `Paid`: the fake provider's request log (`paid_calls`): every request it answered and whether
  the client could read it (`Received.delivered`: a "timeout" fault is answered after its client
  gave up, so it was never paid for a reply anyone read).

`check` is pure: no I/O, no clock. Its `Verdict` counts

- `lost`: matches not done, or done without a judgement, or failed without a reason. A match
  that failed with its reason (a provider storm outlasting its retries) is an outcome, not a
  loss, and is listed in `failed`;
- `duplicated`: matches with more than one judgement stored for them, and judgements any two
  matches of the run share (a round robin has no twins);
- `paid_twice`: deliveries of a prompt beyond its first (the same system prompt and messages to
  the same model: the same call asked again);
- `unseen_twice`: `paid_twice` less the failed calls the store charged (a counted failed attempt
  is a call the next attempt asks again): must be at most `in_flight_at_faults`, the calls in
  flight when a process fault struck (kills, freezes, cut-offs, restarts);
- `uncounted`: paid calls that no judgement holds and no failed-call count charges: only the
  replies that died with a killed process may be so (at most the calls in flight at the kills);
  below zero, a call was charged twice;
- `bad_answers`: API answers 500-599 other than a 503 that says why (an `error` text, or the
  health view naming the part that is down or full), and a 507 that says which part is out of
  space, where and why, while a disk was full (`DISK`: from its fill until `ANSWER_SLACK_S`
  after it was freed; a 507 at any other time is bad). Unreachable (no answer: the API itself
  was killed or frozen) is counted apart, never a 5xx.

`Verdict.problems()` lists what breaks a promise; a test asserts it is empty, a bench prints it.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# Faults whose processes die with what they held: their calls in flight may never be counted.
KILLS = frozenset({"kill"})
# A full disk is the part "disk", filled ("fill") then freed ("free").
DISK = "disk"
# An answer is recorded when it arrives: one asked before the disk was freed may arrive after
# (the clients wait up to 5 s, tests/fault_clients.py), still saying 507.
ANSWER_SLACK_S = 5.0


@dataclass(frozen=True)
class FaultEvent:
    """One fault (or its heal) as the schedule made it."""

    at: float  # time.monotonic()
    part: str  # "worker-0", "redis", "postgres", "supervisor", "provider", "machine-2", ...
    action: str  # "kill", "freeze", "thaw", "cut", "heal", "restart", "back", "storm", "calm", "fill", "free", ...
    in_flight: int = 0  # the provider's requests in flight at that moment
    note: str = ""

    @property
    def is_fault(self) -> bool:
        return self.action not in ("thaw", "heal", "back", "calm", "free")


@dataclass(frozen=True)
class ApiAnswer:
    """One request of the clients thread: its status (0: no answer) and body."""

    at: float
    method: str
    path: str
    status: int
    body: Any = None


@dataclass
class History:
    """What a schedule did and what the API answered meanwhile (appended from several threads:
    list.append is atomic under the GIL)."""

    events: list[FaultEvent] = field(default_factory=list)
    answers: list[ApiAnswer] = field(default_factory=list)

    def record(self, at: float, part: str, action: str, in_flight: int = 0, note: str = "") -> FaultEvent:
        event = FaultEvent(at, part, action, in_flight, note)
        self.events.append(event)
        return event

    def faults(self) -> list[FaultEvent]:
        return [e for e in self.events if e.is_fault]

    def back_of(self, fault: FaultEvent) -> float:
        """When the part a fault struck was back: its heal, else (a kill the part recovers from
        by itself, a storm without end) the fault's own moment."""
        for event in self.events:
            if event.part == fault.part and event.at >= fault.at and not event.is_fault:
                return event.at
        return fault.at

    def full_disk(self) -> list[tuple[float, float]]:
        """When a disk was full: (filled, freed) for each fill (one never freed: to the end)."""
        spans = []
        for fill in (f for f in self.faults() if f.part == DISK):
            freed = [e.at for e in self.events if e.part == DISK and e.action == "free" and e.at >= fill.at]
            spans.append((fill.at, min(freed, default=float("inf"))))
        return spans


@dataclass(frozen=True)
class MatchRow:
    id: int
    status: str
    judgement_id: int | None
    failed_calls: int
    last_error: str | None
    finished_at: float | None  # time.time()


@dataclass(frozen=True)
class JudgementRow:
    id: int
    match_id: int | None
    calls: int


@dataclass(frozen=True)
class FinalState:
    matches: list[MatchRow]
    judgements: list[JudgementRow]  # every judgement the run's matches point to, or made for them


@dataclass(frozen=True)
class Paid:
    """One request the provider answered."""

    at: float  # time.monotonic() of its arrival
    prompt: str  # model, system and messages: the same call asked again has the same prompt
    delivered: bool


@dataclass
class Verdict:
    matches: int
    done: int
    failed: list[int]
    lost: list[int]
    duplicated: list[int]
    paid: int
    paid_twice: int
    charged: int
    recorded: int
    in_flight_at_faults: int
    in_flight_at_kills: int
    bad_answers: list[ApiAnswer]
    unreachable: int
    answers: int
    recovery_s: dict[str, float] = field(default_factory=dict)

    @property
    def unseen_twice(self) -> int:
        return max(0, self.paid_twice - self.charged)

    @property
    def uncounted(self) -> int:
        return self.paid - self.recorded - self.charged

    def problems(self) -> list[str]:
        found = []
        if self.lost:
            found.append(f"lost matches: {self.lost[:20]}")
        if self.duplicated:
            found.append(f"duplicated matches: {self.duplicated[:20]}")
        if self.unseen_twice > self.in_flight_at_faults:
            found.append(f"{self.unseen_twice} calls paid twice unseen (paid twice {self.paid_twice}, "
                         f"{self.charged} charged), more than the {self.in_flight_at_faults} in flight at faults")
        if not 0 <= self.uncounted <= self.in_flight_at_kills:
            found.append(f"{self.uncounted} paid calls uncounted (paid {self.paid}, in judgements {self.recorded}, "
                         f"charged as failed {self.charged}); at most {self.in_flight_at_kills} may die with a kill")
        if self.bad_answers:
            found.append(f"{len(self.bad_answers)} API answers 5xx without a reason: {self.bad_answers[:3]}")
        return found

    def summary(self) -> dict[str, Any]:
        return {"matches": self.matches, "done": self.done, "failed": len(self.failed), "lost": len(self.lost),
                "duplicated": len(self.duplicated), "paid": self.paid, "paid_twice": self.paid_twice,
                "charged": self.charged, "unseen_twice": self.unseen_twice, "uncounted": self.uncounted,
                "in_flight_at_faults": self.in_flight_at_faults, "in_flight_at_kills": self.in_flight_at_kills,
                "answers": self.answers, "unreachable": self.unreachable, "bad_answers": len(self.bad_answers)}


def reasoned_503(answer: ApiAnswer) -> bool:
    """A 503 that says why: an error text, or the health view naming a part that is down or
    full (a full one with where and why: `out_of_space`)."""
    body = answer.body
    if answer.status != 503 or not isinstance(body, dict):
        return False
    if _said(body, "error"):
        return True
    if body.get("status") != "down":
        return False
    parts = {k: v for k, v in body.items() if k not in ("status", "out_of_space")}
    if any(v == "down" for v in parts.values()):
        return True
    said = {short.get("part") for short in body.get("out_of_space") or [] if isinstance(short, dict)
            and _said(short, "where") and _said(short, "reason")}
    return any(v == "full" for v in parts.values()) and all(k in said for k, v in parts.items() if v == "full")


def reasoned_507(answer: ApiAnswer) -> bool:
    """A 507 that says which part is out of space, where, and why (`service.web.app.out_of_space`)."""
    body = answer.body
    return answer.status == 507 and isinstance(body, dict) and all(_said(body, k) for k in ("error", "part", "where", "reason"))


def _said(body: dict, key: str) -> bool:
    return isinstance(body.get(key), str) and bool(body[key].strip())


def bad_answer(answer: ApiAnswer, full: list[tuple[float, float]]) -> bool:
    """A 5xx that breaks the rule (see the module docstring); `full`: when a disk was full."""
    if not 500 <= answer.status <= 599 or reasoned_503(answer):
        return False
    if reasoned_507(answer):
        return not any(filled <= answer.at <= freed + ANSWER_SLACK_S for filled, freed in full)
    return True


def check(history: History, state: FinalState, paid: Iterable[Paid]) -> Verdict:
    """Judge a run from its history, the store's final state and the provider's log."""
    by_match: dict[int, list[int]] = {}
    for j in state.judgements:
        if j.match_id is not None:
            by_match.setdefault(j.match_id, []).append(j.id)
    lost, failed, duplicated = [], [], []
    for m in state.matches:
        if m.status == "done":
            if m.judgement_id is None:
                lost.append(m.id)
        elif m.status == "failed" and (m.last_error or "").strip():
            failed.append(m.id)
        else:
            lost.append(m.id)
        if len(by_match.get(m.id, [])) > 1:
            duplicated.append(m.id)
    shared = Counter(m.judgement_id for m in state.matches if m.judgement_id is not None)
    duplicated += [m.id for m in state.matches if m.judgement_id is not None and shared[m.judgement_id] > 1]
    used = {m.judgement_id for m in state.matches}
    delivered = Counter(p.prompt for p in paid if p.delivered)
    faults = history.faults()
    answers = history.answers
    full = history.full_disk()
    return Verdict(
        matches=len(state.matches),
        done=sum(m.status == "done" for m in state.matches),
        failed=failed,
        lost=sorted(set(lost)),
        duplicated=sorted(set(duplicated)),
        paid=sum(delivered.values()),
        paid_twice=sum(n - 1 for n in delivered.values()),
        charged=sum(m.failed_calls for m in state.matches),
        recorded=sum(j.calls for j in state.judgements if j.id in used),
        in_flight_at_faults=sum(f.in_flight for f in faults if f.part != "provider"),
        in_flight_at_kills=sum(f.in_flight for f in faults if f.action in KILLS),
        bad_answers=[a for a in answers if bad_answer(a, full)],
        unreachable=sum(a.status == 0 for a in answers),
        answers=len(answers),
        recovery_s=recoveries(history, state),
    )


def recoveries(history: History, state: FinalState, clock_offset: float | None = None) -> dict[str, float]:
    """For each process fault: seconds from the part being back until the first match finished
    after it (judging again), keyed "part action @t". `clock_offset` turns the store's
    time.time() into the history's time.monotonic() (`History` events carry it in their note
    "offset=..." when None)."""
    offset = clock_offset
    if offset is None:
        notes = [e.note for e in history.events if e.note.startswith("offset=")]
        offset = float(notes[0].split("=", 1)[1]) if notes else 0.0
    finished = sorted(m.finished_at - offset for m in state.matches if m.finished_at is not None and m.status == "done")
    start = min((e.at for e in history.events), default=0.0)
    found: dict[str, float] = {}
    for fault in history.faults():
        if fault.part == "provider" or fault.action == "clock":
            continue
        back = history.back_of(fault)
        after = [t for t in finished if t >= back]
        if after:
            found[f"{fault.part} {fault.action} @{fault.at - start:.1f}s"] = round(after[0] - back, 2)
    return found


# -- reading the sources ---------------------------------------------------------------------------


def read_state(store: Any, tournament_id: int) -> FinalState:
    """The store's final word on one tournament (`service.store.Store`)."""
    from sqlalchemy import or_, select

    from service.store import schema as s

    m, j = s.matches, s.judgements
    with store.engine.connect() as conn:
        rows = conn.execute(select(m.c.id, m.c.status, m.c.judgement_id, m.c.failed_calls, m.c.last_error,
                                   m.c.finished_at).where(m.c.tournament_id == tournament_id)).all()
        ids = [r.id for r in rows]
        pointed = [r.judgement_id for r in rows if r.judgement_id is not None]
        judged = conn.execute(select(j.c.id, j.c.match_id, j.c.calls).where(
            or_(j.c.match_id.in_(ids), j.c.id.in_(pointed)))).all() if ids else []
    return FinalState(
        matches=[MatchRow(r.id, r.status, r.judgement_id, int(r.failed_calls or 0), r.last_error, r.finished_at)
                 for r in rows],
        judgements=[JudgementRow(r.id, r.match_id, len(json.loads(r.calls or "[]"))) for r in judged],
    )


def paid_calls(received: Iterable[Any]) -> list[Paid]:
    """The fake's log (`FakeAnthropic.received`) as the checker reads it: live requests only."""
    return [Paid(r.at, json.dumps([r.model, r.system, r.messages], sort_keys=True), r.delivered)
            for r in received if r.batch_id is None]
