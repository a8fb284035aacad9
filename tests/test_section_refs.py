"""Section references in the course's text point at headings that exist and say what they name.

Issue 15.1: a quiz hint pointed to 3.4 for a table in 3.5, an explainer fix to 3.5 for what 3.6
teaches. So no section number is typed in course_lib's text: it is named by words of its heading
(`course_lib.sections.section`), and the one table of numbers is checked against the notebooks.
- every entry of `sections.SECTIONS` is a real numbered heading of that chapter's notebook, and
  its title contains the words the entry names it by;
- every `section(chapter, words)` call in course_lib names an entry of that table;
- no string in course_lib's learner-facing modules types a section number;
- every section reference in the rendered text (quizzes, exercises, explainer entries) and in the
  notebooks' own prose names a numbered heading of the chapter it refers to.
"""

import ast
import re
from pathlib import Path

import pytest

from course_lib import notebooks
from course_lib.exercises import all_exercises
from course_lib.explainer.knowledge import ENTRIES
from course_lib.sections import SECTIONS
from support import NOTEBOOKS, ROOT

HEADING = re.compile(r"^#{2,4}\s+(\d+[a-z]?(?:\.\d+)?)\.?\s+(.*)$")
# a typed reference: "section 3.5", "Section 2's", "sections 3", "(chapter 06, 3.5)", "see 3.5"
TYPED = re.compile(r"\bsections? \d|\bchapter \d\d,? (?:section )?\d|\bsee \d+\.\d|§\s*\d", re.I)
REFERENCE = re.compile(
    r"(?:\bchapter (?P<chapter>\d\d),? )?\bsections? (?P<number>\d+[a-z]?(?:\.\d+)?)", re.I
)
BARE_SUBSECTION = re.compile(r"\((?P<number>\d\.\d) ")  # "(3.6 keeps the batch ...)" in a notebook
TEXT_MODULES = sorted(
    p
    for p in [
        *(ROOT / "course_lib").glob("ch0*_*.py"),
        ROOT / "course_lib" / "widgets.py",
        ROOT / "course_lib" / "gpu_notes.py",
        *(ROOT / "course_lib" / "explainer").glob("*.py"),
    ]
    if p.exists()
)


def headings(chapter: str) -> dict:
    """{number: heading title} of chapter `chapter`'s notebook, for its numbered headings."""
    found = {}
    for text in notebooks.markdown(chapter):
        for line in text.splitlines():
            match = HEADING.match(line)
            if match:
                found[match.group(1)] = match.group(2)
    return found


def strings_in(path: Path):
    """(line, text) of every string constant in a module, f-strings' literal parts included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def section_calls(path: Path):
    """(line, chapter, words) of every section("NN", "words") call in a module."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", "")) == "section"
        ):
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            yield node.lineno, *args


def rendered_texts():
    """(where, chapter, text) for every learner-facing text the exercises and the explainer hold."""
    for ex in all_exercises():
        parts = [
            ex.prompt,
            *ex.hints,
            *getattr(ex, "options", {}).values(),
            *getattr(ex, "why", {}).values(),
            getattr(ex, "explanation", ""),
        ]
        for text in parts:
            yield ex.id, ex.chapter.number, text
    for entry in ENTRIES:
        for text in (entry.meaning, entry.fix, *entry.causes):
            yield f"explainer entry {entry.id}", entry.chapter, text


def dangling(chapter: str, text: str) -> list:
    """The section references in `text` (read as
    chapter `chapter`'s) that name no numbered heading."""
    missing = []
    for match in REFERENCE.finditer(text):
        target = match.group("chapter") or chapter
        if match.group("number") not in headings(target):
            missing.append(
                f"{match.group(0)!r} (chapter {target} has sections {sorted(headings(target))})"
            )
    return missing


@pytest.mark.parametrize("chapter", sorted(SECTIONS))
def test_every_section_in_the_table_is_a_real_heading_with_those_words(chapter):
    real = headings(chapter)
    wrong = [
        f"{words!r} -> {number}: "
        + (
            f"heading {number} is {real[number]!r}"
            if number in real
            else f"no heading numbered {number}"
        )
        for words, number in SECTIONS[chapter].items()
        if words.lower() not in real.get(number, "").lower()
    ]
    assert not wrong, f"course_lib/sections.py, chapter {chapter}: " + "; ".join(wrong)


@pytest.mark.parametrize("path", TEXT_MODULES, ids=lambda p: p.name)
def test_section_calls_name_an_entry_of_the_table(path):
    unknown = [
        f"line {line}: section{args!r}"
        for line, *args in section_calls(path)
        if len(args) < 2 or args[1] not in SECTIONS.get(args[0], {})
    ]
    assert not unknown, f"{path.name}: " + "; ".join(unknown)


@pytest.mark.parametrize("path", TEXT_MODULES, ids=lambda p: p.name)
def test_no_section_number_is_typed_in_course_lib_text(path):
    typed = [
        f"line {line}: {TYPED.search(text).group(0)!r} in {text[:70]!r}"
        for line, text in strings_in(path)
        if TYPED.search(text)
    ]
    assert not typed, (
        f"{path.name} types section numbers; write section(chapter, heading words) "
        f"from course_lib.sections instead: " + "; ".join(typed)
    )


def test_every_rendered_reference_names_a_numbered_heading():
    wrong = [
        f"{where}: {', '.join(missing)}"
        for where, chapter, text in rendered_texts()
        for missing in [dangling(chapter, text)]
        if missing
    ]
    assert not wrong, "; ".join(wrong)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_reference_in_a_notebook_names_a_numbered_heading(path):
    chapter = path.name[:2]
    prose = notebooks.markdown(path)
    wrong = [m for text in prose for m in dangling(chapter, text)]
    wrong += [
        f"{m.group(0)!r}"
        for text in prose
        for m in BARE_SUBSECTION.finditer(text)
        if m.group("number") not in headings(chapter)
    ]
    assert not wrong, f"{path.name}: " + "; ".join(wrong)
