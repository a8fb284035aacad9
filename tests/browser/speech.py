"""What the learner reads, in the page's language: chapters.py names buttons, options and the text
to expect in English; on a Chinese page each is looked up in the course's catalogue (tr() under
zh), so the walk through a chapter is written once for both editions.

An English text (a pattern of chapters.py without wildcards: backslash escapes and `\\s*` allowed)
is said, in order of preference, as:
- its catalogue translation, when it is a whole message (a button's caption, a dropdown's label);
- the start of the translation of each message it begins ("a) PyTorch raises" -> "a) PyTorch 立刻…",
  "Incorrect" -> "不正确：", the verdict's fixed start), also across a fixed start and a part
  ("Correct: What does" -> "正确：" + the start of the quiz title's translation);
- the translations of the messages it occurs in (a phrase of a quiz option's "why"), or a
  template's words around the value it names ("came back on cpu" -> "回来时在 cpu 上");
- itself, when no message holds it (numbers, code, device names and PyTorch's errors stay).
Several messages may fit: a pattern then accepts any of them (the cell's output decides). A
pattern with other wildcards (\\d, +, ...) is kept as it is.
"""

import re
from functools import cache

from course_lib import notebooks
from course_lib.i18n.catalogue import (
    PLACEHOLDER,
    entries,
    in_language,
    is_prose,
    tr,
    untranslated,
)
from course_lib.i18n.headings import NOTEBOOKS, heading_in
from course_lib.text import without_marks

_SPACE = re.compile(r"\\s[*+]")
_OPTIONAL = re.compile(r"(?<!\\)\.\?")  # "any one character or none": a backtick or a quote
_ESCAPED = re.compile(r"\\(.)")
# a wildcard; a lone "." is read as the dot it almost always means ("torch.compile")
_WILD = re.compile(r"\\[dDsSwWbB0-9]|(?<!\\)[\^$*+?{}\[\]|()]|(?<!\\)\.(?=[*+?{])")
_LETTER = re.compile(r"^([a-z]\) )(.+)$", re.S)


def literal(pattern: str):
    """The plain text a pattern stands for ("x\\.to\\(" -> "x.to(", "did:\\s*ran" -> "did: ran",
    ".?all_reduce.?" -> "all_reduce"), or None when it has other wildcards."""
    spaced = _OPTIONAL.sub("", _SPACE.sub(" ", pattern))
    return None if _WILD.search(spaced) else _ESCAPED.sub(r"\1", spaced)


def shown(text: str) -> str:
    """A message as the page shows it: its code marks rendered away (also one a placeholder cut
    off); bold marks stay (flexible() makes them optional: text verdicts show them)."""
    return without_marks(text).replace("`", "")


def flexible(text: str) -> str:
    """A pattern for a text of the page: any run of spaces (or none, beside Chinese) between its
    words, and a template's placeholders standing for anything."""
    parts = PLACEHOLDER.split(shown(text))[::2]
    words = r"[\s\S]*?".join(r"\s*".join(re.escape(w) for w in part.split()) for part in parts)
    return words.replace(r"\*\*", r"(?:\*\*)?")


class Speaker:
    """Says chapters.py's English texts in one language ('en': as they are)."""

    def __init__(self, lang: str = "en"):
        self.lang = lang

    def __call__(self, text: str) -> str:
        """A whole message in this language."""
        if self.lang == "en":
            return text
        with in_language(self.lang):
            return str(tr(text))

    def starts(self, text: str) -> list:
        """What a text that begins a message may show in this language (see the docstring)."""
        if self.lang == "en":
            return [text]
        said = self(text)
        if said != text and not untranslated(text, self.lang):
            return [shown(said)]
        letter = _LETTER.match(text)
        if letter:
            return [letter.group(1) + s for s in self.starts(letter.group(2))]
        if not is_prose(text):  # code, a value: as it is, or a message it begins
            return list(dict.fromkeys([text, *self._begun(text)]))
        return _headings(text, self.lang) or self._begun(text) or self._across(text) or [text]

    def choice(self, text: str):
        """The text of a label, button or option (a regular expression when several fit)."""
        found = [f.replace("**", "") for f in self.starts(text)]  # HTML labels render bold
        return found[0] if len(found) == 1 else re.compile("|".join(map(re.escape, found)))

    def pattern(self, pattern: str) -> str:
        """A regular expression of chapters.py for text of this language."""
        plain = literal(pattern) if self.lang != "en" else None
        if plain is None:
            return pattern
        found = _around(plain, self.lang)[:8] or self.starts(plain)
        if found == [plain] and is_prose(plain):
            found = self._inside(plain) or found
        if found == [plain]:
            return pattern
        return "|".join(
            f"(?:{f if isinstance(f, Flexible) else _alone(f, self.lang) + flexible(f)})"
            for f in found
        )

    # ------------------------------------------------------------ the catalogue, read for a text
    def _begun(self, text: str) -> list:
        """The fixed starts of the translations of the messages that begin with `text`."""
        found = {
            shown(PLACEHOLDER.split(zh)[0]).strip()
            for en, zh in entries(self.lang).items()
            if shown(en).startswith(shown(text))
        }
        return sorted(s for s in found if s)

    def _across(self, text: str) -> list:
        """A fixed start and the start of the part after it: "Correct: What does"."""
        for fixed, said in _fixed_starts(self.lang):
            rest = text[len(fixed) :]
            if text.startswith(fixed) and rest and len(fixed.strip()) >= 4:
                return [said + p for p in self.starts(rest)]  # a part without entry stays
        return []

    def _inside(self, text: str) -> list:
        """The messages that hold `text`."""
        return [zh for en, zh in entries(self.lang).items() if text in shown(en)][:8]


def _alone(text: str, lang: str) -> str:
    """A lookbehind that keeps `text` from matching inside a longer fixed text of the catalogue
    that ends with it ("正确：" inside "不正确："), or ""."""
    before = _ends_of(lang).get(text.strip(), "")
    return f"(?<![{re.escape(before)}])" if before else ""


@cache
def _ends_of(lang: str) -> dict:
    """Fixed start of a translation -> the characters that come before it where it ends a longer
    one."""
    starts = {PLACEHOLDER.split(shown(zh))[0].strip() for zh in entries(lang).values()}
    starts.discard("")
    out = {}
    for longer in starts:
        for k in range(1, len(longer)):
            if longer[k:] in starts:
                out[longer[k:]] = out.get(longer[k:], "") + longer[k - 1]
    return {k: "".join(sorted(set(v))) for k, v in out.items()}


class Flexible(str):
    """A text already made into a pattern."""


def _around(text: str, lang: str) -> list:
    """A template's words around a value that is not prose (a device, a number, an error's name),
    as the translation puts them around it: "came back on cpu" in "{path} came back on {device}.",
    "On a meta input your function failed" in "On a {device} input your function failed: ..."."""
    found = []
    for en, zh in entries(lang).items():
        names, fixed = PLACEHOLDER.findall(en), PLACEHOLDER.split(shown(en))[::2]
        zh_parts = PLACEHOLDER.split(shown(zh))
        zh_fixed, zh_names = zh_parts[::2], zh_parts[1::2]
        for i, name in enumerate(names):
            before, after = fixed[i], fixed[i + 1]
            cut = next((k for k in range(len(before)) if text.startswith(before[k:])), None)
            tail = before[cut:] if cut is not None else ""
            if len(tail.strip()) < 4 or not is_prose(tail) or name not in zh_names:
                continue
            value = text[len(before) - cut :]
            reach = next(
                (k for k in range(len(after), 3, -1) if value.endswith(after[:k].rstrip())), 0
            )
            value = value[: len(value) - len(after[:reach].rstrip())] if reach else value
            if not value.strip() or is_prose(value) or "{" in value:
                continue
            j = zh_names.index(name)
            pattern = flexible(zh_fixed[j]) + r"\s*" + re.escape(value.strip())
            found.append(Flexible(pattern + (r"\s*" + flexible(zh_fixed[j + 1]) if reach else "")))
    return found


@cache
def _headings(text: str, lang: str) -> list:
    """A numbered heading of the notebooks that begins with `text` ("4a. Saved on a GPU"), as the
    `lang` edition writes it (the explainer's links and cheat sheet name sections so)."""
    if not re.match(r"\d+[a-z]?\. ", text):
        return []
    found = set()
    for path in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"):
        for source in notebooks.markdown(path):
            for line in source.splitlines():
                words = line.lstrip("#").strip()
                if line.startswith("#") and words.startswith(text):
                    found.add(shown(heading_in(path.stem, line, lang).lstrip("#").strip()))
    return sorted(found)


@cache
def _fixed_starts(lang: str) -> list:
    """(English fixed start, its translation) of every template that starts with words and then a
    placeholder in both languages, and of every label ("Hint:" + " "), the longest first."""
    rows = set()
    for en, zh in entries(lang).items():
        en_parts, zh_parts = PLACEHOLDER.split(en), PLACEHOLDER.split(zh)
        if len(en_parts) > 1 and len(zh_parts) > 1 and len(en_parts[0]) >= 3 and zh_parts[0]:
            if PLACEHOLDER.findall(en)[0] == PLACEHOLDER.findall(zh)[0]:
                rows.add((shown(en_parts[0]), shown(zh_parts[0])))
        elif len(en_parts) == 1 and en.endswith(":") and len(en) >= 4:
            rows.add((en + " ", zh))
    return sorted(rows, key=lambda row: -len(row[0]))


ENGLISH = Speaker("en")
