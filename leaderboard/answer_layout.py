"""How a comparative answer is laid out: introduction, aspects, final choice, sentences.

Answers come as markdown (headings, bold labels, lists) or as the same text flattened onto one
line, newlines turned into runs of spaces (as in the Comparative-QA evaluation tables); both
read alike. Sections are recognised by their titles ("Summary", "Main Aspects of Comparison",
"Best Option", "Used Arguments"); everything else that is labelled, listed or headed is an
aspect. The rules of `leaderboard.rubric` read this layout, never the raw text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_INTRO = re.compile(r"^(summary|introduction|overview|background)$")
_BODY = re.compile(r"\b(aspects|comparison|comparative|differences|similarities|versus|vs|breakdown)\b"
                   r"|^(main |key )?(arguments|factors)$")
_FINAL = re.compile(r"^(the )?(best|better|final|preferred|recommended)( option| choice| answer| pick)|"
                    r"^(winner|verdict|recommendation|final (verdict|answer|choice))$")
_APPENDIX = re.compile(r"^(list of )?(used arguments|arguments used|references|sources|citations)\b")
_CONCLUSION = re.compile(r"^(in )?(conclusion|summary of|final thoughts|overall|bottom line)\b")
_SECTION_START = re.compile(r"^\W*(summary|introduction|overview|conclusion|(the )?best option)\b\W*", re.IGNORECASE)
_MARK = r"(?:[-*•+–]|‚Ä¢|\d{1,2}[.)])"  # "‚Ä¢" is "•" read in the wrong encoding
_BULLET = re.compile(rf"^{_MARK}\s+(.*)$")
_HEADING_MD = re.compile(r"^#{1,6}\s*(.+?)\s*#*$")
_BOLD_PREFIX = re.compile(r"^\*\*([^*]{1,80}?)\*\*\s*:?\s*(.*)$")
_LABEL = re.compile(r"^\**([^:*.!?]{1,50}?)\**\s*:\s*\**\s*(.*)$")
_REFERENCE = re.compile(r"\[[^\]]{0,20}\]\s*")
_WORD = re.compile(r"[a-z0-9][a-z0-9'+#-]*")
_ABBREVIATION = re.compile(r"\b(e\.g|i\.e|etc|vs|mr|mrs|dr|st|inc|ltd|jr|sr|approx|no|u\.s)\.$", re.IGNORECASE)
CHOICE_PROSE = re.compile(
    r"\b(is|are|remains?|emerges? as|would be)\s+(the\s+)?(clear\s+|overall\s+)?"
    r"(better|best|superior|preferred|winner|recommended)\b|\bI would (vote|choose|pick|go) for\b", re.IGNORECASE)
_OPENERS = re.compile(
    r"^(in terms of|when it comes to|regarding|as for|with regard to|in the area of)\s+([^,]{2,50}),", re.IGNORECASE)


@dataclass(frozen=True)
class Aspect:
    """One aspect of the body: its label (None when unlabelled) and its text."""

    name: str | None
    text: str


@dataclass(frozen=True)
class Layout:
    """What the rules read from an answer: intro, aspects, final choice and counted sentences."""

    intro: tuple[str, ...]
    aspects: tuple[Aspect, ...]
    choice: str | None
    sentences: tuple[str, ...]
    blocks: bool  # the body is divided into list items or headed sections


def parse_layout(text: str, objects: tuple[str, ...] = ()) -> Layout:
    """Split an answer into intro, aspects, final choice and sentences (markdown or flattened)."""
    reader = _Reader(objects)
    lines = _lines(text)
    for line in lines:
        reader.read(line)
    intro = reader.intro
    if not reader.structured and len(intro) > 1:
        # Plain prose: the introduction is the first paragraph, or the first sentence of one.
        intro = sentences(lines[0]) if len(lines) > 1 else intro[:1]
    return Layout(
        intro=tuple(intro),
        aspects=tuple(Aspect(name, " ".join(t for t in texts if t).strip()) for name, texts in reader.aspects),
        choice=reader.choice if reader.choice is not None else _closing_choice(reader.counted, objects),
        sentences=tuple(s for s in reader.counted if len(words(s)) >= 3),
        blocks=reader.blocks,
    )


class _Reader:
    """One pass over an answer's lines: which section it is in, and what each line adds."""

    def __init__(self, objects: tuple[str, ...]) -> None:
        self.objects = objects
        self.section = "lead"  # lead | intro | body | final | conclusion | appendix
        self.intro: list[str] = []
        self.counted: list[str] = []  # every sentence, for C13 and C15
        self.aspects: list[tuple[str | None, list[str]]] = []
        self.in_aspect = False  # inside a headed aspect: its list items and prose belong to it
        self.choice: str | None = None
        self.blocks = False  # aspects came as list items or headed sections
        self.structured = False  # any heading or list item was seen

    def read(self, line: str) -> None:
        head = _heading(line)
        if head is not None:
            self._heading(*head)
            return
        if self.section == "appendix":
            return
        bullet = _BULLET.match(line)
        item = bullet.group(1).strip() if bullet else line
        self.counted.extend(sentences(item))
        if self.section == "final":
            self.choice = self.choice or item.strip("* ")
        elif bullet:
            self.structured = True
            if self.section != "conclusion":
                self._list_item(item)
        elif self.section != "conclusion":
            self._paragraph(item)

    def _heading(self, title: str, rest: str) -> None:
        kind = _section_of(title)
        self.structured = True
        if self.section == "final" and self.choice is None and kind == "aspect" and not rest:
            self.choice = title  # "**The Best Option**" then "**Football**"
        elif kind == "aspect":  # "### Price", "**Design and Hardware**"
            self.section, self.in_aspect, self.blocks = "body", True, True
            self.aspects.append((title, [rest] if rest else []))
            self.counted.extend(sentences(rest))
        else:
            self.section, self.in_aspect = kind, False
            if kind == "final":
                self.choice = rest or None
            elif rest and kind != "appendix":  # "Summary: text on the same line"
                self.counted.extend(sentences(rest))
                if kind == "intro":
                    self.intro.extend(sentences(rest))

    def _list_item(self, item: str) -> None:
        name, desc = _label(item)
        own = name is not None and is_object(name, self.objects)  # "- Dell: ..." under an aspect
        if name is not None and not desc and not own:
            self.aspects.append((name, []))  # "- Product Range:" then its points
            self.in_aspect = self.blocks = True
        elif (self.in_aspect or own) and self.aspects:
            self.aspects[-1][1].append(item)
        else:
            self.aspects.append((name, [desc]))
            self.blocks = True

    def _paragraph(self, item: str) -> None:
        opener = _OPENERS.match(item)
        name, desc = _label(item)
        if opener and self.section != "intro":  # "In terms of price, ..."
            self.aspects.append((opener.group(2).strip(), [item[opener.end():].strip()]))
            self.in_aspect, self.structured = False, True
        elif name is not None and desc and not is_object(name, self.objects) and self.section != "intro":
            self.aspects.append((name, [desc]))  # a labelled paragraph "Price: ..."
            self.in_aspect, self.structured, self.blocks = False, True, True
        elif self.section == "intro" or (self.section == "lead" and not self.structured):
            self.intro.extend(sentences(item))
        elif self.in_aspect and self.aspects:
            self.aspects[-1][1].append(item)


# --- reading lines ------------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    """Non-empty lines; flattened text (newlines turned into runs of spaces) is split back."""
    out = []
    for raw in text.replace("\r", "\n").split("\n"):
        for part in re.split(r"\s{2,}|\t", raw):
            # Inline list items after a label: "Main aspects: - **Price**: ..." → two lines.
            for piece in re.split(rf"(?<=[:.])\s+(?={_MARK}\s+\S)|\s+(?=(?:[-*•]|‚Ä¢)\s+\*\*)", part):
                piece = piece.strip()
                if piece:
                    out.append(piece)
    return out


def _heading(line: str) -> tuple[str, str] | None:
    """(title, text after it on the same line) when `line` is a heading or a section label;
    None for prose, list items and labelled aspects ("**Price**: ...")."""
    if _BULLET.match(line):
        return None
    match = _HEADING_MD.match(line)
    if match:
        known = _SECTION_START.match(match.group(1))
        if known and len(words(match.group(1))) > 8:  # "## Summary Comparing X and Y ..."
            return known.group(1), match.group(1)[known.end():].strip(" *:")
        title, _, rest = match.group(1).strip(" *").partition(":")
        if rest.strip() and _section_of(title) != "aspect":
            return title.strip(" *"), rest.strip(" *")
        return match.group(1).strip(" *:"), ""
    match = _BOLD_PREFIX.match(line)
    if match and len(words(match.group(1))) <= 8:
        title, rest = match.group(1).strip(" :"), match.group(2).strip(" *")
        before, colon, after = title.partition(":")
        if colon and _section_of(before) != "aspect":  # "**Best Option: Xbox**"
            return before.strip(), after.strip()
        if not rest or _section_of(title) != "aspect":
            return title, rest
        return None
    label = _LABEL.match(line)
    if label and _section_of(label.group(1)) != "aspect":
        return label.group(1).strip(" *"), label.group(2).strip(" *")
    if line.endswith(":") and len(words(line)) <= 6:
        return line.strip(" *:#"), ""
    return None


def _label(item: str) -> tuple[str | None, str]:
    """(label, description) of "**Price**: text" or "Price: text"; (None, item) when unlabelled."""
    item = _REFERENCE.sub("", item).strip()
    match = _BOLD_PREFIX.match(item) or _LABEL.match(item)
    if match and 1 <= len(words(match.group(1))) <= 6:
        return match.group(1).strip(" *:"), match.group(2).strip(" *")
    return None, item


def _section_of(title: str) -> str:
    t = " ".join(words(title))
    for kind, pattern in (("final", _FINAL), ("appendix", _APPENDIX), ("intro", _INTRO),
                          ("body", _BODY), ("conclusion", _CONCLUSION)):  # fmt: skip
        if pattern.search(t):
            return kind
    return "aspect"


def sentences(line: str) -> list[str]:
    """Sentences of one line; a fragment without final punctuation counts as one."""
    parts = re.split(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[*]*[A-Z0-9])", line.strip())
    out: list[str] = []
    for part in parts:
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {part}"
        elif part.strip():
            out.append(part.strip())
    return out


def words(text: str) -> list[str]:
    """Lower-case words (letters, digits, and the joiners of C++, C#, e-mail, it's)."""
    return _WORD.findall(text.lower())


def strip_article(name: str) -> str:
    """"the Simpsons" → "Simpsons": questions and answers differ in articles."""
    return re.sub(r"^(a|an|the)\s+", "", name.strip(" '\"").strip(), flags=re.IGNORECASE)


# --- object names -------------------------------------------------------------------------------


def forms(obj: str, objects: tuple[str, ...] = ()) -> set[str]:
    """Ways `obj` appears in text: as given, without its article, singular or plural, and by its
    last word ("Simpsons") unless another of `objects` shares it ("Chinese/Western medicine")."""
    base = strip_article(obj).lower()
    found = {base, base[:-1] if base.endswith("s") and len(base) > 3 else base + "s"}
    last = base.split()[-1] if base.split() else ""
    others = [strip_article(o).lower() for o in objects if strip_article(o).lower() != base]
    if len(base.split()) > 1 and len(last) >= 4 and not any(last in o.split() for o in others):
        found.add(last)
    return {f for f in found if f}


def mentions(text: str, obj: str, objects: tuple[str, ...] = ()) -> bool:
    """Whether `text` names `obj` (see `forms`) as a whole word, in any case."""
    low = text.lower()
    return any(re.search(rf"(?<![a-z0-9]){re.escape(f)}(?![a-z0-9])", low) for f in forms(obj, objects))


def is_object(name: str, objects: tuple[str, ...]) -> bool:
    """Whether a label is just one of the object names ("Dell:"), not an aspect."""
    key = strip_article(name).lower().strip(" *:")
    return any(key in forms(o, objects) for o in objects)


def _closing_choice(counted: list[str], objects: tuple[str, ...]) -> str | None:
    """A closing sentence that names one object as the better one ("Overall, X is the better...")."""
    for sentence in counted[-2:][::-1]:
        hedged = re.search(r"\bdepends\b", sentence, re.IGNORECASE)
        named = sum(mentions(sentence, o, objects) for o in objects)
        if CHOICE_PROSE.search(sentence) and not hedged and (not objects or named == 1):
            return sentence
    return None
