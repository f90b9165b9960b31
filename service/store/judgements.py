"""One judgement at a time: read it with its two sides, and keep its tie analysis."""
from __future__ import annotations

import json

from sqlalchemy import select, update

from leaderboard.types import Submission

from . import schema as s
from .base import Database, NotFound, submission_of
from .rows import JudgementDetail


class Judgements(Database):
    """One judgement at a time: read it with its two sides, and keep its tie analysis."""

    def judgement_pair(self, judgement_id: int) -> tuple[JudgementDetail, Submission, Submission]:
        """The judgement (as `get_judgement` shows it) and the two submissions it judged, a
        then b; raises NotFound."""
        j, sub = s.judgements, s.submissions
        with self._read() as conn:
            row = conn.execute(select(j).where(j.c.id == judgement_id)).first()
            if row is None:
                raise NotFound(f"no judgement {judgement_id}")
            subs = {r.id: submission_of(r) for r in conn.execute(select(sub).where(sub.c.id.in_([row.a_id, row.b_id])))}
        a, b = subs[row.a_id], subs[row.b_id]
        return JudgementDetail.of(row, a, b), a, b

    def get_judgement(self, judgement_id: int, *, outputs: bool = False) -> JudgementDetail:
        """A judgement: both sides (model, scenario, and with `outputs` their output texts), the
        outcome for a, the calls, tokens, cost, and the tie analysis (None until one was asked
        for and answered); raises NotFound."""
        view, a, b = self.judgement_pair(judgement_id)
        return view.with_outputs(a, b) if outputs else view

    def set_analysis(self, judgement_id: int, analysis: dict) -> None:
        """Keep the tie analysis of a judgement (replacing an earlier one); raises NotFound."""
        j = s.judgements
        with self._write() as conn:
            done = conn.execute(
                update(j).where(j.c.id == judgement_id).values(analysis=json.dumps(analysis, sort_keys=True))
            ).rowcount
        if not done:
            raise NotFound(f"no judgement {judgement_id}")
