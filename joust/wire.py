"""The wire under `joust.Client`: the TLS context its HTTP client opens with and how a request's
body and filters are put in JSON.

Kept apart from `joust.client` so that the module whose docstrings are the client's reference
(mkdocstrings renders `joust.Client`) holds the API itself, not the plumbing under it.
"""
from __future__ import annotations

import functools
import ssl
import sys
from collections.abc import Iterable
from typing import Any

import httpx


def tls(url: str) -> ssl.SSLContext:
    """The TLS context of a client of `url`. Reading the CA bundle takes about 20 ms, which every
    command of the CLI would pay: an https URL gets the default context (httpx's: certifi's CAs, or
    SSL_CERT_FILE / SSL_CERT_DIR), built once per process; a plain http URL one that trusts no CA, so
    that it would refuse, never skip, verification if TLS were ever asked of it."""
    return default_tls() if url.lower().startswith("https:") else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@functools.cache
def default_tls() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def json_default(value: Any) -> Any:
    """numpy scalars (a DataFrame's cells) as plain numbers; anything else is not JSON."""
    numpy = sys.modules.get("numpy")  # a numpy scalar comes from a numpy already imported
    if numpy is not None and isinstance(value, numpy.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def as_list(values: Iterable[str] | str | None) -> Any:
    """A filter as a JSON list; a lone string is passed as it is, for the API to refuse by name."""
    return values if values is None or isinstance(values, str) else list(values)
