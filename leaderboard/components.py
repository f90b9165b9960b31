"""Components of the comparison graph: which players can be ranked against which.

Two players are comparable when a chain of judged pairs links them. Players in different pieces
of the graph share no verdict, so a fit over all of them places one piece against another by its
prior alone (the ridge: an offset anywhere within thousands of Elo, with an interval to match).
A board therefore fits, ranks and bounds each piece on its own, and says which piece a player is
in. Components are numbered 1 (the largest) up, equal sizes in the order of their first player's
name, so the numbering is the same whatever order the verdicts arrived in.
"""
from __future__ import annotations

import numpy as np

from .battles import BattleTable


def components(games: np.ndarray) -> np.ndarray:
    """The component number (1 = largest) of each player, from a symmetric n×n matrix of games
    between players in name order (`PairCounts.games`); a player with no games is alone."""
    n = len(games)
    linked = np.asarray(games) > 0
    found = np.zeros(n, dtype=np.intp)  # 0: not reached yet; else the order the piece was found in
    pieces = 0
    for start in range(n):
        if found[start]:
            continue
        pieces += 1
        reached = np.zeros(n, dtype=bool)
        reached[start] = True
        frontier = reached.copy()
        while frontier.any():
            frontier = linked[frontier].any(axis=0) & ~reached
            reached |= frontier
        found[reached] = pieces
    if pieces <= 1:
        return found
    sizes = np.bincount(found)
    # Pieces are found in the order of their first player, so that order breaks equal sizes.
    order = sorted(range(1, pieces + 1), key=lambda piece: (-sizes[piece], piece))
    renumber = np.zeros(pieces + 1, dtype=np.intp)
    renumber[order] = np.arange(1, pieces + 1)
    return renumber[found]


def split_table(table: BattleTable, labels: np.ndarray) -> list[BattleTable]:
    """The battles of each component (1 first) as tables of their own: players in name order,
    resampling groups renumbered so that each table holds only the questions it touches."""
    parts = []
    side = labels[table.a] if table.a.size else np.zeros(0, dtype=np.intp)
    for piece in range(1, int(labels.max(initial=0)) + 1):
        members = np.flatnonzero(labels == piece)
        rename = np.full(len(table.players), -1, dtype=np.intp)
        rename[members] = np.arange(members.size)
        keep = side == piece
        _, group = np.unique(table.group[keep], return_inverse=True)
        parts.append(BattleTable(
            players=[table.players[i] for i in members],
            a=rename[table.a[keep]],
            b=rename[table.b[keep]],
            score=table.score[keep],
            weight=table.weight[keep],
            group=group.astype(np.intp).reshape(-1),
        ))
    return parts
