"""Win rates against a named baseline over the API: AlpacaEval's columns, plain and length-controlled.

GET /api/leaderboard/winrate?baseline=<player> answers, for every player with verdicts against
the baseline on one judge's board (chosen as the other boards choose, `judge_choice`), the plain
win rate, its standard error and counts (`leaderboard.winrate`), and the length-controlled win
rate (`leaderboard.length_control`: what the rate would be at the baseline's length). Computed
from the stored judgements and their two outputs (one read of the scope's rows; the fits are a few
milliseconds per player), once per revision and kept (`AppState.winrates`): the read is what
costs, seconds at a million judgements. For a baseline tournament (`"mode": "baseline"`),
`?tournament=ID` alone compares with its own baseline; its page shows the same rows (`compared`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field, StringConstraints

from leaderboard.baseline_board import BaselineRow, against_baseline, players_at
from leaderboard.types import Level
from service.store import Store
from service.usecases.boards import BoardCache
from service.usecases.revisioned import Lru
from service.web.api_models import By
from service.web.routes.board_out import finite
from service.web.routes.common import KEY_MAX, NO_NUL, ApiError, TournamentFilter, error_responses
from service.web.routes.judge_choice import JudgedOut, judge_fields, judge_not_found, with_judge_rule
from service.web.routes.leaderboard import ByLevel, JudgeFilter, get_boards
from service.web.state import state_of

router = APIRouter(prefix="/api/leaderboard", tags=["leaderboard"], responses=error_responses(404, 422))

KNOWN_SHOWN = 20  # how many known players a 404 names
KEPT = 16  # results kept, by (level, tournament, judge, baseline)


@dataclass(frozen=True)
class Compared:
    """The players with verdicts at a level and every row against one baseline, at `revision`."""

    known: frozenset[str]
    rows: list[BaselineRow]
    revision: int


def winrate_cache() -> Lru[Compared]:
    """What an app keeps (`AppState.winrates`)."""
    return Lru(KEPT)


class WinrateRow(BaseModel):
    """One player against the baseline. Rates are percent, a tie counting half."""

    player: str
    win_rate: float | None = Field(description="100 × the mean of the player's share (1 won, ½ tie, 0 lost)")
    standard_error: float | None = Field(description="its standard error: 100 × sd(share) / √n")
    n_wins: int
    n_wins_base: int
    n_draws: int
    n_total: int
    lc_win_rate: float | None = Field(
        description="length-controlled win rate (AlpacaEval 2's GLM: the length term zeroed); null when "
                    "outputs are missing, `lc_unavailable` says why")
    lc_standard_error: float | None = Field(description="AlpacaEval's: the standard error of the mean of the "
                                                        "per-question predictions (not of the fit)")
    lc_unavailable: str | None
    length_weight: float | None = Field(description="the GLM's weight on tanh of the standardised baseline-minus-"
                                                    "player length gap (negative: the judge prefers longer)")
    avg_length: float | None = Field(description="mean length of the player's outputs in these verdicts, characters")


@with_judge_rule
class WinrateOut(JudgedOut):
    """Every player's win rate against `baseline` on one judge's verdicts, best plain rate first."""

    baseline: str
    by: str
    tournament: int | None
    revision: int
    rows: list[WinrateRow]


def row_out(row: BaselineRow) -> WinrateRow:
    plain, lc = row.plain, row.lc
    return WinrateRow(
        player=row.player, win_rate=finite(plain.win_rate), standard_error=finite(plain.standard_error),
        n_wins=plain.n_wins, n_wins_base=plain.n_wins_base, n_draws=plain.n_draws, n_total=plain.n_total,
        lc_win_rate=finite(lc.lc_win_rate) if lc else None,
        lc_standard_error=finite(lc.lc_standard_error) if lc else None,
        lc_unavailable=row.lc_unavailable,
        length_weight=finite(lc.weights.length) if lc else None,
        avg_length=row.avg_length,
    )


def compared(request: Request, store: Store, level: Level, tournament: int | None, judge: str | None,
             baseline: str) -> Compared:
    """Every row against `baseline` on `judge`'s verdicts (in `tournament`), kept per revision
    (`AppState.winrates`); the API and a baseline tournament's page both read it here."""
    revision = store.revision()
    kept = state_of(request).winrates
    key = (level, tournament, judge, baseline)
    found = kept.get(key, revision)
    if found is None:
        rows = store.styled_side_rows(tournament_id=tournament, judge=judge) if judge is not None else []
        known = players_at(rows, level)
        found = Compared(frozenset(known), against_baseline(rows, baseline, level) if baseline in known else [],
                         revision)
        kept.put(key, found)
    return found


BaselineName = Annotated[str, StringConstraints(min_length=1, max_length=KEY_MAX, pattern=NO_NUL)]
BaselineParam = Annotated[BaselineName | None, Query(
    description="the player every other is compared with, at the `by` level (a model name, a scenario, or "
                '"<model> + <scenario>"); required unless `tournament` is a baseline run, whose own baseline '
                "(at its level, unless `by` says otherwise) it defaults to")]


@router.get("/winrate", response_model=WinrateOut, responses=error_responses(409))
def get_winrate(
    request: Request,
    boards: Annotated[BoardCache, Depends(get_boards)],
    baseline: BaselineParam = None,
    by: ByLevel = By.MODEL,
    tournament: TournamentFilter = None,
    judge: JudgeFilter = None,
) -> WinrateOut:
    """Each player's win rate against `baseline` (AlpacaEval's win_rate, standard_error, n_wins,
    n_wins_base, n_draws, n_total) and its length-controlled win rate, from one judge's verdicts.
    Without `baseline`, a baseline tournament's own (`"mode": "baseline"`), at its level unless
    `by` is given; 409 without `baseline` for any other scope (valid parameters, but no baseline
    run to default to). 404 for a baseline that is no
    player on this board (the message names some that are), an unknown tournament, or a judge
    without verdicts here."""
    level = by.level
    with judge_not_found():
        choice = boards.choose(tournament_id=tournament, judge=judge)
    if baseline is None:
        spec = boards.store.tournament_spec(tournament) if tournament is not None else None
        if spec is None or not spec.against_baseline or spec.baseline is None:
            problem = "required, unless `tournament` is a baseline run (mode 'baseline'), whose baseline it defaults to"
            if spec is not None:
                problem += f"; tournament {tournament} is of mode {spec.mode.value!r}"
            # 409, not 422: the parameters are valid (the schema cannot say "required unless
            # tournament is a baseline run"); what is missing is a baseline run to default to.
            raise ApiError(409, f"query parameter baseline: {problem}",
                           details=[{"path": "query parameter baseline", "message": problem}])
        baseline = spec.baseline
        level = level if "by" in request.query_params else spec.level
    found = compared(request, boards.store, level, tournament, choice.judge, baseline)
    revision = found.revision
    if baseline not in found.known:
        shown = sorted(found.known)[:KNOWN_SHOWN]
        raise ApiError(404, f"baseline {baseline!r} is no {level.value} with verdicts on this board"
                            + (f"; players include: {', '.join(shown)}" if shown else "; the board is empty"),
                       players=shown)
    return WinrateOut(
        baseline=baseline, by=level.value, tournament=tournament, revision=revision,
        **judge_fields(choice, "/api/leaderboard/winrate", baseline=baseline, by=level.value, tournament=tournament),
        rows=[row_out(r) for r in found.rows],
    )
