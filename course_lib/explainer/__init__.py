"""The error explainer: what a PyTorch GPU-training error means, its likely cause, the fix, and
where the course teaches it (chapter 04 teaches reading errors with it; every notebook turns on
its panel in the first cell).

    course_lib.explain()               # the last error of this notebook
    course_lib.explain(err)            # an exception, or a message, a traceback, a whole log
    course_lib.explain_errors()        # the panel under every failing cell, and under the first
                                       # warning of each kind the course knows (notebook.py)
    python -m course_lib explain [--json] [FILE ...]

The knowledge base is data (`knowledge.ENTRIES`). An error that matches no entry is answered
"not a GPU-training error this course knows", never guessed.
"""

import html
import re
import sys
import traceback
from dataclasses import dataclass, field

from .. import chapters
from ..i18n import language, tr
from ..i18n.catalogue import join, tr_join
from ..i18n.headings import heading_in, notebook_path
from .knowledge import ENTRIES, FAMILIES, SHARED_CUDA, TORCH_EVIDENCE, Entry

UNKNOWN = "Not a GPU-training error this course knows"
WARNING_CONTEXT = "A warning, not an error: the code went on running. The warning:"
NO_ERROR = "No error to explain yet"

_FLAGS = re.IGNORECASE | re.MULTILINE
_PATTERNS = [
    (e, [re.compile(p, _FLAGS) for p in e.patterns], [re.compile(p, _FLAGS) for p in e.unless])
    for e in ENTRIES
]
_NEEDS = {e.id: [re.compile(p, _FLAGS) for p in e.needs] for e in ENTRIES}
_READINGS = {e.id: [(re.compile(r, _FLAGS), text) for r, text in e.readings] for e in ENTRIES}
_FAMILY_PATTERNS = [(f, [re.compile(p, _FLAGS) for p in f.patterns]) for f in FAMILIES]
_FAMILY_FRAMES = [(f, [re.compile(p, _FLAGS) for p in f.frames]) for f in FAMILIES if f.frames]
_SHARED = re.compile(SHARED_CUDA, _FLAGS)  # what every CUDA program prints
_TORCH_SAID = re.compile(TORCH_EVIDENCE, _FLAGS)  # PyTorch's own words
_FRAME_LINE = re.compile(r'^[ \t]*File "[^"\n]+", line \d+')
# a traceback frame, `File "path", line N, in name`, and the source line Python prints under it
_FRAME = re.compile(
    r'^[ \t]*File "(?P<path>[^"\n]+)", line \d+(?P<rest>[^\n]*)\n?(?:[ \t]+[^\n]*\n?)?', re.M
)
GENERAL_CASE = (
    "General case: no entry matches this exact message; it is recognisably of this family, "
    "so here is what such errors mean and where to look first."
)

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_RANK_PREFIX = re.compile(
    r"^\[(?:default)?rank\d+\]:[ ]?", re.MULTILINE
)  # torchrun's per-rank prefix
_TRACEBACK_HEAD = re.compile(r"Traceback \(most recent call last\)")
# "RuntimeError: ...", "torch.OutOfMemoryError: ...",
# "_pickle.UnpicklingError: ...", "KeyError: 'x'"
_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning|Interrupt|Exit)(?::.*)?$"
)
_BLOCK_LINES = 15  # an exception's message: its first line and what follows, up to a blank line
CJK_STOP = "。"


def _notebook(entry: Entry) -> str:
    """'04_common_errors.ipynb': the notebook of the chapter that teaches `entry`."""
    return chapters.get(entry.chapter).notebook


def _stem(entry: Entry) -> str:
    """'04_common_errors': that notebook's name without its suffix."""
    return _notebook(entry).removesuffix(".ipynb")


@dataclass
class Explanation:
    """What the explainer says about one error: a panel in a notebook, text or JSON elsewhere."""

    known: bool
    error: str = ""  # the error it found, first line
    entry: Entry | None = None
    notes: tuple = ()  # numbers and names read from the message
    context: str = ""  # how the error was found in a longer text
    title: str = field(default=UNKNOWN)

    @property
    def tier(self) -> str | None:
        """'specific' (an entry for this error), 'family' (its general case), None (unknown)."""
        return self.entry.tier if self.entry else None

    def __post_init__(self):
        if self.entry is not None:
            self.title = self.entry.title

    @property
    def link(self) -> str:
        """A link to the teaching section, relative to
        the notebooks folder (works in JupyterLab)."""
        if not self.entry or not self.entry.chapter:
            return ""
        return f"{_notebook(self.entry)}#{heading_anchor(taught_section(self.entry))}"

    def to_dict(self) -> dict:
        """The explanation as data, its texts in the course's language (ids and the error as they
        are)."""
        e = self.entry
        return {
            "known": self.known,
            "tier": self.tier,
            "id": e.id if e else None,
            "title": tr(self.title),
            "chapter": e.chapter if e else None,
            "section": heading_text(taught_section(e)) if e and e.section else None,
            "notebook": notebook_path(_stem(e), language()) if e and e.chapter else None,
            "link": self.link or None,
            "taught": (not e.closest) if e else None,
            "meaning": tr(e.meaning) if e else None,
            "cause": tr_join(e.causes, "; ") if e else None,
            "fix": e.fix if e else None,
            "notes": [tr(n) for n in self.notes],
            "error": self.error,
            "context": tr(self.context) if self.context else None,
        }

    def __str__(self) -> str:
        return render_text(self)

    def _repr_pretty_(self, printer, cycle):
        printer.text(render_text(self))

    def _repr_html_(self) -> str:
        return render_html(self)


# ---------------------------------------------------------------- finding the error in a text
def clean(text: str) -> str:
    """Text as a learner pastes it: without terminal colours,
    Windows line ends or torchrun's [rankN]: prefixes."""
    return _RANK_PREFIX.sub("", _ANSI.sub("", text).replace("\r\n", "\n"))


def _message_block(lines: list, start: int) -> str:
    """The exception line at `start` and its message
    lines, up to a blank line or a new traceback."""
    block = [lines[start]]
    for line in lines[start + 1 : start + _BLOCK_LINES]:
        if not line.strip() or _TRACEBACK_HEAD.search(line):
            break
        block.append(line)
    return "\n".join(block)


def exception_blocks(text: str) -> list:
    """Each traceback's final exception (with its message), in order.

    Without any traceback: every `XError: ...` line that starts a line.
    """
    lines = text.split("\n")
    blocks, in_traceback = [], False
    for i, line in enumerate(lines):
        if _TRACEBACK_HEAD.search(line):
            in_traceback = True
        elif in_traceback and _EXCEPTION_LINE.match(line):
            blocks.append(_message_block(lines, i))
            in_traceback = False
    if not blocks and "Traceback" not in text:
        blocks = [
            _message_block(lines, i) for i, line in enumerate(lines) if _EXCEPTION_LINE.match(line)
        ]
    return blocks


def _steps_aside(entry: Entry, unless, text: str, whole: str) -> bool:
    """True if `entry` must not answer: a wording it leaves to another entry, or (a plain Python
    wording) no PyTorch evidence anywhere in the whole paste."""
    lacks = any(not p.search(whole) for p in _NEEDS[entry.id])
    return lacks or any(p.search(text) for p in unless)


def torch_said(text: str) -> bool:
    """True if `text` has a word of PyTorch's own (a module, frame, namespace, class, variable)."""
    return _TORCH_SAID.search(text) is not None


def _claims(pattern, text: str, torch_evidence: bool) -> list:
    """The matches of `pattern` in `text` that may claim it: shared CUDA-runtime text (cuBLAS
    codes, "CUDA error: out of memory", the driver's messages) only beside PyTorch's evidence."""
    found = list(pattern.finditer(text))
    if torch_evidence or not found:
        return found
    shared = [(s.start(), s.end()) for s in _SHARED.finditer(text)]
    return [m for m in found if not any(a < m.end() and m.start() < b for a, b in shared)]


def match(text: str, wrappers: bool = True, whole: str = "") -> Entry | None:
    """The first entry (in knowledge-base order) one of whose patterns occurs in `text`, or None;
    `whole` is the paste `text` came from (an entry's `needs` may be found anywhere in it)."""
    evidence = torch_said(whole or text)
    for entry, patterns, unless in _PATTERNS:
        if (
            (wrappers or not entry.wrapper)
            and any(_claims(p, text, evidence) for p in patterns)
            and not _steps_aside(entry, unless, text, whole or text)
        ):
            return entry
    return None


def _line_of(text: str, found) -> int:
    """The line number where a match starts."""
    return text.count("\n", 0, found.start())


def _quoted_lines(text: str) -> set:
    """The line numbers of source lines a traceback quotes under its frames: code, not a message."""
    lines = text.split("\n")
    return {
        i + 1
        for i, line in enumerate(lines[:-1])
        if _FRAME_LINE.match(line) and lines[i + 1][:1] in " \t"
    }


def last_known_error(text: str, wrappers: bool = True):
    """(entry, block) for the last line of `text` that a knowledge-base pattern matches, or None."""
    best = None  # (line number, -entry order, entry)
    quoted, evidence = _quoted_lines(text), torch_said(text)
    for order, (entry, patterns, unless) in enumerate(_PATTERNS):
        if (entry.wrapper and not wrappers) or _steps_aside(entry, unless, text, text):
            continue
        for pattern in patterns:
            found = [m for m in _claims(pattern, text, evidence) if _line_of(text, m) not in quoted]
            if found:
                candidate = (_line_of(text, found[-1]), -order, entry)
                best = max(best, candidate, key=lambda c: c[:2]) if best else candidate
    if best is None:
        return None
    lines = text.split("\n")
    return best[2], _message_block(lines, best[0])


# the other places a path of torch's says where an error arose: a Jupyter traceback's frame
# (`File /path/x.py:297, in fn`) and a warning's log line (`/path/x.py:613: UserWarning: ...`)
_OTHER_FRAMES = re.compile(
    r"^[ \t]*(?:File (?P<jupyter>\S+\.py):\d+, in \w+|.*?(?P<warned>\S+\.py):\d+: \w*Warning\b)"
    r'|^[^\n"]*\][ \t]+File "(?P<logged>[^"\n]+\.py)", line \d+',  # behind a log's `[...] ` prefix
    re.M,
)
_NUMBERED_SOURCE = re.compile(r"^[ \t]*(?:-*> ?)?\d+ .*$\n?", re.M)  # Jupyter's quoted lines


def _torch_frames(text: str) -> list:
    """The paths of a traceback's frames and warnings' log lines, in order of their place."""
    found = [(m.start(), m["path"] + m["rest"]) for m in _FRAME.finditer(text)]
    found += [
        (m.start(), m["jupyter"] or m["warned"] or m["logged"])
        for m in _OTHER_FRAMES.finditer(text)
    ]
    return [path for _, path in sorted(found)]


def family_of(text: str, final: str = "") -> Entry | None:
    """The family that PyTorch's own evidence in `text` names, or None (issue 35).

    Evidence, in this order: a family's wording or exception class in the final exception, then
    anywhere in the text, then the last traceback frame in one of torch's folders. Frames and the
    source lines quoted under them are no wording evidence: a line of code is not a message.
    Text that every CUDA program prints (a cuBLAS code, "CUDA error: out of memory") is evidence
    only beside a word of PyTorch's own somewhere in the paste.
    """
    evidence = torch_said(text)
    for where in (final, text):
        said = _NUMBERED_SOURCE.sub("", _FRAME.sub("", where))
        for family, patterns in _FAMILY_PATTERNS:
            if said and any(_claims(p, said, evidence) for p in patterns):
                return family
    for path in reversed(_torch_frames(text)):
        for family, patterns in _FAMILY_FRAMES:
            if any(p.search(path) for p in patterns):
                return family
    return None


def _general(text: str, final: str) -> Explanation:
    """The family's general case for an error no entry matches, or "not known"."""
    family = family_of(text, final)
    if family is None:
        return Explanation(False, _first_line(final or text))
    return Explanation(True, _first_line(final or text), family)


def _readings(entry: Entry, block: str) -> tuple:
    notes = []
    for pattern, sentence in _READINGS[entry.id]:
        found = pattern.search(block)
        if found:
            notes.append(sentence.format(**{k: v.strip() for k, v in found.groupdict().items()}))
    return tuple(notes)


def _first_line(block: str) -> str:
    line = block.strip().split("\n")[0].strip()
    return line if len(line) <= 300 else line[:297] + "..."


def _explained(entry: Entry, block: str, context: str = "") -> Explanation:
    return Explanation(True, _first_line(block), entry, _readings(entry, block), context)


def explain_text(text: str) -> Explanation:
    """Explain a message, a traceback or a whole log.

    Its last traceback's exception, else (or behind a wrapper such as ChildFailedError) the last
    error the knowledge base recognises in the text.
    """
    text = clean(str(text))
    blocks = exception_blocks(text)
    final = blocks[-1] if blocks else ""
    entry = match(final, whole=text) if final else None
    if entry and not entry.wrapper:
        return _explained(entry, final)
    found = last_known_error(text, wrappers=False) or (None if entry else last_known_error(text))
    if found and (found[1] != final or not final):
        if entry:
            context = f"`{_first_line(final)}` says that a process failed; the error behind it:"
        elif final and found[0].wrapper:
            return _explained(
                found[0],
                found[1],
                f"The error inside it, `{_first_line(final)}`, is not one "
                "this course knows; read its traceback.",
            )
        elif final:
            context = (
                f"The last exception here, `{_first_line(final)}`, is not one this course knows; "
                "the last error it knows in the text is:"
            )
        else:
            context = ""
        return _explained(found[0], found[1], context)
    if entry:
        return _explained(entry, final)
    return _general(text, final)


def explain_exception(err: BaseException) -> Explanation:
    """Explain an exception object, read as Python prints it (`torch.OutOfMemoryError: ...`)."""
    text = "".join(traceback.format_exception_only(type(err), err))
    if _TRACEBACK_HEAD.search(
        text
    ):  # e.g. a DataLoader worker's error carries the original traceback
        return explain_text(text)
    text, whole = clean(text), clean("".join(traceback.format_exception(err)))
    entry = match(text, whole=whole)  # the frames: evidence for an entry's `needs` and a family
    if entry:
        return _explained(entry, text)
    return _general(whole, text)


def explain_warning(
    message, category=UserWarning, filename: str = "", lineno: int = 0
) -> Explanation:
    """Explain a warning (`warnings.showwarning`'s arguments) as Python prints it:
    `file:line: Category: text`; one no entry knows gets its family's general case, if any."""
    text = clean(f"{filename or '<warning>'}:{lineno}: {category.__name__}: {message}")
    found = last_known_error(text)
    if found is not None:
        return _explained(found[0], found[1], WARNING_CONTEXT)
    family = family_of(text, text)  # its wording, or the torch folder that warned (issue 35)
    if family is None:
        return Explanation(False, _first_line(text))
    return Explanation(True, _first_line(text), family, context=WARNING_CONTEXT)


def last_error() -> BaseException | None:
    """The last exception that reached the notebook (or the interactive prompt), if any."""
    from . import notebook

    return (
        notebook.last_error() or getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    )


def explain(error=None) -> Explanation:
    """Explain `error` (an exception, or a message/traceback/log
    text); without one, the last error raised."""
    if error is None:
        error = last_error()
        if error is None:
            return Explanation(False, title=NO_ERROR)
    if isinstance(error, BaseException):
        return explain_exception(error)
    return explain_text(str(error))


def enable(shell=None) -> bool:
    """Show an explanation panel under every cell that fails with an error the
    course knows, and under the first warning of each kind it knows (idempotent); True if on."""
    from .notebook import enable as _enable

    return _enable(shell)


# ---------------------------------------------------------------- rendering
def heading_text(section: str) -> str:
    """A Markdown heading as JupyterLab shows it: no #'s, no backticks or emphasis marks."""
    return re.sub(r"[`*]", "", section.lstrip("#").strip())


def heading_anchor(section: str) -> str:
    """The id JupyterLab gives a heading: its text with spaces as dashes."""
    return heading_text(section).replace(" ", "-")


def taught_section(entry: Entry) -> str:
    """The heading that teaches `entry`, as written in the notebook of the course's language."""
    return heading_in(_stem(entry), entry.section, language()) if entry.chapter else ""


def where_taught(entry: Entry) -> str:
    return (
        tr(f"chapter {entry.chapter}, {heading_text(taught_section(entry))}")
        if entry.chapter
        else ""
    )


def _taught_label(entry: Entry) -> str:
    """'Taught in', or for an error no chapter teaches, the section closest to it."""
    return tr("Closest section (not taught as such):" if entry.closest else "Taught in:")


def _inline(text: str) -> str:
    """Escape for HTML and show `backticked` spans as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _parts(exp: Explanation) -> list:
    """(part, value) of a known error's explanation, in the order both renderings show them."""
    e = exp.entry
    parts = [("title", e.title)] + ([("general", GENERAL_CASE)] if e.tier == "family" else [])
    parts += [("context", (exp.context, exp.error))] if exp.context else []
    parts += [("meaning", e.meaning)] + ([("notes", exp.notes)] if exp.notes else [])
    causes = "look" if e.tier == "family" else "causes"
    parts += [(causes, e.causes), ("fix", e.fix)] + ([("taught", exp)] if e.chapter else [])
    return parts


TEXT_PARTS = {  # each part of an explanation as lines of plain text, in the course's language
    "title": lambda title: [f"{tr('[course explainer]')} {tr(title)}"],
    "context": lambda c: [f"  {tr(c[0])}", f"    {c[1]}"],
    "meaning": lambda meaning: [f"  {join([tr('What it means:'), tr(meaning)])}"],
    "notes": lambda notes: [f"  {join([tr('Read from your message:'), tr(n)])}" for n in notes],
    "general": lambda general: [f"  {tr(general)}"],
    "causes": lambda causes: [f"  {tr('Likely causes:')}"] + [f"    - {tr(c)}" for c in causes],
    "look": lambda look: [f"  {tr('What to look at first:')}"] + [f"    - {tr(c)}" for c in look],
    "fix": lambda fix: [f"  {tr('Fix:')}"] + [f"    {line}" for line in fix.split("\n")],
    "taught": lambda exp: [
        "  "
        + join(
            [
                _taught_label(exp.entry),
                tr(
                    f"{notebook_path(_stem(exp.entry), language())}, "
                    f'section "{heading_text(taught_section(exp.entry))}"'
                ),
            ]
        )
    ],
}
HTML_PARTS = {  # each part of an explanation as HTML, in the course's language
    "title": lambda title: f"<b>{_inline(tr(f'Course explainer: {title}'))}</b>",
    "context": lambda c: f"<div>{_inline(tr(c[0]))}<br><code>{html.escape(c[1])}</code></div>",
    "meaning": lambda meaning: (
        f"<div><b>{_inline(tr('What it means.'))}</b> {_inline(tr(meaning))}</div>"
    ),
    "notes": lambda notes: (
        f"<div><b>{_inline(tr('Your message says:'))}</b> "
        + " ".join(_inline(tr(n)) for n in notes)
        + "</div>"
    ),
    "general": lambda general: f"<div><i>{_inline(tr(general))}</i></div>",
    "causes": lambda causes: (
        f"<div><b>{_inline(tr('Likely causes:'))}</b><ul style='margin:2px 0'>"
        + "".join(f"<li>{_inline(tr(c))}</li>" for c in causes)
        + "</ul></div>"
    ),
    "look": lambda look: (
        f"<div><b>{_inline(tr('What to look at first:'))}</b><ul style='margin:2px 0'>"
        + "".join(f"<li>{_inline(tr(c))}</li>" for c in look)
        + "</ul></div>"
    ),
    "fix": lambda fix: (
        f"<div><b>{_inline(tr('Fix:'))}</b><pre style='margin:2px 0'>{html.escape(fix)}</pre></div>"
    ),
    "taught": lambda exp: (
        f"<div><b>{_inline(_taught_label(exp.entry))}</b> <a href='{html.escape(exp.link)}'>"
        f"{_inline(where_taught(exp.entry))}</a></div>"
    ),
}
PANEL = (
    "<div class='course-explainer' style='border-left:4px solid "
    "#2a7ab0;background:rgba(42,122,176,0.07);padding:6px 12px;margin:4px 0;font-size:0.95em'>"
)


def render_text(exp: Explanation) -> str:
    """The explanation as plain text (terminal, logs, nbval), in the course's language."""
    head = tr("[course explainer]")
    if not exp.known:
        found = f"\n  ({exp.error})" if exp.error else ""
        return f"{head} {tr(exp.title + '.')}{found}"
    return "\n".join(line for part, value in _parts(exp) for line in TEXT_PARTS[part](value))


def render_html(exp: Explanation) -> str:
    """The panel shown under a failing cell: meaning, what the message says, causes, fix, link."""
    if not exp.known:
        found = f"<br><small>{_inline(exp.error)}</small>" if exp.error else ""
        title = f"<b>{_inline(tr('Course explainer:'))}</b> {_inline(tr(exp.title + '.'))}"
        return f"{PANEL}{title}{found}</div>"
    return PANEL + "".join(HTML_PARTS[part](value) for part, value in _parts(exp)) + "</div>"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def table_markdown(entries=ENTRIES) -> str:
    """The cheat sheet: one row per error the course explains, with a link to where it is taught."""
    head = [
        tr(h)
        for h in (
            "what PyTorch says (wording varies by release)",
            "what it means",
            "fix",
            "taught in",
        )
    ]
    rows = ["| " + " | ".join(head) + " |", "|---|---|---|---|"]
    for e in entries:
        code = [
            line.split("  #")[0].rstrip() for line in e.fix.split("\n") if not line.startswith("#")
        ]
        fix = "<br>".join(f"`{line}`" for line in code) or _cell(tr(e.fix.lstrip("# ")))
        section = taught_section(e)
        where = (
            (
                f"[{e.chapter} · {_cell(heading_text(section))}]"
                f"({_notebook(e)}#{heading_anchor(section)})"
            )
            if e.chapter
            else ""
        )
        rows.append(
            f"| `{_cell(e.signature)}` | {_cell(first_sentence(e.meaning))} | "
            f"{fix.replace('|', chr(92) + '|')} | {where} |"
        )
    return "\n".join(rows)


def first_sentence(text: str) -> str:
    """The first sentence of `text` in the course's language, with its full stop (the cheat
    sheet)."""
    said = tr(text)
    if CJK_STOP in said:
        return said.split(CJK_STOP)[0] + CJK_STOP
    return said.split(". ")[0].rstrip(".") + "."


def wordings_markdown(entry_id: str) -> str:
    """One error's wordings across releases and devices, as a Markdown table (chapter 02)."""
    entry = next(e for e in ENTRIES if e.id == entry_id)
    rows = [f"| {tr('where')} | {tr('what PyTorch prints')} |", "|---|---|"]
    rows += [f"| {_cell(tr(where))} | `{_cell(text)}` |" for where, text in entry.wordings]
    return "\n".join(rows)


def wordings(entry_id: str):
    """The wordings table in a notebook (chapter 02), rendered from the knowledge base."""
    from IPython.display import Markdown

    return Markdown(wordings_markdown(entry_id))


def cheat_sheet(entries=ENTRIES):
    """The cheat sheet as Markdown in a notebook (chapter 04), rendered from the knowledge base."""
    from IPython.display import Markdown

    return Markdown(table_markdown(entries))


__all__ = [
    "explain",
    "explain_text",
    "explain_exception",
    "explain_warning",
    "enable",
    "cheat_sheet",
    "table_markdown",
    "wordings",
    "wordings_markdown",
    "Explanation",
    "ENTRIES",
    "FAMILIES",
    "UNKNOWN",
    "family_of",
]
