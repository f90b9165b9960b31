"""Submissions: generator outputs sent one at a time or in batches, listed with filters.

A batch is stored all or nothing (the store writes it in one transaction): a conflict on any
item rejects the whole batch, so a client can fix it and send the same batch again. An output may
be a conversation (a list of `{role, content}` turns); a question has one reference answer, which
its submissions may state (a different one is a 422 naming the question).
"""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import TypeAdapter

from leaderboard.conversation import assistant_text, turns_of
from leaderboard.keys import default_question_id
from service.config import Settings
from service.store import NewSubmission, ReferenceMismatch, Store
from service.web.api_models import SubmissionIn
from service.web.api_responses import SubmissionOut, SubmissionRef, SubmissionsCreated, SubmissionsOut
from service.web.auth import require_submit
from service.web.routes.common import (
    ApiError,
    FilterText,
    error_responses,
    get_settings,
    get_store,
    id_path,
    inlined,
    json_body,
    parse_batch,
    request_body,
)
from service.web.routes.pagination import Window, window

router = APIRouter(prefix="/api/submissions", tags=["submissions"], responses=error_responses(422))

_ONE = TypeAdapter(SubmissionIn)
_MANY = TypeAdapter(list[SubmissionIn])
# The body the route reads itself (see routes.common): one submission or a non-empty array.
_BODY = request_body({"anyOf": [inlined(_ONE.json_schema()),
                                 {"type": "array", "minItems": 1, "items": inlined(_ONE.json_schema())}]})


def to_new(item: SubmissionIn) -> NewSubmission:
    """A validated request item as the store's input, with the defaults filled in."""
    question = item.question or ""  # set by SubmissionIn's validation (a conversation's first turn)
    turns = None if isinstance(item.output, str) else turns_of([turn.model_dump() for turn in item.output])
    return NewSubmission(
        question_id=item.question_id if item.question_id is not None else default_question_id(question),
        question=question,
        model=item.model,
        scenario=item.scenario,
        output=item.output if turns is None else assistant_text(turns),
        metadata=item.metadata or {},
        reference=item.reference,
        turns=turns,
    )


def parse_submissions(body: Any, max_batch: int) -> list[SubmissionIn]:
    """One object or a non-empty array of at most `max_batch` objects."""
    return parse_batch(body, _ONE, _MANY, what="submission", max_batch=max_batch, root="submissions")[0]


@router.post(
    "",
    status_code=201,
    response_model=SubmissionsCreated,
    responses=error_responses(400, 401, 403, 409, 413, 422),
    dependencies=[Depends(require_submit)],
    openapi_extra=_BODY,
)
def create_submissions(
    body: Annotated[Any, Depends(json_body)],
    store: Annotated[Store, Depends(get_store)],
    settings: Annotated[Settings, Depends(get_settings)],
) -> SubmissionsCreated:
    """Store one submission or a batch; the same content again answers `created: false`."""
    items = parse_submissions(body, settings.max_batch)
    try:
        results = store.add_submissions([to_new(item) for item in items])
    except ReferenceMismatch as exc:  # nothing stored: the batch is one transaction
        raise ApiError(422, str(exc), details=[{"path": "reference", "message": str(exc)}]) from None
    return SubmissionsCreated(submissions=[SubmissionRef(id=i, created=c) for i, c in results])


@router.get("", response_model=SubmissionsOut)
def list_submissions(
    store: Annotated[Store, Depends(get_store)],
    page: Annotated[Window, Depends(window)],
    response: Response,
    model: Annotated[FilterText | None, Query(description="only this generator model")] = None,
    scenario: Annotated[FilterText | None, Query(description="only this prompt scenario")] = None,
    question_id: Annotated[FilterText | None, Query(description="only answers to this question")] = None,
) -> SubmissionsOut:
    """Submissions in id order, filtered by model, scenario and question id, a page at a time."""
    rows = store.list_submissions(
        model=model, scenario=scenario, question_id=question_id, limit=page.fetch, offset=page.offset
    )
    shown, following = page.cut(rows, response)
    return SubmissionsOut(submissions=[SubmissionOut(**row.as_json()) for row in shown], next=following)


@router.get("/{submission_id}", response_model=SubmissionOut, responses=error_responses(404, 422))
def get_submission(
    submission_id: Annotated[int, id_path("submission")], store: Annotated[Store, Depends(get_store)]
) -> SubmissionOut:
    """One submission with its output, as a row of the list shows it: what a judgement's side
    (`a.id`, `b.id`) was."""
    return SubmissionOut(**store.get_submission(submission_id).as_json())
