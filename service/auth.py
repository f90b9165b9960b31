"""Who may write: requests that change something carry `Authorization: Bearer <api key>`.

Reads are open. A missing (or non-Bearer) Authorization header is a 401 with
`WWW-Authenticate: Bearer`: the client did not say who it is. A key that does not match is a 403:
the client said, and it is not allowed. Keys are compared with `hmac.compare_digest` on bytes,
so the comparison takes the same time wherever the first difference is.
"""
from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from service.routes.common import ApiError

_bearer = HTTPBearer(auto_error=False, description="The API key `joust up` prints (or JOUST_API_KEY).")


def keys_match(given: str, expected: str) -> bool:
    """Constant-time comparison that also accepts non-ASCII input."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def require_api_key(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """Dependency for write routes: 401 without a Bearer key, 403 with the wrong one."""
    expected: str = request.app.state.settings.api_key
    if credentials is None or not credentials.credentials:
        raise ApiError(
            401,
            "authentication required: send the header 'Authorization: Bearer <api key>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not keys_match(credentials.credentials, expected):
        raise ApiError(403, "the API key is not valid")
