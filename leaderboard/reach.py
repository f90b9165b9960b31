"""Which judges a process can call: the one rule of what each judge provider needs, over plain
facts of what is configured (never a key), so that a worker can tell the API what it reaches.
`service.config.Settings.reach` builds one from a process's settings."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Reach:
    """Whether ANTHROPIC_API_KEY is set (and a custom ANTHROPIC_BASE_URL, for the message),
    whether OPENAI_BASE_URL or OPENAI_API_KEY is, and the `openai/` judges with a server or key
    of their own (JOUST_JUDGE_ENDPOINTS)."""

    anthropic: bool = False
    anthropic_base_url: bool = False
    openai: bool = False
    openai_judges: tuple[str, ...] = ()

    def missing(self, judge: str) -> str | None:
        """None when `judge` can be called with these settings; else what it lacks, naming the
        variable to set. An `anthropic/` judge needs ANTHROPIC_API_KEY (also with a custom
        ANTHROPIC_BASE_URL, whose server the SDK sends it to); an `openai/` judge needs a server
        (OPENAI_BASE_URL or its own base_url in JOUST_JUDGE_ENDPOINTS; a key is optional there)
        or, for OpenAI itself, a key (OPENAI_API_KEY or its own); an `offline/` judge nothing."""
        provider = judge.partition("/")[0]
        if provider == "anthropic" and not self.anthropic:
            where = " (the key the server at ANTHROPIC_BASE_URL expects)" if self.anthropic_base_url else ""
            return f"the judge {judge!r} needs an Anthropic API key: set ANTHROPIC_API_KEY{where}"
        if provider == "openai" and not (self.openai or judge in self.openai_judges):
            return (f"the judge {judge!r} has no server: set OPENAI_BASE_URL (an OpenAI-compatible server such as "
                    f"vLLM or Ollama) or give {judge!r} a base_url in JOUST_JUDGE_ENDPOINTS; for OpenAI itself, "
                    "set OPENAI_API_KEY")
        return None

    def as_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Reach | None:
        """What `as_json` wrote; None when it cannot be read (a worker of another version)."""
        try:
            data = json.loads(raw)
            # a tuple of three, not a list: mypy then knows *flags below leaves openai_judges free
            flags = (data["anthropic"], data["anthropic_base_url"], data["openai"])
            judges = data["openai_judges"]
            if not all(isinstance(x, bool) for x in flags) or not isinstance(judges, list):
                return None
            return cls(*flags, openai_judges=tuple(str(x) for x in judges))
        except (ValueError, TypeError, KeyError):
            return None
