"""Tournaments as their pages show them: why a run stopped, in words; its pace; its spend.

Why a module of its own: the store keeps a stop as one word ("budget", "failing"...) and
counts matches, not calls; a reader wants the sentence behind the word, with the run's own
figures in it (its budget, its streak of failures, its targets), and a pace in calls a minute
(a batch run's verdicts land when the provider ends a batch: it shows what it waits on instead).
"""
from __future__ import annotations

from dataclasses import dataclass

from leaderboard.types import Delivery, Mode, OrderPolicy
from service.store import RunList
from service.web.api_views import TournamentOut, TournamentSummary
from service.web.pages.board_view import RowView
from service.web.pages.render import plural

PACE_WINDOW_S = 300  # the pace counts the matches judged in the last five minutes
UNFINISHED = ("queued", "running")


def usd(amount: float) -> str:
    """Dollars: cents once there are whole dollars, to the hundredth of a cent before."""
    return f"${amount:,.2f}" if amount >= 1 else f"${amount:.4f}"


def stop_reason(t: TournamentSummary, streak: int) -> str | None:
    """Why the run ended as it did, in words (`streak`: its matches failed in a row, what a
    "failing" stop counted); None while it is queued or running."""
    if t.status.value in UNFINISHED:
        return None
    spec = t.spec
    cancelled = (f" The {plural(t.matches_cancelled, 'match', 'matches')} not judged by then "
                 f"{'was' if t.matches_cancelled == 1 else 'were'} cancelled." if t.matches_cancelled else "")
    reasons = {
        "budget": f"Stopped when its spend reached its budget of {usd(t.budget or 0.0)}.{cancelled}",
        "unpriced": ("Stopped before any call: it has a budget but its judge has no price, so its spend "
                     f"could not be counted (give the judge a price in JOUST_PRICES).{cancelled}"),
        "failing": (f"Stopped after {streak or 'several'} failed matches in a row with no judgement between "
                    "them (JOUST_STOP_AFTER_FAILURES), rather than asking a broken judge for every match."
                    f"{cancelled} Once the judge is fixed, retry it (POST /api/tournaments/{t.id}/retry) "
                    "to hand those matches out again."),
        "separated": "Stopped: no two players' 95% intervals overlap any more (the adaptive run's target).",
        "ci_width": (f"Stopped: every player's 95% interval is at most {spec.get('target_ci_width')} Elo wide "
                     "(its target)."),
        "max_calls": f"Stopped: it used its {spec.get('max_calls')} judge calls (max_calls).",
        "exhausted": "Stopped: no pair was left that this judge had not judged.",
    }
    if t.stopped_reason is not None:
        return reasons.get(t.stopped_reason, f"Stopped: {t.stopped_reason}.{cancelled}")
    if t.status.value == "cancelled":
        return (f"Cancelled on request (POST /api/tournaments/{t.id}/cancel, or joust tournament cancel {t.id}); "
                f"the judgements made before it stay.{cancelled}")
    if t.mode is Mode.IMPORT:
        return "Imported: its verdicts came from a file, no judge was asked."
    if t.status.value == "failed":
        return "Every match failed: the reasons are below."
    if t.matches_total == 0:
        return "Nothing to judge: no pair of submissions matched its filters."
    failed = f", {t.matches_failed} failed" if t.matches_failed else ""
    return f"Finished: every match settled ({t.matches_done} judged{failed})."


@dataclass(frozen=True)
class Pace:
    """Matches judged in the last `window_s` seconds, a minute on average, and the judge calls
    that took (None where the run makes no pairwise calls: an import)."""

    window_s: int
    judged: int

    @property
    def minutes(self) -> int:
        return self.window_s // 60

    @property
    def per_minute(self) -> float:
        return self.judged * 60 / self.window_s


def calls_per_minute(t: TournamentSummary, pace: Pace) -> float | None:
    """Judge calls a minute, estimated as the client's progress bar does: each match judged took
    two calls with order both, one with single (a match a stored judgement answered counts too).
    None for a batch run, whose verdicts arrive a batch at a time (`batch_wait` says what it
    waits on), and for an import."""
    if t.order is None or t.delivery is Delivery.BATCH:
        return None
    return pace.per_minute * (2 if t.order is OrderPolicy.BOTH else 1)


def batch_wait(t: TournamentOut) -> str:
    """What a batch run waits on, in the words of the client's bar (`joust.progress.BatchWait`):
    "1 batch pending (12 requests at the provider), 3 requests to send", or "no batch yet"."""
    if not t.batches and not t.requests.pending:
        return "no batch yet"
    text = plural(t.batches_pending, "batch", "batches") + " pending"
    if t.requests.submitted:
        text += f" ({plural(t.requests.submitted, 'request')} at the provider)"
    if t.requests.pending:
        text += f", {plural(t.requests.pending, 'request')} to send"
    return text


def share(part: float, whole: float | None) -> float | None:
    """`part` of `whole` as a fraction, None when there is no whole to measure against."""
    return part / whole if whole else None


@dataclass(frozen=True)
class ListRow:
    """A top-level tournament on the list, with its runs (a schedule's) or layers (an import's)."""

    tournament: TournamentSummary
    runs: RunList | None

    @property
    def runs_noun(self) -> str:
        return runs_noun(self.tournament)


def runs_noun(t: TournamentSummary) -> str:
    """What a tournament's children are: an import's are layers of repeated verdicts."""
    return "layer" if t.mode is Mode.IMPORT else "run"


@dataclass(frozen=True)
class SmallBoard:
    """The top of a tournament's board at model level, by the judge the board page would show,
    or why there is none (`problem`). `judgements` counted up to `revision`; `behind`: how many
    revisions the store has moved since (the board being brought up to date in the background)."""

    judge: str | None
    rows: tuple[RowView, ...]
    players: int
    groups: int
    problem: str | None = None
    judgements: int = 0
    revision: int = 0
    behind: int = 0

    @property
    def pending(self) -> bool:
        """True while a newer board is being computed: the page is fetched again."""
        return self.behind > 0 or self.problem == COMPUTING


COMPUTING = "it is being computed for the first time (it reads every judgement of the tournament)"
