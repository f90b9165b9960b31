"""What can go wrong when asking a judge, as exceptions the caller can act on.

    JudgeError                  anything a judge call can raise on purpose
    ├── TransientJudgeError     worth retrying later: rate limited (429), overloaded (529), 5xx,
    │                           timeouts, connection errors. `retry_after` (seconds, capped) is
    │                           the provider's hint when it gave one, else None; `status` the
    │                           HTTP status when there was one.
    ├── PermanentJudgeError     retrying cannot help: bad credentials, bad request, unknown model
    │                           or provider, a missing SDK.
    ├── JudgeDown               nothing was sent: the judge's circuit breaker (`workers.breaker`)
    │                           is open after its probes failed too, so the call fails at once
    │                           (its match fails with the reason; the run's streak stops it).
    └── VerdictParseError       the judge answered, but neither its reply nor its reply to the
                                reminder held a verdict. `raw` is the last reply, `replies` all of
                                them. Record it as an error; never read it as a tie.

Errors are never signalled with sentinel strings. Every class pickles with its fields, so they
survive a trip through a job queue.
"""
from __future__ import annotations


class JudgeError(Exception):
    """Base of every error a judge raises on purpose."""


class TransientJudgeError(JudgeError):
    """The provider could not answer now; retry the match later (after `retry_after` if set).
    `status` is the HTTP status when there was one: 429 and 529 slow every worker down."""

    def __init__(self, message: str, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.retry_after, self.status))


class PermanentJudgeError(JudgeError):
    """The request itself is wrong (credentials, model, provider); retrying repeats the failure."""


class JudgeDown(JudgeError):
    """The judge failed every call lately, its probes included: no call was sent. `spec` names
    the judge."""

    def __init__(self, message: str, spec: str = "") -> None:
        super().__init__(message)
        self.spec = spec

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.spec))


class VerdictParseError(JudgeError):
    """No verdict could be read from the judge's replies, even after the reminder. The tokens
    are what those paid replies used: no judgement will record them, the match must."""

    def __init__(
        self, message: str, raw: str = "", replies: tuple[str, ...] = (), input_tokens: int = 0, output_tokens: int = 0
    ) -> None:
        super().__init__(message)
        self.raw = raw
        self.replies = replies or ((raw,) if raw else ())
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.raw, self.replies, self.input_tokens, self.output_tokens))
