"""The message catalogue: everything course_lib says, in Chinese, keyed by the English text.

A gettext-style catalogue of our own (``zh.json``, English -> Chinese), because the course's
messages are built with f-strings at hundreds of places: gettext would need each of them
rewritten as ``_("...{x}...").format(x=...)``, while here a message is translated where it reaches
the learner, as the finished English text. An entry is either a whole message or a template,
whose ``{name}`` placeholders stand for the parts that vary:

    "Expected: {expected}"  ->  "期望：{expected}"

`translate(text)` looks for the exact text first, then for a template whose English pattern
matches the whole text (the most specific first); each part a placeholder captured is translated
in turn (so "Hint: {hint}" translates the hint too), except a `{raw...}` one, and whatever has no
entry (numbers, code, PyTorch's own error messages) stays as it is. Without any entry the English
text is returned.
`untranslated(text)` names the parts that have none (the completeness test, and
``python -m course_tools.messages --missing``).
"""

import json
import re
from contextlib import contextmanager
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
# The answer key's own messages (hidden tests' names) are in the key's folder, which the student
# bundle leaves out: a catalogue must not reveal what the key hides.
CATALOGUES = {"zh": (PACKAGE / "i18n" / "zh.json", PACKAGE / "key" / "zh.json")}
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
RAW = "raw"  # a placeholder named raw... holds text that stays as it is (a message from CUDA, say)
CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
# What stays in English whatever the language: Python's and PyTorch's own error messages.
ERROR_TEXT = re.compile(
    r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning|Interrupt|Exit|Exceeded)\b"
)
_CODE = re.compile(r"`[^`\n]*`|'[^'\n]*'|\"[^\"\n]*\"")
_WORD = re.compile(r"^[(\[]?[A-Za-z][a-z]+(?:[-'][A-Za-z]+)*[)\]]?[,.;:!?)]*$")
NAMES = {
    "cpu",
    "cuda",
    "mps",
    "meta",
    "torch",
    "python",
    "jupyterlab",
    "cudnn",
    "gloo",
    "nccl",
    "nvidia-smi",
    "True",
    "False",
    "None",
    "ms",
    "us",
    "autocast",
    "eager",
}  # words that stay as they are in every language
_LATIN = re.compile(r"[A-Za-z0-9`]")
_TIGHT = set("，。；：！？、（）《》「」『』【】“”‘’")  # Chinese punctuation: no space beside it
_recorders = []  # dicts collecting every text passed to tr() (messages.collect)
# sets collecting the {raw...} parts kept as they are (tests: what may stay in English)
_keepers = []


def placeholders(template: str) -> list:
    """The placeholder names of a template, sorted, repeats kept: "{a} and {b}" -> ["a", "b"]."""
    return sorted(PLACEHOLDER.findall(template))


def _pattern(template: str, greedy: bool = False):
    """The regular expression that matches a whole text made from `template`."""
    parts, seen, at = [], set(), 0
    for found in PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[at : found.start()]))
        name = found.group(1)
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+{'' if greedy else '?'})")
        seen.add(name)
        at = found.end()
    parts.append(re.escape(template[at:]))
    return re.compile("".join(parts), re.DOTALL)


@cache
def entries(lang: str) -> dict:
    """The catalogue of `lang` (English text or template -> translation); {} for English."""
    table = {}
    for path in CATALOGUES.get(lang, ()):
        try:
            table.update(json.loads(path.read_text(encoding="utf-8")))
        except (FileNotFoundError, PermissionError):  # the key's part: not in a student's copy
            continue
    return table


@cache
def _patterns(template: str) -> tuple:
    """A template's two regular expressions (its parts read shortest, then longest), compiled
    the first time a text has the template's literal prefix and suffix: of the 536 Chinese
    templates a chapter needs a few dozen, and compiling them all cost each kernel ~0.09 s."""
    return _pattern(template), _pattern(template, greedy=True)


@cache
def templates(lang: str) -> list:
    """(English, literal prefix, literal suffix, translation) of every template entry, the most
    specific (most literal text) first."""
    rows = []
    for english, translated in entries(lang).items():
        if PLACEHOLDER.search(english):
            literal = PLACEHOLDER.split(english)[::2]
            rows.append((-len("".join(literal)), english, literal[0], literal[-1], translated))
    return [row[1:] for row in sorted(rows)]


def _balanced(value: str) -> bool:
    """No bracket of `value` is left open or closed alone, and its backticks pair up."""
    depth = {")": 0, "]": 0, "}": 0}
    for c in value:
        closer = {"(": ")", "[": "]", "{": "}"}.get(c)
        if closer:
            depth[closer] += 1
        elif c in depth:
            depth[c] -= 1
            if depth[c] < 0:
                return False
    return not any(depth.values()) and value.count("`") % 2 == 0


def _readings(text: str, lang: str):
    """Every (English template, translation, {placeholder: captured text}) that reads `text` whole,
    the
    most specific first; each captured part whole (its brackets and backticks balanced)."""
    for english, prefix, suffix, translated in templates(lang):
        if (
            text.startswith(prefix)
            and text.endswith(suffix)
            and len(text) > len(prefix) + len(suffix)
        ):
            for pattern in _patterns(english):  # the shortest reading of each part, the longest
                found = pattern.fullmatch(text)
                if found and all(_balanced(v) for v in found.groupdict().values()):
                    yield english, translated, found.groupdict()


def match(text: str, lang: str):
    """The reading of `text` by a template (see `_readings`) whose parts all have a translation,
    else
    the most specific reading, else None."""
    first = None
    for reading in _readings(text, lang):
        if not any(
            untranslated(v, lang, _part=True)
            for name, v in reading[2].items()
            if not name.startswith(RAW)
        ):
            return reading
        first = first or reading
    return first


def _parenthesized(text: str):
    """The inside of a text that is one parenthesis "( ... )" (a part such as a test's conditions),
    else None."""
    if text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        return text[1:-1].strip()
    return None


def _split_space(text: str) -> tuple:
    core = text.strip()
    if not core:
        return text, "", ""
    start = text.index(core)
    return text[:start], core, text[start + len(core) :]


def translate(text, lang: str) -> str:
    """`text` in `lang`: its entry, else a template's translation with each captured part
    translated,
    else `text` unchanged (leading and trailing spaces are kept)."""
    text = "" if text is None else str(text)
    table = entries(lang)
    if not table:
        return text
    lead, core, trail = _split_space(text)
    if not core:
        return text
    if core in table:
        return lead + table[core] + trail
    found = match(core, lang)
    inner = _parenthesized(core) if found is None else None
    if inner is not None and (inner in table or match(inner, lang)):
        said = translate(inner, lang)
        if not CJK.search(said):
            return f"{lead}({said}){trail}"
        # Chinese puts no space before a full-width parenthesis: "多久（重复 3 次）", not "多久 （"
        return ("" if lead == " " else lead) + f"（{said}）" + trail
    if found is None:
        return text
    _, translated, values = found
    for kept in _keepers:
        kept.update(value for name, value in values.items() if name.startswith(RAW))
    values = {
        name: value if name.startswith(RAW) else translate(value, lang)
        for name, value in values.items()
    }
    return lead + _fill(translated, values) + trail


def _fill(translated: str, values: dict) -> str:
    """The translation with its placeholders replaced; a space between Chinese and Latin text where
    a
    value meets the template ("的 loss 是", as Chinese technical writing spaces them)."""
    out, at = [], 0
    for found in PLACEHOLDER.finditer(translated):
        before, value = translated[at : found.start()], values.get(found.group(1), found.group(0))
        after = translated[found.end() : found.end() + 1]
        if (
            before.endswith(" ") and value and CJK.match(value[0])
        ):  # "在 {device} 上" with a Chinese value
            before = before[:-1]
        if after == " " and value and CJK.match(value[-1]):
            at, after = found.end() + 1, translated[found.end() + 1 : found.end() + 2]
            out += [before, value]
            continue
        if (
            before
            and value
            and CJK.match(before[-1])
            and _LATIN.match(value[0])
            and before[-1] not in _TIGHT
        ):
            value = " " + value
        if after and value and CJK.match(after) and _LATIN.match(value[-1]) and after not in _TIGHT:
            value = value + " "
        out += [before, value]
        at = found.end()
    return "".join(out + [translated[at:]])


def current() -> str:
    from . import language

    return language()


class Said(str):
    """A text already in the course's language (what `tr` returns): `tr` passes it through as it
    is."""


def tr(text, value: bool = False) -> str:
    """`text` in the current language (see `course_lib.i18n.language`). `value=True`: a value shown
    to
    the learner (what a test expected, what it got), which is often a number or code, not words."""
    if isinstance(text, Said):
        return text
    for seen in _recorders:
        key = "" if text is None else str(text)
        seen[key] = seen.get(key, True) and value
    return Said(translate(text, current()))


_CJK_SEPARATORS = {"; ": "；", ", ": "，", ": ": "："}


def join(parts, sep: str = " ") -> str:
    """Parts of a composite message joined with `sep`, empty ones left out; between Chinese parts no
    space, and Chinese punctuation for "; ", ", " and ": "."""
    out = ""
    for part in (p for p in parts if p):
        chinese = out and CJK.match(out[-1]) and CJK.match(part[0])
        tight = sep == " " and out and (out[-1] in _TIGHT or chinese)
        beside = out and (
            CJK.match(out[-1]) or CJK.match(part[0])
        )  # beside Chinese: Chinese punctuation
        glue = "" if tight else _CJK_SEPARATORS.get(sep, sep) if beside else sep
        out += part if not out else glue + part
    return Said(out) if all(isinstance(p, Said) for p in parts if p) else out


def listing(items) -> str:
    """Items named one after another, "a, b, c"; in Chinese "a、b、c" (enumeration comma)."""
    return ("、" if current() == "zh" else ", ").join(str(item) for item in items)


def labelled(label: str, text, value: bool = False) -> str:
    """A label and its text, each translated ("Expected:" + "a float" -> "期望：一个 float");
    `value`: see `tr`."""
    return join([tr(label), tr(text, value=value)])


def tr_join(parts, sep: str = " ") -> str:
    """Parts of a composite message (sentences, list items), each translated, then joined
    (`join`)."""
    return join([tr(p) for p in parts if p], sep)


@contextmanager
def in_language(lang: str):
    """Speak `lang` inside the block, then whatever was chosen before (the grader, tests)."""
    import sys

    state = sys.modules[__package__]
    before = state._chosen
    state.use_language(lang)
    try:
        yield
    finally:
        state._chosen = before


@contextmanager
def keeping():
    """Collect the texts that translations kept as they are inside the block ({raw...} parts:
    messages of PyTorch, CUDA or the learner's code) into a set."""
    kept = set()
    _keepers.append(kept)
    try:
        yield kept
    finally:
        _keepers.remove(kept)


@contextmanager
def recording():
    """Collect every text passed to `tr` inside the block (in any language): {text: only ever a
    value}."""
    seen = {}
    _recorders.append(seen)
    try:
        yield seen
    finally:
        _recorders.remove(seen)


# ---------------------------------------------------------------- completeness
def is_prose(text: str, errors_too: bool = True, phrase: bool = False) -> bool:
    """Does `text` hold words a reader must have translated? An English word (two in a row with
    `phrase`) outside code spans, quotes and names that stay as they are (cpu, torch, True, ms,
    ...);
    with `errors_too=False`, Python's and PyTorch's own error messages ("RuntimeError: ...") are
    not."""
    if not errors_too and ERROR_TEXT.match(text):
        return False
    words = [
        bool(_WORD.match(w)) and w.strip("()[],.;:!?") not in NAMES
        for w in _CODE.sub(" \0 ", text).split()
    ]
    return any(a and b for a, b in zip(words, words[1:])) if phrase else any(words)


def untranslated(text, lang: str = "zh", _part: bool = False) -> list:
    """The parts of `text` that `translate` leaves in English although they are prose: the text
    itself when no entry covers it, or the parts a template captured that no entry covers (there,
    an error message PyTorch or the learner's code raised is not prose: it stays as it is)."""
    core = ("" if text is None else str(text)).strip()
    if not core or not is_prose(core, errors_too=not _part, phrase=_part) or core in entries(lang):
        return []
    found = match(core, lang)
    inner = _parenthesized(core) if found is None else None
    if inner is not None:
        return untranslated(inner, lang, _part)
    if found is None:
        return [core]
    return [
        part
        for name, value in found[2].items()
        if not name.startswith(RAW)
        for part in untranslated(value, lang, _part=True)
    ]


def problems(lang: str = "zh") -> list:
    """What is wrong with the catalogue itself: entries whose placeholders differ from the
    English, that are not translated, or that are templates matching almost anything."""
    out = []
    for english, translated in entries(lang).items():
        if placeholders(english) != placeholders(translated):
            out.append(
                f"{english!r}: placeholders {placeholders(english)} in English but "
                f"{placeholders(translated)} in {lang}: {translated!r}"
            )
        elif not CJK.search(PLACEHOLDER.sub("", translated)):
            out.append(f"{english!r}: the {lang} entry {translated!r} holds no Chinese")
        if english != english.strip():
            out.append(
                f"{english!r}: an entry never starts or ends with spaces (they are kept around it)"
            )
        literal = PLACEHOLDER.split(english)[::2]
        if PLACEHOLDER.search(english) and (
            len("".join(literal).strip()) < 3 or any(not part for part in literal[1:-1])
        ):
            out.append(
                f"{english!r}: a template needs literal words, and text between its placeholders"
            )
    return out


__all__ = [
    "translate",
    "tr",
    "tr_join",
    "join",
    "listing",
    "labelled",
    "untranslated",
    "problems",
    "placeholders",
    "in_language",
    "recording",
    "is_prose",
    "entries",
]
