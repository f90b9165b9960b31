"""One judge's board in the variant asked for: plain, with style control, rated by Davidson's tie
model, with bootstrap intervals, or an anchored tournament's (its anchors held fixed).

What `GET /api/leaderboard` serves, without HTTP, so that the CLI, the scheduler and the benches
can ask for the same board. The board is the judge's as `BoardCache.judged` chooses it, flagged
for gaming (`service.usecases.flag_cache`, on the plain board, with the other judges' counts),
then swapped for its variant. Some variants are not computed together: a request that combines
them is still answered, with the plain (or half) board and a note saying which was dropped and
why; a variant the request or the data rules out is a `UseCaseError`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from leaderboard.board_slice import WHOLE, BoardSlice
from leaderboard.judges import JudgeChoice
from leaderboard.style_board import ComponentCoefficient
from leaderboard.tie_board import TieParameter
from leaderboard.types import Level
from service.usecases.boards import Board, BoardCache
from service.usecases.errors import UseCaseError
from service.usecases.flag_cache import API_WAIT_S, BoardFlags, FlagCache
from service.usecases.rounds import anchored_board

STYLE_DECLINED = ("style control is not computed with dimension=, intervals=bootstrap, votes=majority or an "
                  "anchored tournament: this is the plain board")
DAVIDSON_DECLINED = ("ties=davidson is not computed with intervals=bootstrap or an anchored tournament: ties "
                     "count half a win each way on this board")
STYLE_WITH_DAVIDSON = "style control is not computed with ties=davidson: this is the Davidson board without style control"
BOOTSTRAP_ANCHORED = ("intervals=bootstrap: an anchored tournament's board holds its anchors at fixed ratings, and "
                      "its intervals are the anchored fit's; leave intervals out")


@dataclass(frozen=True)
class VariantQuery:
    """Which board: who plays (`level`), over which tournament (None: every judgement), by which
    judge (None: chosen), ranked by one dimension or overall, counting the verdicts `part` keeps;
    and its variant: `bootstrap` intervals, `style` control, `davidson` ties (each False: plain)."""

    level: Level
    tournament: int | None = None
    judge: str | None = None
    dimension: str | None = None
    part: BoardSlice = WHOLE
    bootstrap: bool = False
    style: bool = False
    davidson: bool = False


@dataclass(frozen=True)
class BoardVariant:
    """The board served and how it came to be. `style` and `davidson`: the variant kept (asked
    for and not dropped; a board without a judge stays empty either way), and the note saying
    why one was dropped. `coefficients`: the style covariates' effects (None unless the board was
    styled); `tie_parameters`: each component's (None unless Davidson was kept; empty without a
    judge); `rounds` and `seed`: the bootstrap's (None unless the board was resampled)."""

    choice: JudgeChoice
    board: Board
    flags: BoardFlags
    style: bool = False
    style_note: str | None = None
    davidson: bool = False
    davidson_note: str | None = None
    coefficients: list[ComponentCoefficient] | None = None
    tie_parameters: list[TieParameter] | None = None
    rounds: int | None = None
    seed: int | None = None


def board_variant(
    boards: BoardCache, flag_cache: FlagCache, query: VariantQuery, *, wait_s: float = API_WAIT_S
) -> BoardVariant:
    """The board `query` asks for, current as of this call, its gaming flags waited for up to
    `wait_s` (then the last ones, `flags.current` false). NotFound for an unknown tournament;
    `leaderboard.judges.UnknownJudge` for a named judge without verdicts there; `UseCaseError`:
    invalid for bootstrap intervals on an anchored tournament's board, unavailable for style
    control or Davidson ties the board's battles cannot have (without outputs; weighted)."""
    level, tournament, name, part = query.level, query.tournament, query.dimension, query.part
    choice, board = boards.judged(level, tournament_id=tournament, judge=query.judge, dimension=name, part=part)
    opinions = boards.second_opinions(level, choice, board.revision, tournament_id=tournament, dimension=name,
                                      part=part)
    flags = flag_cache.of(board, (tournament, choice.judge, name, part), opinions=opinions, soon=True,
                          wait_s=wait_s, stale_ok=False)
    spec = boards.store.tournament_spec(tournament) if tournament is not None else None
    anchored = spec is not None and spec.anchored and name is None and level is spec.level and part.whole
    style, davidson, style_note, davidson_note = query.style, query.davidson, None, None
    if style and (name is not None or anchored or query.bootstrap or part.majority):
        style, style_note = False, STYLE_DECLINED  # a valid request: answered with the plain board, saying why
    if davidson and (anchored or query.bootstrap):
        davidson, davidson_note = False, DAVIDSON_DECLINED
    if davidson and style:
        style, style_note = False, STYLE_WITH_DAVIDSON
    kept = BoardVariant(choice, board, flags, style=style, style_note=style_note, davidson=davidson,
                        davidson_note=davidson_note)
    judge = choice.judge
    if davidson:
        if judge is None:  # nothing judged here: the empty board stays as it is
            return replace(kept, tie_parameters=[])
        tied = boards.tied(board, judge=judge, tournament_id=tournament, dimension=name, part=part)
        if tied.unavailable is not None:
            raise UseCaseError("unavailable", f"ties=davidson: {tied.unavailable}")
        return replace(kept, board=tied.board, tie_parameters=list(tied.tie_parameters))
    if style:
        if judge is None:
            return kept
        styled = boards.styled(level, board, judge=judge, tournament_id=tournament, turn=part.turn)
        if styled.unavailable is not None:
            raise UseCaseError("unavailable", f"control=style: {styled.unavailable}")
        return replace(kept, board=styled.board, coefficients=list(styled.coefficients))
    if query.bootstrap:
        if anchored:
            raise UseCaseError("invalid", BOOTSTRAP_ANCHORED)
        if judge is None:
            return kept
        boot = boards.bootstrapped(level, judge=judge, tournament_id=tournament, dimension=name, part=part)
        return replace(kept, board=boot.board, rounds=boot.rounds, seed=boot.seed)
    if anchored and spec is not None:  # its anchors held at the ratings they had when it was created
        rows = anchored_board(boards.store, spec, k=boards.k)
        return replace(kept, board=Board(level=level, rows=rows, judgements=board.judgements, revision=board.revision))
    return kept

