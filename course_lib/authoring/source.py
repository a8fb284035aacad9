"""The source notebook of an assignment: nbgrader's markers, read strictly (standard library).

Code cells by their marker lines (alone on their line):

    ### ASSIGNMENT            first line of the one cell that imports and declares it:
                              `hw = Assignment("hw1", "Homework 1")`
    ### EXERCISE              first line of a cell declaring exercises (`hw.function_exercise`)
    ### BEGIN HIDDEN TESTS    inside an EXERCISE cell: hidden tests and known-wrong answers
    ### END HIDDEN TESTS      (`hw.hidden(...)`, `hw.wrong(...)`), left out of the student's copy
    ### BEGIN SOLUTION        inside the function's cell: the reference solution, replaced in the
    ### END SOLUTION          student's copy by `# YOUR CODE HERE` / `raise NotImplementedError`

Every other cell is handed out as it is (outputs and execution counts dropped). The key the
judge reads is the ASSIGNMENT, EXERCISE and solution cells, whole, in order.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

ASSIGNMENT, EXERCISE, SOLUTION, OTHER = "assignment", "exercise", "solution", "other"
HEAD = re.compile(r"^### (ASSIGNMENT|EXERCISE)\s*$")
MARKER = re.compile(
    r"^(?P<indent>[ \t]*)### (?P<end>BEGIN|END) (?P<what>SOLUTION|HIDDEN TESTS)\s*$"
)
ANY_MARKER = re.compile(r"###\s*(BEGIN|END)\s+(SOLUTION|HIDDEN TESTS)|^###\s*(ASSIGNMENT|EXERCISE)")
STUB = ("# YOUR CODE HERE", "raise NotImplementedError")
WHERE = {SOLUTION: ("SOLUTION",), EXERCISE: ("HIDDEN TESTS",)}  # regions each kind may hold


class SourceError(ValueError):
    """The source notebook cannot be released as written; the message names the cell."""


@dataclass
class Region:
    """One BEGIN/END region of a cell: what it is, its lines (markers excluded) and indent."""

    what: str
    indent: str
    start: int  # line index of its BEGIN marker
    end: int  # line index of its END marker

    def text(self, lines: list) -> str:
        return "\n".join(lines[self.start + 1 : self.end])


@dataclass
class SourceCell:
    """A cell of the source: its notebook JSON, kind, lines and regions."""

    number: int  # 1-based, as Jupyter shows nothing else
    raw: dict
    kind: str
    lines: list
    regions: list

    @property
    def source(self) -> str:
        return "\n".join(self.lines)


def _fail(number: int, what: str) -> SourceError:
    return SourceError(f"cell {number}: {what}")


def regions_of(number: int, lines: list) -> list:
    """The BEGIN/END regions of a cell's lines; SourceError for an unpaired or nested marker."""
    found, open_ = [], None
    for i, line in enumerate(lines):
        mark = MARKER.match(line)
        if mark is None:
            if ANY_MARKER.search(line) and not HEAD.match(line):
                raise _fail(
                    number, f"line {i + 1}: a marker must stand alone on its line: {line!r}"
                )
            continue
        what = mark["what"]
        if mark["end"] == "BEGIN":
            if open_ is not None:
                raise _fail(number, f"line {i + 1}: ### BEGIN {what} inside ### BEGIN {open_.what}")
            open_ = Region(what, mark["indent"], i, -1)
        elif open_ is None or open_.what != what:
            raise _fail(number, f"line {i + 1}: ### END {what} without its ### BEGIN {what}")
        else:
            open_.end = i
            found.append(open_)
            open_ = None
    if open_ is not None:
        raise _fail(number, f"### BEGIN {open_.what} has no ### END {open_.what}")
    return found


def _kind(number: int, lines: list, regions: list) -> str:
    head = HEAD.match(lines[0]) if lines else None
    kind = head[1].lower() if head else (SOLUTION if regions else OTHER)
    allowed = WHERE.get(kind, ())
    for region in regions:
        if region.what not in allowed:
            place = (
                "a function's cell, not a declaration"
                if region.what == "SOLUTION"
                else "a cell that starts with ### EXERCISE"
            )
            raise _fail(number, f"### BEGIN {region.what} belongs in {place}")
    if any(HEAD.match(line) for line in lines[1:]):
        raise _fail(number, "### ASSIGNMENT or ### EXERCISE must be the cell's first line")
    return kind


def cell_of(number: int, raw: dict) -> SourceCell:
    source = raw.get("source", "")
    lines = ("".join(source) if isinstance(source, list) else str(source)).split("\n")
    if raw.get("cell_type") != "code":
        if any(ANY_MARKER.search(line) for line in lines):
            raise _fail(number, "markers belong in code cells (this one is markdown)")
        return SourceCell(number, raw, OTHER, lines, [])
    regions = regions_of(number, lines)
    return SourceCell(number, raw, _kind(number, lines, regions), lines, regions)


@dataclass
class Source:
    """A source notebook: its JSON and its cells."""

    path: Path
    notebook: dict
    cells: list

    def of_kind(self, *kinds) -> list:
        return [c for c in self.cells if c.kind in kinds]


def read(path) -> Source:
    """Read and check a source notebook; SourceError saying what is wrong, and where."""
    path = Path(path)
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SourceError(f"{path} is not a readable notebook ({err})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise SourceError(f"{path} is not a notebook (no cells)")
    try:
        source = Source(path, notebook, [cell_of(i, c) for i, c in enumerate(notebook["cells"], 1)])
    except SourceError as err:
        raise SourceError(f"{path.name}, {err}") from None
    heads = source.of_kind(ASSIGNMENT)
    if len(heads) != 1:
        raise SourceError(
            f"{path.name} has {len(heads)} cells that start with ### ASSIGNMENT; it needs one, "
            'the cell that imports what the others use and declares hw = Assignment("hw1", ...)'
        )
    if heads[0] is not source.of_kind(ASSIGNMENT, EXERCISE, SOLUTION)[0]:
        raise SourceError(f"{path.name}: the ### ASSIGNMENT cell must come before the exercises")
    if not source.of_kind(EXERCISE):
        raise SourceError(f"{path.name} has no cell that starts with ### EXERCISE")
    return source


# ---------------------------------------------------------------- derived texts
def student_lines(cell: SourceCell) -> list:
    """The cell as handed out: no head marker, hidden blocks gone, solutions stubbed."""
    out, skip_to = [], -1
    starts = {r.start: r for r in cell.regions}
    for i, line in enumerate(cell.lines):
        if i <= skip_to or (i == 0 and HEAD.match(line)):
            continue
        region = starts.get(i)
        if region is None:
            out.append(line)
            continue
        skip_to = region.end
        if region.what == "SOLUTION":
            out += [region.indent + part for part in STUB]
    return out


def key_text(source: Source, title: str) -> str:
    """The key module: the ASSIGNMENT, EXERCISE and solution cells, whole, in order."""
    parts = [
        f'"""Answer key of {title} (teacher only: the grader\'s judge runs it).\n\n'
        f"Derived from {source.path.name} by `python -m course_lib assignment release`: edit the "
        'source and release again."""\n'
    ]
    for cell in source.of_kind(ASSIGNMENT, EXERCISE, SOLUTION):
        parts.append(f"# {'-' * 64} cell {cell.number}\n")
        parts.append(cell.source.rstrip("\n") + "\n")
    return "\n".join(parts)
