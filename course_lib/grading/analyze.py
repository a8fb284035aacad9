"""Reading a submission's source without running it: what the student defined, where (grader).

Exercises are found by what the notebook defines, never by cell metadata: the LAST
top-level binding of a name wins, in cell order, as in `Run All`. A function exercise's
check process later runs only the code its function needs (see `check_source`).
"""

import ast
import builtins
import re
import time
from dataclasses import dataclass, field

from ..exercises.scoring import review_flags
from .cells import BUDGET, code_cells, python_source, too_large

ANSWER_PREFIX = "answer_"
TEXT_PREFIX = "text_"
# A markdown cell holding a free-text answer starts with (or contains) this marker.
TEXT_MARKER = re.compile(r"<!--\s*answer:\s*([A-Za-z_][A-Za-z0-9_]*)\s*-->")
# The instruction an answer cell holds until the learner replaces it: a line of its own in
# italic brackets, "*(Your answer: ...)*" or "*（你的答案：……）*"; never part of the answer.
TEXT_INSTRUCTION = re.compile(r"^[ \t]*\*[(（][^\n]*[)）]\*[ \t]*$", re.M)
CHAPTER_MODULE = re.compile(r"^ch(\d\d)_[A-Za-z0-9_]+$")
_BUILTIN_NAMES = set(dir(builtins))


@dataclass
class Binding:
    """One top-level statement that binds `name`: a def, a class, a lambda or a plain assignment."""

    name: str
    kind: str  # def | class | assign | other
    cell: int
    line: int
    source: str = ""
    uses: set = field(default_factory=set)


@dataclass
class Analysis:
    """Everything the grader reads statically from one submission."""

    cells: list  # (cell number, source) of the code cells
    bindings: dict = field(default_factory=dict)  # name -> last Binding
    imports: list = field(default_factory=list)  # source of every top-level import, in order
    syntax_errors: dict = field(default_factory=dict)  # cell number -> message
    literals: dict = field(
        default_factory=dict
    )  # answer_/text_ name -> (cell, value or None, is_literal)
    markdown_texts: dict = field(
        default_factory=dict
    )  # free-text answers from marked markdown cells
    chapters: set = field(default_factory=set)  # chapter numbers whose module the notebook imports

    def defines(self, name: str) -> bool:
        return name in self.bindings

    def cell_with_text(self, name: str):
        """Numbers of cells that fail to parse but
        mention `name` (a def hidden by a syntax error)."""
        return [
            n
            for n, src in self.cells
            if n in self.syntax_errors and re.search(rf"\b{re.escape(name)}\b", src)
        ]


def _segment(lines: list, node, start=None) -> str:
    """The exact source of a top-level statement (decorators included), by byte offsets."""
    first = start or node
    l1, c1, l2, c2 = first.lineno, first.col_offset, node.end_lineno, node.end_col_offset
    raw = [line.encode() for line in lines[l1 - 1 : l2]]
    if l1 == l2:
        return raw[0][c1:c2].decode(errors="replace")
    return b"\n".join([raw[0][c1:]] + raw[1:-1] + [raw[-1][:c2]]).decode(errors="replace")


def used_names(node) -> set:
    """Global names a statement may read (over-approximated: locals are dropped roughly)."""
    loads, stores = set(), set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            (loads if isinstance(sub.ctx, ast.Load) else stores).add(sub.id)
        elif isinstance(sub, ast.arg):
            stores.add(sub.arg)
        elif isinstance(sub, ast.alias):  # an import inside the function
            stores.add((sub.asname or sub.name).split(".")[0])
        elif (
            isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and sub is not node
        ):
            stores.add(sub.name)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            stores.add(sub.name)
    return {n for n in loads - stores if n not in _BUILTIN_NAMES}


def _targets(node) -> list:
    """Names bound by a top-level statement other than
    def/class/import (loops, with, unpacking...)."""
    names = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(child.name)
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.append(child.id)
        elif not isinstance(
            child, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)
        ):
            names.extend(_targets(child))
    return names


def _chapters_of_import(node) -> set:
    found = set()
    if isinstance(node, ast.Import):
        modules = [a.name for a in node.names]
    else:
        modules = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
    for module in modules:
        parts = module.split(".")
        if len(parts) >= 2 and parts[0] == "course_lib":
            m = CHAPTER_MODULE.match(parts[1])
            if m:
                found.add(m.group(1))
    return found


def _record(analysis: Analysis, number: int, lines: list, stmt):
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        analysis.imports.append(_segment(lines, stmt))
        analysis.chapters |= _chapters_of_import(stmt)
        return
    for sub in ast.walk(stmt):  # imports nested in a top-level if/try still run in the notebook
        if (
            sub is not stmt
            and isinstance(sub, (ast.Import, ast.ImportFrom))
            and not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ):
            analysis.imports.append(_segment(lines, sub).strip())
            analysis.chapters |= _chapters_of_import(sub)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        start = min([stmt] + stmt.decorator_list, key=lambda n: (n.lineno, n.col_offset))
        source = _segment(lines, stmt, start)
        if start is not stmt:  # include the '@'
            source = "@" + source
        kind = "class" if isinstance(stmt, ast.ClassDef) else "def"
        analysis.bindings[stmt.name] = Binding(
            stmt.name, kind, number, stmt.lineno, source, used_names(stmt)
        )
        return
    simple = (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ) or (
        isinstance(stmt, ast.AnnAssign)
        and isinstance(stmt.target, ast.Name)
        and stmt.value is not None
    )
    if simple:
        name = stmt.targets[0].id if isinstance(stmt, ast.Assign) else stmt.target.id
        analysis.bindings[name] = Binding(
            name, "assign", number, stmt.lineno, _segment(lines, stmt), used_names(stmt.value)
        )
        if name.startswith((ANSWER_PREFIX, TEXT_PREFIX)):
            try:
                analysis.literals[name] = (number, ast.literal_eval(stmt.value), True)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                analysis.literals[name] = (number, None, False)
        return
    for name in _targets(stmt):
        analysis.bindings[name] = Binding(name, "other", number, stmt.lineno)
        if name.startswith((ANSWER_PREFIX, TEXT_PREFIX)):
            analysis.literals[name] = (number, None, False)


def analyze(cells: list) -> Analysis:
    """Statically read a notebook's cells, as returned by `cells.read_cells`."""
    analysis = Analysis(code_cells(cells))
    for kind, source in cells:
        if kind == "markdown":
            answer = TEXT_INSTRUCTION.sub("", TEXT_MARKER.sub("", source)).strip()
            for name in TEXT_MARKER.findall(source):
                if answer:  # an answer cell left as handed out is no answer
                    analysis.markdown_texts[name] = answer
    spent = 0.0
    for number, source in analysis.cells:
        if spent > BUDGET["transform_seconds"]:
            raise too_large(
                "the time to read its cells, in seconds", spent, BUDGET["transform_seconds"]
            )
        try:
            start = time.monotonic()
            try:
                text = python_source(source)
            finally:
                spent += time.monotonic() - start
            tree = ast.parse(text)
        except (SyntaxError, ValueError) as err:
            analysis.syntax_errors[number] = f"{type(err).__name__}: {err}"
            continue
        except (RecursionError, MemoryError):
            analysis.syntax_errors[number] = "the cell is too deeply nested to read"
            continue
        lines = text.splitlines()
        for stmt in tree.body:
            _record(analysis, number, lines, stmt)
    return analysis


def needed_bindings(analysis: Analysis, name: str) -> list:
    """The top-level definitions `name` needs (itself,
    and what it uses, transitively), in notebook order."""
    seen, todo = {}, [name]
    while todo:
        current = todo.pop()
        binding = analysis.bindings.get(current)
        if current in seen or binding is None or binding.kind == "other":
            continue
        seen[current] = binding
        todo.extend(binding.uses)
    return sorted(seen.values(), key=lambda b: (b.cell, b.line))


# The course's own reference code that a wrong answer could call in place of its own work: a
# function under test that reaches it is flagged for review, as patching is (issue 34, item 5).
COURSE_REFERENCE = {
    "course_lib.training": ("train_step", "stepper", "train_epoch", "evaluate", "fit"),
    "course_lib.checks": None,  # any of it (the rigs and probes the tests use)
}
COURSE_REFERENCE_TEXT = re.compile(r"\bcourse_lib\s*\.\s*(?:training|checks)\b")


def _course_names(imports: list) -> tuple:
    """(module aliases, bare names) the notebook's imports bind to COURSE_REFERENCE code."""
    modules, names = {}, set()
    for text in imports:
        try:
            tree = ast.parse(text.strip())
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in COURSE_REFERENCE and a.asname:
                        modules[a.asname] = COURSE_REFERENCE[a.name]
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full in COURSE_REFERENCE:
                        modules[a.asname or a.name] = COURSE_REFERENCE[full]
                    wanted = COURSE_REFERENCE.get(node.module or "", ())
                    if wanted is None or a.name in (wanted or ()):
                        names.add(a.asname or a.name)
    return modules, names


def calls_course_reference(analysis: Analysis, text: str) -> bool:
    """Does a function's code (`text`) reach the course's reference loops or check helpers?"""
    if COURSE_REFERENCE_TEXT.search(text):
        return True
    modules, names = _course_names(analysis.imports)
    own = {n for n, b in analysis.bindings.items() if b.kind in ("def", "class", "assign")}
    for alias, wanted in modules.items():
        attrs = r"\w+" if wanted is None else "|".join(wanted)
        if alias not in own and re.search(rf"\b{re.escape(alias)}\s*\.\s*(?:{attrs})\b", text):
            return True
    return any(re.search(rf"(?<![\w.]){re.escape(n)}\b", text) for n in names - own)


def check_source(analysis: Analysis, name: str) -> dict:
    """What a check process runs for exercise `name`: the imports, then the definitions it needs.

    Top-level statements that define nothing the function uses (patches, prints, loops)
    never run there.
    """
    bindings = needed_bindings(analysis, name)
    text = "\n".join(b.source for b in bindings)
    flags = review_flags(text, function=True)
    if calls_course_reference(analysis, text):
        flags = sorted(set(flags) | {"course reference code"})
    return {
        "imports": list(dict.fromkeys(analysis.imports)),
        "definitions": [(b.name, b.cell, b.source) for b in bindings],
        "flags": flags,
    }


def notebook_flags(analysis: Analysis) -> list:
    """Review patterns anywhere in the notebook's code (reading the key, networking, signals...)."""
    return review_flags("\n".join(source for _, source in analysis.cells))


def chapter_guess(analysis: Analysis, names_by_chapter: dict) -> set:
    """The chapters a notebook is for: those whose
    module it imports, narrowed to those it answers."""
    imported = set(analysis.chapters)
    answering = {
        ch for ch, names in names_by_chapter.items() if any(analysis.defines(n) for n in names)
    }
    if len(imported) > 1 and imported & answering:
        return imported & answering
    return imported or answering
