"""The columns of a battle file: what `joust import battles` reads, and `joust export
judgements` writes, so that an export imported into an empty store loses nothing.

One row is one verdict on two submissions, side a and side b. Named once here, read by
`service.usecases.importers.verdicts` and written by `service.usecases.exporters`:

- sides: `model_a, model_b` (Chatbot Arena), or `left, right` (LLMFAO: display positions, so
  left was shown first), or `model_x, model_y`; `scenario_a, scenario_b` (default "default");
  `output_a, output_b`: the texts judged (empty or absent: a placeholder submission).
- question: `question_id`, else `prompt`, else `id` (else the row is its own question);
  `question` (else `prompt`, else the id: no text, which takes the text known for the question
  and is filled in by a file that gives it, see `service.usecases.importers.battles`) is the text;
  `question_b` side b's text when its submission holds another (an export writes it where the
  two differ: one question's submissions may hold different texts); `turn` N > 1 makes the question
  `<question_id>#turn<N>` (a later turn is another question; turn 1 keeps the id).
- verdict: `winner` model_a | model_b | tie | "tie (bothbad)" | "tie (inconsistent)" (MT-Bench:
  the two orders disagreed, so `consistent` false), or left | right; `outcome` A | B | TIE
  (must agree with `winner`); `consistent` true | false (false needs a tie, unless the row's
  calls do not show two orders: a panel's verdict is inconsistent when a member's were).
- calls: `calls` (a JSON list, in CSV a JSON text) as joust stores them, each call's `first`
  naming the side shown first by its export id (`a_id` or `b_id`) or as "a" | "b"; CSV also
  has `call<i>_first, call<i>_winner, call<i>_reason` for people, which must agree with `calls`
  and stand for it when it is absent. Without calls a row is one call: `first` (a | b |
  model_a | model_b) says which side was shown first, `reason` is its reason, and the row's
  other plain values are kept with it (`fields`); an inconsistent tie without calls has none
  (the file does not say what each order said). A row its own calls contradict is refused
  (`verdicts._check_calls`): consistent, every call said the winner; inconsistent, the calls
  that show their order do not all agree.
- who and how: `judge` or `voter` (the row's judge, unless --judge names one: see
  `service.usecases.importers.battles`); `criteria`, `template_version` (a row with one is a joust
  judgement: its judge's name is kept as written), `order_policy` (both | single), `key`
  (joust's judgement key, 64 hex digits: the verdict's identity, so importing an export into
  the store it came from adds nothing), `created_at` (seconds since the epoch),
  `input_tokens`, `output_tokens`, `cost_usd` (empty: a judge without a price).
- written by the export, derived from the above, read for nothing: `judgement_id`, `match_id`,
  `tournament_id`, `seq`, `time`, `label_a`, `label_b`, `order`, `len_a`, `len_b`; LLMFAO's
  `worker` is kept with the verdict. Any other column is reported as ignored.
"""
from __future__ import annotations

import re
from typing import Any

WINNER_NAMES = {"A": "model_a", "B": "model_b", "TIE": "tie"}
INCONSISTENT_TIE = "tie (inconsistent)"
CALL_FIELDS = ("first", "winner", "reason")
"""The call fields a CSV export also spells out per call (`call<i>_<field>`)."""
FLAT_CALL = re.compile(r"call(\d+)_(first|winner|reason)")

# What `joust export judgements` writes, in order: these in both formats; CSV adds the
# call<i>_* columns, then TEXTS and `calls`; JSONL adds `calls`, TEXTS and DERIVED.
EXPORTED = [
    "judgement_id", "match_id", "tournament_id", "seq", "key", "question_id", "a_id", "model_a", "scenario_a", "b_id",
    "model_b", "scenario_b", "winner", "outcome", "consistent", "judge", "criteria", "template_version",
    "order_policy", "input_tokens", "output_tokens", "cost_usd", "created_at",
]
TEXTS = ["question", "question_b", "output_a", "output_b"]
DERIVED = frozenset({"judgement_id", "match_id", "tournament_id", "seq", "time", "label_a", "label_b", "order",
                     "len_a", "len_b"})
KNOWN = frozenset(EXPORTED) | frozenset(TEXTS) | DERIVED | {
    "left", "right", "model_x", "model_y", "prompt", "id", "turn", "first", "voter", "reason", "calls", "worker"}


def cell(value: Any) -> str:
    """A value as a CSV cell: empty for None, true/false for a flag, else its text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def ignored(columns: set[str]) -> list[str]:
    """The columns (or JSON keys) the importer does not understand, sorted."""
    return sorted(c for c in columns if c not in KNOWN and not FLAT_CALL.fullmatch(c))
