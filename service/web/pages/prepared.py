"""The board page's own parts (the table, its bars and the pictures), prepared once per board and
kept, so that a page request only assembles them.

Why: at a million judgements a board of 100 players costs tens of milliseconds to fit, draw and
render, and a board of 400 over a hundred, while during a tournament every request finds a new
revision. So a big board (`behind_from` players or more) is prepared behind the page: a request
serves the last prepared board at once (its revision says how old it is, and the page is marked
pending so the live script fetches it again) while one background thread per view prepares the
current one (`service.usecases.refreshes`). A small board is prepared in the request, current, as before.
Each app holds its own `PreparedBoards` (`AppState.pages`): nothing is shared between stores.
"""
from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass

from markupsafe import Markup

from leaderboard.judges import JudgeChoice
from leaderboard.types import Level
from service.store import OutputLength, Store
from service.usecases.boards import Board, BoardCache
from service.usecases.flag_cache import BoardFlags, FlagCache
from service.usecases.lengths import mean_lengths
from service.usecases.refreshes import GAP_S, Refreshes
from service.usecases.revisioned import Lru
from service.web.pages.board_view import BoardView, board_view
from service.web.pages.figures import BoardFigures, draw_board
from service.web.pages.render import ENV

BEHIND_FROM = 50  # players from which a board is prepared behind the page (drawing alone costs ~30 ms at 100)
KEPT = 16  # views kept: (level, judge, tournament, dimension)
LEVEL_TITLES = {Level.MODEL: "Models", Level.SCENARIO: "Scenarios", Level.SYSTEM: "Systems (model + scenario)"}


@dataclass(frozen=True)
class View:
    """What the page was asked for: the address's choices (`judge` None: the default judge)."""

    level: Level
    judge: str | None
    tournament: int | None
    dimension: str | None


@dataclass(frozen=True)
class Prepared:
    """One view's board, its page view, pictures and rendered parts, at the board's revision.
    `lengths`: the submissions mark the mean output lengths were read at."""

    choice: JudgeChoice
    board: Board
    flags: BoardFlags
    view: BoardView
    figures: BoardFigures
    table: Markup
    pictures: Markup
    lengths: int

    @property
    def revision(self) -> int:
        return self.board.revision


class Lengths:
    """Mean output lengths, kept as running sums: each look reads only the submissions added
    since the last (at a million judgements, rereading 200k outputs took seconds)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._upto = 0
        self._sums: dict[tuple[str, str], tuple[int, float]] = {}  # (model, scenario) → (outputs, characters)

    def of(self, level: Level) -> tuple[int, dict[str, float]]:
        """(the newest submission id they include, mean lengths by player at `level`)."""
        with self._lock:
            found, upto = self.store.output_lengths(after_id=self._upto)
            for item in found:
                n, chars = self._sums.get((item.model, item.scenario), (0, 0.0))
                self._sums[(item.model, item.scenario)] = (n + item.outputs, chars + item.outputs * item.mean_chars)
            self._upto = upto
            kept = [OutputLength(m, c, n, chars / n) for (m, c), (n, chars) in sorted(self._sums.items()) if n]
        return upto, mean_lengths(kept, level)


Links = Callable[[JudgeChoice, View], tuple[Callable[[str], str], Callable[[str, str], str]]]


class PreparedBoards:
    """Prepared boards by view, made in the request when small and behind the page when big."""

    def __init__(self, store: Store, boards: BoardCache, flags: FlagCache, links: Links) -> None:
        self.store = store
        self.boards = boards
        self.flags = flags
        self.links = links  # (row link, cell link) for a view: the page's URLs, kept out of this module
        self.lengths = Lengths(store)
        self.behind_from = BEHIND_FROM
        self._kept: Lru[Prepared] = Lru(KEPT)
        self._refreshes = Refreshes("pages", gap_s=GAP_S)

    def get(self, view: View, revision: int) -> Prepared | None:
        """The view's prepared board: a big one kept from before at once (with a refresh started
        when the store moved past it), else one prepared now, current as of `revision`. None while
        its very first board is still being computed (`BoardCache.judged_soon`). Raises what
        `judged_soon` raises for a judge without verdicts or an unknown tournament."""
        kept = self._kept.latest(view)
        if kept is not None and len(kept.board.rows) >= self.behind_from:
            if kept.revision < revision or kept.lengths != self.store.submission_mark() or not kept.flags.current:
                self._refreshes.start(view, lambda: self._prepare(view))
            return kept
        return self._prepare(view)

    def join(self, view: View, timeout_s: float | None = None) -> None:
        """Wait for the view's background preparation, if one runs (tests)."""
        self._refreshes.join(view, timeout_s)

    def _prepare(self, view: View) -> Prepared | None:
        judged = self.boards.judged_soon(view.level, tournament_id=view.tournament, judge=view.judge,
                                         dimension=view.dimension)
        if judged is None:
            return None
        choice, board = judged
        lengths, means = self.lengths.of(view.level)
        opinions = self.boards.second_opinions(view.level, choice, board.revision, tournament_id=view.tournament,
                                               dimension=view.dimension)
        flags = self.flags.of(board, (view.tournament, choice.judge, view.dimension), opinions=opinions, soon=True)
        kept = self._kept.latest(view)
        if (kept is not None and kept.board.rows is board.rows and kept.lengths == lengths
                and kept.choice.judge == choice.judge and kept.flags.flags == flags.flags):
            # the same fit, re-stamped: nothing to draw
            made = dataclasses.replace(kept, board=board, choice=choice, flags=flags)
        else:
            made = self._make(view, choice, board, flags, lengths, means, kept)
        self._kept.put(view, made)
        return made

    def _make(self, view: View, choice: JudgeChoice, board: Board, flags: BoardFlags, lengths: int,
              means: dict[str, float], kept: Prepared | None) -> Prepared:
        row_link, cell_link = self.links(choice, view)
        same_fit = kept is not None and kept.board.rows is board.rows and kept.choice.judge == choice.judge
        figures = kept.figures if same_fit else draw_board(board.rows, board.counts, cell_link)  # type: ignore[union-attr]
        shown = board_view(board.rows, means, flags.flags)
        table = ENV.get_template("board_table.html").render(view=shown, figures=figures, row_link=row_link,
                                                           level_title=LEVEL_TITLES[view.level])
        pictures = ENV.get_template("board_figures.html").render(figures=figures)
        return Prepared(choice, board, flags, shown, figures, Markup(table), Markup(pictures), lengths)


