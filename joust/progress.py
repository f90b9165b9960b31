"""What `Client.wait` shows while a tournament runs: a tqdm bar on stderr with the matches done,
failed and left, judge calls per minute (a batch run: its batches pending) and the spend.

tqdm, not rich: it has no dependencies of its own (rich brings pygments and markdown-it-py into
every user's environment), it writes synchronously to the file it is given, and with its
monitor thread off and a format without its own timings, what it prints depends only on the
numbers handed to it, so a test can read them back. A notebook shows its stderr line as it does
any other; the bar is redrawn in place with a carriage return.

Calls per minute is an estimate: the API counts matches, not calls. It is the matches judged
since the wait began times the calls one match takes under the run's order policy (2 for
"both", 1 for "single"), per minute of the wait; a match a stored judgement answered counts as
if it had been judged.

A batch run has no call rate to show: its verdicts land all at once when the provider ends a
batch (thousands of "calls a minute" in the poll that sees them, none for hours before), so its
bar shows what it waits on instead: the batches the provider has not ended, the requests in them
and those not sent yet, as the API counts them (`batches_pending`, `requests`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO

from tqdm import tqdm

from .types import Tournament

__all__ = ["Bar", "BatchWait", "Progress", "calls_per_match", "usd"]

CALLS_PER_MATCH = {"both": 2, "single": 1}


def calls_per_match(tournament: Tournament) -> int:
    """The judge calls one pairwise match takes under the run's order policy (0 for an import)."""
    return CALLS_PER_MATCH.get(tournament.order or "", 0)


def usd(amount: float) -> str:
    """Dollars, with cents once there are whole dollars and to the hundredth of a cent before."""
    return f"${amount:,.2f}" if amount >= 1 else f"${amount:.4f}"


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


@dataclass(frozen=True)
class BatchWait:
    """What a batch run waits on: its batches the provider has not ended (`pending`, of `made`),
    the requests in them (`at_provider`) and those not in a batch yet (`to_send`)."""

    pending: int
    made: int
    at_provider: int
    to_send: int

    @classmethod
    def of(cls, tournament: Tournament) -> BatchWait | None:
        """A batch run's wait, from its `GET /api/tournaments/{id}` fields; None for a live run."""
        if tournament.delivery != "batch":
            return None
        requests = tournament.extra.get("requests") or {}
        return cls(pending=int(tournament.extra.get("batches_pending") or 0),
                   made=len(tournament.extra.get("batches") or ()),
                   at_provider=int(requests.get("submitted") or 0), to_send=int(requests.get("pending") or 0))

    def summary(self) -> str:
        """`1 batch pending (12 requests at the provider), 3 requests to send`; `no batch yet`."""
        if not self.made and not self.to_send:
            return "no batch yet"
        text = _count(self.pending, "batch", "batches") + " pending"
        if self.at_provider:
            text += f" ({_count(self.at_provider, 'request')} at the provider)"
        if self.to_send:
            text += f", {_count(self.to_send, 'request')} to send"
        return text


@dataclass(frozen=True)
class Progress:
    """A run's progress between the first poll of a wait (`since`, at `since_s`) and now."""

    done: int
    failed: int
    cancelled: int
    left: int
    total: int
    calls_per_minute: float | None  # None before any time has passed, and for a batch run
    spent_usd: float
    budget: float | None
    batches: BatchWait | None = None  # a batch run's, shown instead of a call rate

    @classmethod
    def between(cls, since: Tournament, since_s: float, now: Tournament, now_s: float) -> Progress:
        minutes = (now_s - since_s) / 60
        judged = max(0, now.matches_done - since.matches_done)
        batches = BatchWait.of(now)
        rate = judged * calls_per_match(now) / minutes if minutes > 0 and batches is None else None
        return cls(done=now.matches_done, failed=now.matches_failed, cancelled=now.matches_cancelled,
                   left=now.matches_pending, total=now.matches_total, calls_per_minute=rate,
                   spent_usd=now.spent_usd, budget=now.budget, batches=batches)

    @property
    def settled(self) -> int:
        """Matches that will not be judged again in this run: done, failed or cancelled."""
        return self.total - self.left

    def summary(self) -> str:
        """`done 4, failed 1, left 1, 8.0 calls/min, $0.0210 of $5.00` (cancelled only when some were;
        a batch run's batches pending in place of the rate)."""
        parts = [f"done {self.done}", f"failed {self.failed}"]
        if self.cancelled:
            parts.append(f"cancelled {self.cancelled}")
        parts.append(f"left {self.left}")
        if self.batches is not None:
            parts.append(self.batches.summary())
        else:
            rate = "-" if self.calls_per_minute is None else f"{self.calls_per_minute:.1f}"
            parts.append(f"{rate} calls/min")
        parts.append(usd(self.spent_usd) + (f" of {usd(self.budget)}" if self.budget is not None else ""))
        return ", ".join(parts)


class _Tqdm(tqdm):  # type: ignore[misc]
    monitor_interval = 0  # no monitor thread: the bar is redrawn only when `Bar.show` says so


class Bar:
    """A tournament's progress bar on `file`; redrawn by `show`, ended by `close`."""

    FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n}/{total}{postfix}"

    def __init__(self, tournament_id: int, file: TextIO) -> None:
        self._desc, self._file = f"tournament {tournament_id}", file
        self._bar: tqdm | None = None

    def show(self, progress: Progress) -> None:
        if self._bar is None:  # made at the first numbers, so no empty bar is drawn before them
            self._bar = _Tqdm(total=progress.total, desc=self._desc, file=self._file, bar_format=self.FORMAT,
                              mininterval=0, miniters=0, delay=0, leave=True, initial=progress.settled,
                              postfix=progress.summary())
            return
        self._bar.total = progress.total
        self._bar.n = progress.settled
        self._bar.set_postfix_str(progress.summary(), refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
