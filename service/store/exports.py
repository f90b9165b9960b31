"""The read model of `joust export judgements`: every counted verdict with what it needs to be
restored elsewhere (both submissions' texts, each call, the judge, criteria, prompt version,
order policy and key), so that importing the export rebuilds the same boards and judge health."""
from __future__ import annotations

import json
from typing import Any

from sqlalchemy import func, select

from leaderboard.types import MatchStatus

from . import schema as s
from .base import Database, NotFound
from .tournament_scope import counted_in
from .views import judge_is


class Exports(Database):
    """Judgements as export rows, oriented to the match that counts them."""

    def export_judgements(self, *, tournament_id: int | None = None, judge: str | None = None) -> list[dict]:
        """One row per judgement and pair of submissions, in resolve order, oriented to its
        match: the rows the leaderboard counts (overall: the `counted` match; for a tournament
        and its runs or layers: its first match there), with both sides' models, scenarios and
        outputs (`output_a`, `output_b`), the question's text as side a holds it (`question`; side
        b's in `question_b` when it holds another, else None), and both outputs' lengths in
        characters (`len_a`, `len_b`, as judge health measures them)."""
        m, j, t = s.matches, s.judgements, s.tournaments
        sa, sb = s.submissions.alias("sa"), s.submissions.alias("sb")
        query = (
            select(
                m.c.id.label("match_id"), m.c.tournament_id, m.c.seq, m.c.a_id, m.c.b_id, m.c.outcome,
                m.c.consistent, j.c.id.label("judgement_id"), j.c.key, j.c.judge, j.c.criteria, j.c.template_version,
                j.c.order_policy, j.c.a_id.label("judged_a"), j.c.b_id.label("judged_b"), j.c.a_hash, j.c.calls,
                j.c.input_tokens, j.c.output_tokens, j.c.cost_usd, j.c.created_at, sa.c.question_id, sa.c.question,
                sb.c.question.label("question_b"),
                sa.c.output.label("output_a"), sb.c.output.label("output_b"),
                func.length(sa.c.output).label("len_a"), func.length(sb.c.output).label("len_b"),
                sa.c.output_hash.label("a_output_hash"), sa.c.model.label("model_a"),
                sa.c.scenario.label("scenario_a"), sb.c.model.label("model_b"), sb.c.scenario.label("scenario_b"),
            )
            .join(j, j.c.id == m.c.judgement_id)
            .join(sa, sa.c.id == m.c.a_id)
            .join(sb, sb.c.id == m.c.b_id)
            .where(m.c.status == MatchStatus.DONE)
            .order_by(m.c.seq)
        )
        if judge is not None:
            query = query.where(judge_is(j.c.judge, judge))
        with self._read() as conn:
            if tournament_id is not None and conn.execute(select(t.c.id).where(t.c.id == tournament_id)).first() is None:
                raise NotFound(f"no tournament {tournament_id}")
            rows = conn.execute(query.where(counted_in(tournament_id))).all()
        seen: set[tuple[int, int, int]] = set()
        out: list[dict] = []
        for r in rows:
            pair = (r.judgement_id, min(r.a_id, r.b_id), max(r.a_id, r.b_id))
            if pair in seen:
                continue
            seen.add(pair)
            out.append(_export_row(r))
        return out


def _export_row(r: Any) -> dict:
    same_side = r.a_hash == r.a_output_hash
    relabel = {r.judged_a: r.a_id, r.judged_b: r.b_id} if same_side else {r.judged_a: r.b_id, r.judged_b: r.a_id}
    calls = [{**call, "first": relabel.get(call.get("first"), call.get("first"))} for call in json.loads(r.calls)]
    return {
        "judgement_id": r.judgement_id, "match_id": r.match_id, "tournament_id": r.tournament_id, "seq": r.seq,
        "key": r.key, "question_id": r.question_id, "a_id": r.a_id, "model_a": r.model_a, "scenario_a": r.scenario_a,
        "b_id": r.b_id, "model_b": r.model_b, "scenario_b": r.scenario_b, "outcome": r.outcome,
        "consistent": bool(r.consistent), "judge": r.judge, "criteria": r.criteria,
        "template_version": r.template_version, "order_policy": r.order_policy, "calls": calls,
        "input_tokens": r.input_tokens, "output_tokens": r.output_tokens, "cost_usd": r.cost_usd,
        "created_at": r.created_at, "question": r.question,
        "question_b": r.question_b if r.question_b != r.question else None,
        "output_a": r.output_a, "output_b": r.output_b,
        "len_a": r.len_a, "len_b": r.len_b,
    }
