"""Choosing a judge from a "provider/model" spec, and keeping one per spec per worker process.

`PROVIDERS` is a plain dict from provider name to a factory `(model, settings) -> Judge`; a new
provider is one entry here and one module in `workers.providers`. Factories import their module
(and so their SDK) only when called.

The service never imports this module: it checks the "provider/model" shape of a spec, and
whether this process or a live worker holds its credentials (`service.credentials`). A worker
checks its own again before building a judge: without them, `build_judge` raises at once naming
the variable (a clear failure of the match, and nothing sent to the provider).
"""
from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable

from service.config import Settings
from workers.errors import PermanentJudgeError
from workers.judge import Judge

_PROVIDER = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def _anthropic(model: str, settings: Settings) -> Judge:
    from workers.providers.anthropic_judge import AnthropicJudge

    return AnthropicJudge(model, settings)


def _openai(model: str, settings: Settings) -> Judge:
    from workers.providers.openai_judge import OpenAIJudge

    return OpenAIJudge(model, settings)


def _offline(name: str, settings: Settings) -> Judge:
    from workers.providers.offline_judge import OfflineJudge

    return OfflineJudge(name, settings)


PROVIDERS: dict[str, Callable[[str, Settings], Judge]] = {
    "anthropic": _anthropic,
    "openai": _openai,
    "offline": _offline,
}


def parse_judge_spec(spec: str) -> tuple[str, str]:
    """A "provider/model" spec → (provider, model); the model may itself contain "/".

    Raises ValueError naming what is wrong with the spec (TypeError if it is not a string).
    """
    if not isinstance(spec, str):
        raise TypeError(f"judge spec must be a string like 'anthropic/<model>', not {spec!r}")
    provider, slash, model = spec.partition("/")
    if not slash:
        raise ValueError(f"judge spec {spec!r} must look like 'provider/model'")
    if not _PROVIDER.fullmatch(provider):
        raise ValueError(f"judge spec {spec!r}: provider {provider!r} must be lower-case letters, digits, '_', '-' or '.'")
    if not model or model != model.strip() or any(c.isspace() for c in model):
        raise ValueError(f"judge spec {spec!r}: the model name must be non-empty without spaces")
    return provider, model


def is_known_judge(spec: str) -> bool:
    """Whether `spec` is well formed and names a registered provider (imports no SDK)."""
    try:
        provider, _ = parse_judge_spec(spec)
    except (ValueError, TypeError):
        return False
    return provider in PROVIDERS


def build_judge(spec: str, settings: Settings) -> Judge:
    """A new judge for `spec`; `PermanentJudgeError` for a malformed spec, an unknown provider,
    or credentials these settings lack (naming the variable, and this host)."""
    try:
        provider, model = parse_judge_spec(spec)
    except (ValueError, TypeError) as exc:
        raise PermanentJudgeError(str(exc)) from None
    factory = PROVIDERS.get(provider)
    if factory is None:
        known = ", ".join(sorted(PROVIDERS))
        raise PermanentJudgeError(f"unknown judge provider {provider!r} in {spec!r} (known: {known})")
    missing = settings.reach().missing(spec)
    if missing is not None:
        raise PermanentJudgeError(f"{missing} in the environment of the workers (this one, on "
                                  f"{socket.gethostname()}, holds none)")
    return factory(model, settings)


class JudgePool:
    """One judge per spec, built on first use and kept for the life of a worker process.

    Build one pool at worker start-up with the process's settings and pass it to the jobs;
    `aclose()` on shutdown closes the judges' clients.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._judges: dict[str, Judge] = {}
        self._building = threading.Lock()

    def get(self, spec: str) -> Judge:
        """The judge for `spec`, built once even when asked from several threads at once (the
        engine builds judges off its loop); raises like `build_judge`."""
        judge = self._judges.get(spec)
        if judge is None:
            with self._building:
                judge = self._judges.get(spec)
                if judge is None:
                    judge = self._judges[spec] = build_judge(spec, self.settings)
        return judge

    def __len__(self) -> int:
        return len(self._judges)

    async def aclose(self) -> None:
        """Close every judge that holds a client (those with an `aclose` method)."""
        judges, self._judges = list(self._judges.values()), {}
        for judge in judges:
            close = getattr(judge, "aclose", None)
            if close is not None:
                await close()
