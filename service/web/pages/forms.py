"""The fields of a form a page POSTs (`application/x-www-form-urlencoded`), read here rather than
by Starlette's form parser, which needs the python-multipart package for this one format.

The body is already bounded by the app's body limit (`service.web.app.BodyLimit`); a page's forms hold
a handful of fields, so more than `MAX_FIELDS` is refused rather than parsed.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from fastapi import Request

FORM_TYPE = "application/x-www-form-urlencoded"
MAX_FIELDS = 20


@dataclass(frozen=True)
class Form:
    """A form's fields (the first value of each name), or `problem`: why the body is no form."""

    fields: Mapping[str, str] = field(default_factory=dict)
    problem: str | None = None

    def get(self, name: str) -> str:
        """The field's value; empty when it was not sent."""
        return self.fields.get(name, "")


async def form_of(request: Request) -> Form:
    """The request's form (a dependency: a page answers a `problem` with its own page, not JSON)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != FORM_TYPE:
        return Form(problem=f"send the page's form ({FORM_TYPE}), not {kind or 'an untyped body'}")
    try:
        text = (await request.body()).decode("utf-8")
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=False, max_num_fields=MAX_FIELDS,
                          encoding="utf-8", errors="strict")
    except (UnicodeDecodeError, ValueError):
        return Form(problem=f"the form is not readable: UTF-8 text of at most {MAX_FIELDS} fields")
    fields: dict[str, str] = {}
    for name, value in pairs:
        fields.setdefault(name, value)
    return Form(fields)
