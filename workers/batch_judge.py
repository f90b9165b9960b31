"""Judging a match through the Message Batches API: replay its criteria set until every call
it makes has a stored result.

A batch request cannot be awaited: its reply comes minutes or hours later, in another process
maybe. So the match's criteria set (any of them: `workers.criteria`) runs with a `BatchJudge`,
whose `complete(system, messages)` names the request by a hash of its content (`custom_id_of`)
and answers from the store: the stored reply when the request succeeded, `PermanentJudgeError`
when it errored for good, otherwise it notes the request as needed and raises `Suspended`. The
random order of the calls is seeded by the match's key, as live, so every replay asks exactly
the same requests; `gather_settled` lets both orders of a pair note theirs before the
suspension propagates, so both go in the same batch. A reminder re-ask carries the first
reply, so it is a new request, asked by a later replay and sent in a later batch.

`replay(deps, match_id)` runs one match once: a stored judgement answers it for free; a replay
that completes stores the judgement (priced at the batch price) and resolves the match, as live;
one that suspends stores its needed requests once per custom_id (twins share them), having
reserved their estimated cost under the run's budget, and makes the match wait on them; an
unreadable verdict or a permanent error fails the match with its reason, never as a tie.
Scores the compqa and factsim sets keep on the way are in the score book, so replays are cheap.

Spend: a judgement records what its calls cost at the batch price. A score kept by a replay
that then suspends is charged to the match at once (the next replay finds it stored and reuses
it for free, so no judgement will record it); a failed match is charged what its replay read,
as live. A twin whose judgement was stored first is charged nothing: the request was paid once.
"""
from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from leaderboard.consistency import match_seed
from leaderboard.pricing import BATCH_DISCOUNT, cost_usd, estimate_tokens
from leaderboard.types import MatchOutcome
from service.store import KeptScore, MatchContext, NeededRequest, RequestStatus, StoredRequest

from .budget import BUDGET, Meter, charge_unrecorded, stop_for
from .criteria import criteria_set
from .errors import PermanentJudgeError, VerdictParseError
from .judge import Completion, Judge, JudgeReply, Message, compare_with_reminder
from .match import Deps, OffLoopScores, fail, open_match, record
from .registry import parse_judge_spec

Lookup = Callable[[str], Awaitable[StoredRequest | None]]


class Suspended(Exception):
    """The replay needs results that have not come yet (its `BatchJudge.needed`)."""


@dataclass(frozen=True)
class Needed:
    """A request a replay asked for and found no result of; `seen` is its stored row, if any."""

    custom_id: str
    params: str  # JSON, as submitted
    size: int
    seen: StoredRequest | None

    @property
    def new(self) -> bool:
        """Not yet asked for, or given up before: storing it means submitting (and paying) it."""
        return self.seen is None or self.seen.reopenable


def request_params(model: str, system: str, messages: list[Message], max_tokens: int) -> dict[str, Any]:
    """The Messages API params of one call, as a batch request carries them."""
    return {"model": model, "max_tokens": max_tokens, "system": system, "messages": messages}


def custom_id_of(params: dict[str, Any]) -> str:
    """The request's name: sha256 of its canonical JSON (64 hex characters, as the API allows).
    The same call in any run, any process, has the same name: it is stored and paid once."""
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class BatchJudge:
    """`judge` (an `anthropic/...` judge) as a batch replay uses it (see the module docstring).
    Everything but `complete` and `compare` is the wrapped judge's own, as with `GatedJudge`."""

    def __init__(self, judge: Judge, model: str, max_tokens: int, lookup: Lookup, meter: Meter) -> None:
        self._judge = judge
        self.model = model
        self.max_tokens = max_tokens
        self.lookup = lookup
        self.meter = meter
        self.needed: dict[str, Needed] = {}

    async def complete(self, system: str, messages: list[Message]) -> Completion:
        params = request_params(self.model, system, messages, self.max_tokens)
        custom_id = custom_id_of(params)
        found = await self.lookup(custom_id)
        if found is not None and found.status is RequestStatus.SUCCEEDED:
            self.meter.add(found.input_tokens, found.output_tokens)
            return Completion(found.text, found.input_tokens, found.output_tokens, 0.0)
        if found is not None and found.permanent:
            raise PermanentJudgeError(f"anthropic batch request {custom_id[:12]}… errored: {found.error}")
        body = json.dumps(params, sort_keys=True)
        size = len(json.dumps({"custom_id": custom_id, "params": params}).encode("utf-8"))  # as sent
        self.needed[custom_id] = Needed(custom_id, body, size, found)
        raise Suspended(custom_id)

    async def compare(self, question: str, first: str, second: str) -> JudgeReply:
        return await compare_with_reminder(self.complete, question, first, second)

    def __getattr__(self, name: str) -> Any:
        if name == "_judge":
            raise AttributeError(name)
        return getattr(self._judge, name)


@dataclass
class KeptScores:
    """The score book, noting the scores this replay kept (created), whose calls' tokens their
    detail records: a replay that suspends afterwards charges them to its match."""

    book: OffLoopScores
    kept: list[tuple[int, int]] = field(default_factory=list)

    def exclusive(self, key: str) -> AbstractAsyncContextManager[None]:
        return self.book.exclusive(key)  # shared with live workers scoring the same submission

    async def find_score(self, submission_id: int, judge: str, criteria: str) -> KeptScore | None:
        return await self.book.find_score(submission_id, judge, criteria)

    async def keep_score(self, submission_id: int, judge: str, criteria: str, total: float, detail: dict) -> KeptScore:
        found = await self.book.keep_score(submission_id, judge, criteria, total, detail)
        if found.created:
            self.kept.append((int(detail.get("input_tokens") or 0), int(detail.get("output_tokens") or 0)))
        return found


async def replay(deps: Deps, match_id: int) -> MatchOutcome:
    """Run one match of a batch run as far as the stored results allow (module docstring)."""
    store, io = deps.store, deps.io
    opened = await open_match(deps, match_id)
    if isinstance(opened, MatchOutcome):
        return opened
    ctx, key, criteria, version = opened.ctx, opened.key, opened.criteria, opened.version
    table = deps.settings.price_table()
    meter = Meter()
    scores = KeptScores(OffLoopScores(store, io, deps.leases))
    judge: BatchJudge | None = None
    try:
        _, model = parse_judge_spec(ctx.spec.judge)
        judge = BatchJudge(deps.judges.get(ctx.spec.judge), model, deps.settings.judge_max_tokens,
                           lambda custom_id: io(store.batch_request, custom_id), meter)
        judged = await criteria_set(criteria)(
            judge, ctx, ctx.spec.order, random.Random(match_seed(key)), scores=scores,
        )
    except Suspended:
        assert judge is not None
        await _charge_kept(deps, ctx, scores)
        return await _wait(deps, ctx, judge)
    except (PermanentJudgeError, VerdictParseError, ValueError) as exc:
        await charge_unrecorded(store, io, table, ctx, meter, BATCH_DISCOUNT)
        await fail(deps, ctx, f"{type(exc).__name__}: {exc}")
        return MatchOutcome.FAILED
    await record(deps, ctx, key, criteria, version, judged, Meter(), discount=BATCH_DISCOUNT)
    return MatchOutcome.JUDGED


async def _charge_kept(deps: Deps, ctx: MatchContext, scores: KeptScores) -> None:
    if not scores.kept:
        return
    cost = cost_usd(ctx.spec.judge, sum(i for i, _ in scores.kept), sum(o for _, o in scores.kept),
                    deps.settings.price_table())
    await deps.io(deps.store.charge_match, ctx.match_id, None if cost is None else cost * BATCH_DISCOUNT,
                  calls=len(scores.kept))


async def _wait(deps: Deps, ctx: MatchContext, judge: BatchJudge) -> MatchOutcome:
    """Reserve the new requests' estimated cost, store them and make the match wait on them;
    stop the run for its budget when they do not fit (nothing is stored then)."""
    reserved = await _reserve(deps, ctx, [n for n in judge.needed.values() if n.new])
    if reserved is None:
        await stop_for(deps.store, deps.io, ctx, BUDGET)
        return MatchOutcome.STOPPED
    spec = ctx.spec.judge
    needs = [NeededRequest(n.custom_id, spec, judge.model, n.params, n.size,
                           ctx.tournament_id if n.custom_id in reserved else None, reserved.get(n.custom_id))
             for n in judge.needed.values()]
    created = await deps.io(deps.store.wait_on_requests, ctx.match_id, needs)
    if deps.spend is not None:
        for custom_id, usd in reserved.items():
            if created is None or custom_id not in created:  # someone else stored it first: not ours to pay
                await deps.spend.settle(ctx.tournament_id, usd, 0.0)
    return MatchOutcome.WAITING if created is not None else MatchOutcome.SKIPPED


async def _reserve(deps: Deps, ctx: MatchContext, new: list[Needed]) -> dict[str, float] | None:
    """Reserve each new request's largest cost (its prompt's estimate in, max_tokens out, at
    the batch price) under the run's budget: custom_id → USD reserved ({} without a budget), or
    None when one did not fit (what was reserved here is released)."""
    budget, spend = ctx.spec.budget, deps.spend
    if budget is None or spend is None:
        return {}
    got: dict[str, float] = {}
    table = deps.settings.price_table()
    for need in new:
        params = json.loads(need.params)
        tokens = estimate_tokens(params["system"]) + sum(estimate_tokens(m["content"]) for m in params["messages"])
        cost = cost_usd(ctx.spec.judge, tokens, params["max_tokens"], table)
        if cost is None:
            continue
        if not await spend.reserve(ctx.tournament_id, float(budget), cost * BATCH_DISCOUNT):
            for usd in got.values():
                await spend.settle(ctx.tournament_id, usd, 0.0)
            return None
        got[need.custom_id] = cost * BATCH_DISCOUNT
    return got
