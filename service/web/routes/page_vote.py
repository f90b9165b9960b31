"""The vote page, `/vote`: a question and two anonymous answers side by side, and which is better.

`GET /vote` without a voter shows the sign-in form (a voter key, see `service.web.pages.voter`); with
one, the next pair (`Store.next_vote_pair`: where human votes are fewest, an LLM judge's pair
first, sides at random), four buttons and the keyboard shortcuts `static/vote.js` adds. Every
form POSTs to `/vote`, naming its `action`:

- `sign-in` (`key`): checks the key and keeps it in the cookie; 303 to `/vote`.
- `sign-out`: clears the cookie; 303 to `/vote`.
- `vote` (`left`, `right`, `token`, `verdict`): files the vote through `service.usecases.votes.cast_votes`,
  as `POST /api/votes` does, as `human/<key name>` with a = first = the answer shown left; 303
  to `/vote?voted=<its id>`, which shows the receipt (the two systems, revealed now) above the
  next pair. A refresh never posts again, and a double submit finds the vote stored
  (`created: false`), so it is counted once.

A vote that cannot be filed is a page saying why, and nothing is stored: 401 without a voter,
403 a token that does not match or a key that no longer votes, 404 an unknown submission, 409 a
different verdict on a pair already voted on, 422 an id that is no id or a vote the rules refuse
(different questions, a placeholder), 400 a body that is no form. The page never changes under
its voter (no live script) and is never cached (every load is a new pair).

With JOUST_PRIVATE=1 this page is not behind the site's HTTP Basic prompt (`service.web.auth`): it
asks for its own key, and shows nothing but the sign-in form without one.
"""
from __future__ import annotations

import random
import re
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from leaderboard.vote_pairs import Pair
from service.config import Settings
from service.store import WRITER, NotFound, Store, VoteChanged
from service.usecases.votes import VoteRequest, VotesRefused, cast_votes
from service.web.errors import STATUS_OF_KIND
from service.web.pages.forms import Form, form_of
from service.web.pages.render import mark_of, render
from service.web.pages.vote_view import BUTTONS, SKIP_KEYS, VERDICTS, Receipt, receipt_of
from service.web.pages.voter import (
    COOKIE,
    Voter,
    VoterRefused,
    cookie_voter,
    forget,
    keep,
    pair_token,
    token_matches,
    voter_of,
)
from service.web.routes.common import ID_MAX, get_settings, get_store
from service.web.state import state_of

router = APIRouter(tags=["page"])

TITLE = "Vote"
PATH = "/vote"
SKIP = re.compile(r"(\d{1,10})-(\d{1,10})")


class PageProblem(ValueError):
    """Input the page cannot take; answered with `status` and the message, storing nothing."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


def get_vote_rng(request: Request) -> random.Random:
    """The app's random source for pairs and sides (seeded from `secrets` at startup)."""
    return state_of(request).vote_rng


def parse_id(value: str, what: str) -> int:
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= ID_MAX:
        raise PageProblem(f"{what}: {value[:40]!r} is not a submission id (a whole number from 1 to {ID_MAX})")
    return int(value)


def parse_skip(value: str | None) -> Pair | None:
    """`skip=<id>-<id>`, the pair just skipped; None when absent."""
    if not value:
        return None
    found = SKIP.fullmatch(value)
    if found is None or not all(1 <= int(g) <= ID_MAX for g in found.groups()):
        raise PageProblem(f"skip: {value[:40]!r} is not two submission ids joined by '-'")
    return int(found[1]), int(found[2])


def page(request: Request, store: Store, template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    """A vote page: rendered without the live script, and never cached or answered 304."""
    response = render(request, template, context, mark=mark_of(store), title=TITLE, status=status, live=False)
    del response.headers["etag"]
    response.headers["Cache-Control"] = "no-store"
    return response


def sign_in_page(request: Request, store: Store, message: str | None = None, status: int = 200) -> HTMLResponse:
    """The sign-in form; a refused key's cookie is cleared with it."""
    response = page(request, store, "vote_sign_in.html", {"message": message}, status)
    if COOKIE in request.cookies and status in (401, 403):
        forget(response, request)
    return response


def problem_page(request: Request, store: Store, message: str, status: int) -> HTMLResponse:
    return page(request, store, "vote_problem.html", {"message": message}, status)


def redirect(location: str) -> RedirectResponse:
    response = RedirectResponse(location, status_code=303)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get(PATH, response_class=HTMLResponse, include_in_schema=False)
def vote_page(
    request: Request,
    store: Annotated[Store, Depends(get_store)],
    settings: Annotated[Settings, Depends(get_settings)],
    rng: Annotated[random.Random, Depends(get_vote_rng)],
) -> Response:
    """The next pair for the voter of the cookie (`?voted=` adds that vote's receipt, `?skip=`
    leaves out the pair just skipped), or the sign-in form."""
    try:
        voter = cookie_voter(request)
    except VoterRefused as exc:
        return sign_in_page(request, store, str(exc), 403)
    if voter is None:
        return sign_in_page(request, store)
    params = request.query_params
    try:
        skip = parse_skip(params.get("skip"))
        voted = params.get("voted")
        receipt = None if voted is None else receipt_for(store, voter, parse_id(voted, "voted"))
    except PageProblem as exc:
        return problem_page(request, store, str(exc), exc.status)
    return ballot_page(request, store, settings, rng, voter, receipt, skip)


def receipt_for(store: Store, voter: Voter, judgement_id: int) -> Receipt:
    """The receipt of one of the voter's own votes (404 for anything else)."""
    try:
        judgement, a, b = store.judgement_pair(judgement_id)
    except NotFound:
        judgement = None
    if judgement is None or judgement.judge != voter.judge:
        raise PageProblem(f"you have no vote {judgement_id}", 404)
    return receipt_of(judgement, a, b)


def ballot_page(request: Request, store: Store, settings: Settings, rng: random.Random, voter: Voter,
                receipt: Receipt | None, skip: Pair | None) -> HTMLResponse:
    """The voter's next pair (or the news that none is left), under the receipt of the last vote."""
    pair = store.next_vote_pair(voter.judge, rng, skip=skip)
    context: dict[str, Any] = {
        "voter": voter.name, "cast": store.votes_cast(voter.judge), "receipt": receipt, "pair": pair,
        "buttons": BUTTONS, "skip_keys": SKIP_KEYS, "token": "", "skip": PATH,
    }
    if pair is not None:
        context["token"] = pair_token(settings.api_key or "", voter, pair.left.id, pair.right.id)
        context["skip"] = PATH + "?" + urlencode({"skip": f"{pair.left.id}-{pair.right.id}"})
    return page(request, store, "vote.html", context)


@router.post(PATH, response_class=HTMLResponse, include_in_schema=False)
def vote_form(
    request: Request,
    form: Annotated[Form, Depends(form_of)],
    store: Annotated[Store, Depends(get_store)],
    settings: Annotated[Settings, Depends(get_settings)],
) -> Response:
    """Sign in, sign out, or cast a vote (see the module docstring)."""
    if form.problem is not None:
        return problem_page(request, store, form.problem, 400)
    action = form.get("action")
    if action == "sign-in":
        return sign_in(request, store, form)
    if action == "sign-out":
        response = redirect(PATH)
        forget(response, request)
        return response
    if action == "vote":
        return cast(request, store, settings, form)
    return problem_page(request, store, f"action: {action[:40]!r} is not one of sign-in, sign-out, vote", 400)


def sign_in(request: Request, store: Store, form: Form) -> Response:
    key = form.get("key").strip()
    try:
        voter = voter_of(request, key)
    except VoterRefused as exc:
        return sign_in_page(request, store, str(exc), 403 if key else 422)
    response = redirect(PATH)
    keep(response, request, voter)
    return response


def cast(request: Request, store: Store, settings: Settings, form: Form) -> Response:
    """File the form's vote, or answer why not (nothing stored)."""
    try:
        voter = cookie_voter(request)
    except VoterRefused as exc:
        return sign_in_page(request, store, f"{exc}; your vote was not stored", 403)
    if voter is None:
        return sign_in_page(request, store, "sign in with your voter key to vote; your vote was not stored", 401)
    try:
        left, right = parse_id(form.get("left"), "left"), parse_id(form.get("right"), "right")
        if not token_matches(settings.api_key or "", voter, left, right, form.get("token")):
            raise PageProblem("this vote's form was not the one shown to you (its token does not match): "
                              "reload the page and vote again", 403)
        verdict = VERDICTS.get(form.get("verdict"))
        if verdict is None:
            raise PageProblem(f"verdict: {form.get('verdict')[:40]!r} is not one of {', '.join(VERDICTS)}")
        stored = file_vote(voter, VoteRequest(voter=voter.name, a=left, b=right, verdict=verdict, first=left), store)
    except PageProblem as exc:
        return problem_page(request, store, str(exc), exc.status)
    return redirect(PATH + "?" + urlencode({"voted": stored}))


def file_vote(voter: Voter, vote: VoteRequest, store: Store) -> int:
    """Cast one vote as `POST /api/votes` does, written as the voter's key; its judgement's id."""
    writer = WRITER.set(voter.name)
    try:
        [stored] = cast_votes(store, [vote])
    except VotesRefused as exc:
        raise PageProblem("this pair cannot be voted on: " + "; ".join(p.message for p in exc.problems),
                          STATUS_OF_KIND[exc.kind]) from None
    except VoteChanged as exc:
        raise PageProblem(f"you already voted differently on this pair: {exc}", 409) from None
    finally:
        WRITER.reset(writer)
    return stored.id
