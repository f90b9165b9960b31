"""A judge panel's match: the panel's verdict made of its members', at no cost.

A panel's run (`service.usecases.tournaments`, `leaderboard.panel`) has one run per member judging every
pair under that member's own judgement key, and its own matches. A panel match asks no judge: it
looks up each member's judgement of the pair (under the member's keys, so a verdict any earlier
run of that judge made counts) and, once every member has one, stores the panel's judgement
(judge `panel/<name>`, cost 0) and resolves with it. It records one call, the panel's verdict
(`first` None: no order was shown), whose `members` list each member's judge, judgement id and
verdict (relative to the panel judgement's a), so a panel verdict is explainable. While a member's match of the pair is still active the panel match comes back
shortly; when a member's match ended without a verdict (failed or cancelled), it fails, naming
the member.

`majority`: the members' majority (`leaderboard.panel.majority`). `separate`: the panel's run
copies its first member's verdicts and its copy run k (`spec.layer`) the k-th member's, so the
panel's board pools the members' verdicts.
"""
from __future__ import annotations

import logging

from leaderboard.keys import content_hash, keyed_order, orient
from leaderboard.panel import Aggregation, Panel, majority
from leaderboard.shown import pair_keys
from leaderboard.types import MatchOutcome, Winner
from service.store import MatchContext, NewJudgement, StoredJudgement

from .deps import Deps, fail

log = logging.getLogger(__name__)

WAIT_S = 1.0
"""How long a panel match waits before it looks again for its members' verdicts."""


def panel_key_judge(jury: Panel, member: str | None = None) -> str:
    """What the panel judgement's content key is made with in place of a judge spec: the panel,
    its aggregation and members (a `separate` copy: the one member), so a renamed or changed
    panel never reuses another's verdicts."""
    who = member if member is not None else "+".join(jury.members)
    return f"{jury.judge}\x1f{jury.aggregation.value}\x1f{who}"


async def resolve_panel(deps: Deps, ctx: MatchContext) -> MatchOutcome:
    """Resolve a panel match from its members' judgements (module docstring)."""
    jury = ctx.spec.jury
    assert jury is not None
    store, io = deps.store, deps.io
    members = jury.members
    root = ctx.tournament_id
    if jury.aggregation is Aggregation.SEPARATE:
        members = (members[ctx.spec.layer or 0],)
        if ctx.spec.layer is not None:  # a copy run, under the panel's own run
            root = await io(store.parent_of, ctx.tournament_id)
    found = await _verdicts(deps, ctx, members)
    missing = [m for m in members if m not in found]
    if missing:
        waiting = await io(store.members_waiting, root, ctx.a.id, ctx.b.id)
        # A member's match may have stored its verdict and ended since the look-up above: look
        # again for those no longer waiting (a match stores its verdict before it ends).
        found |= await _verdicts(deps, ctx, [m for m in missing if m not in waiting])
        missing = [m for m in members if m not in found]
        gone = [m for m in missing if m not in waiting]
        if gone:
            await fail(deps, ctx, f"PanelError: no verdict from {', '.join(gone)} on this pair "
                                          "(its match failed or was cancelled)")
            return MatchOutcome.FAILED
    if missing:
        if deps.requeue is None:
            raise RuntimeError("a panel match waits for its members and there is no queue to wait on")
        await deps.requeue(ctx.match_id, WAIT_S, "for its members' verdicts")
        return MatchOutcome.WAITING
    verdicts = {m: orient(Winner(j.outcome), j.a_hash, ctx.a.output) for m, j in found.items()}
    outcome = majority(verdicts.values())
    member = members[0] if jury.aggregation is Aggregation.SEPARATE else None
    keys = pair_keys(panel_key_judge(jury, member), ctx.spec.criteria, ctx.spec.order, ctx.a, ctx.b, ctx.reference)
    said = [{"judge": m, "judgement_id": found[m].id, "winner": verdicts[m].value} for m in members]
    how = "majority" if member is None else "copy"
    reason = f"{how} of " + ", ".join(f"{m}: {verdicts[m].value}" for m in members)
    # One call, the panel's verdict (so judge health reads the panel's ties and lengths), naming its members'.
    calls = [{"first": None, "winner": outcome.value, "reason": reason, "members": said}]
    consistent = all(j.consistent for j in found.values())
    judgement_id, created = await io(store.save_judgement, NewJudgement(
        key=keys.key, judge=jury.judge, criteria=ctx.spec.criteria, template_version=keys.version,
        a_id=ctx.a.id, b_id=ctx.b.id, a_hash=content_hash(ctx.a.output), outcome=outcome, consistent=consistent,
        calls=calls, input_tokens=0, output_tokens=0, cost_usd=0.0, match_id=ctx.match_id,
        order=keyed_order(ctx.spec.criteria, ctx.spec.order),
    ))
    if not created:  # another panel match of the same content stored it first: take its verdict
        stored = await io(store.find_judgement, keys.key)
        assert stored is not None
        outcome = orient(Winner(stored.outcome), stored.a_hash, ctx.a.output)
    await io(store.resolve_match, ctx.match_id, judgement_id, outcome, consistent, made=created)
    return MatchOutcome.JUDGED if created else MatchOutcome.CACHED


async def _verdicts(deps: Deps, ctx: MatchContext, members: list[str] | tuple[str, ...]) -> dict[str, StoredJudgement]:
    """The stored judgement of the pair of each member that has one, under its own keys."""
    found: dict[str, StoredJudgement] = {}
    for member in members:
        keys = pair_keys(member, ctx.spec.criteria, ctx.spec.order, ctx.a, ctx.b, ctx.reference)
        judgement = await deps.io(deps.store.find_judgement, *keys.answering)
        if judgement is not None:
            found[member] = judgement
    return found
