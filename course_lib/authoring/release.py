"""Release an assignment from its source notebook, and check that nothing derived has drifted.

    python -m course_lib assignment release SOURCE.ipynb OUT/
    python -m course_lib assignment check SOURCE.ipynb OUT/

OUT/NAME.ipynb is the student's copy (hand it out), OUT/index.json the exercises as the grader
and the exports read them, OUT/key/NAME.py the key (the teacher's only, 0600: the grader's judge
runs it; `grade --assignment OUT/`). Before writing, the release proves the source right: every
test a split check, the reference passing every test, each known-wrong answer failing with its
feedback, each stub not attempted, no solution or hidden text in the student's copy.
"""

import copy
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..exercises import CORRECT, NOT_ATTEMPTED, index, wire
from ..i18n.catalogue import in_language
from . import source as src
from .assignment import Assignment

EXPECTED_LINE = "{var}.expected({name!r}, {values!r})  # the visible tests' expected values"


@dataclass
class Derived:
    """Everything a release writes, as text, by path relative to OUT/."""

    files: dict  # relative path -> text
    assignment: Assignment
    key_path: str


def _problem(ex, what: str) -> src.SourceError:
    return src.SourceError(f"exercise {ex.id}: {what}")


def run_key_cells(source: src.Source) -> tuple:
    """(assignment, namespace, {cell number: [exercise names it declared]}): the key's cells run
    one by one, as the judge runs the key file."""
    namespace = {"__name__": "__course_assignment_key__"}
    declared, seen = {}, set()
    for cell in source.of_kind(src.ASSIGNMENT, src.EXERCISE, src.SOLUTION):
        try:
            exec(compile(cell.source, f"{source.path.name}, cell {cell.number}", "exec"), namespace)  # noqa: S102 - the teacher's own source
        except Exception as err:  # noqa: BLE001 - the teacher's code: said with its cell
            raise src.SourceError(
                f"{source.path.name}, cell {cell.number} failed: {type(err).__name__}: {err}"
            ) from None
        found = [v for v in namespace.values() if isinstance(v, Assignment)]
        if cell.kind == src.ASSIGNMENT and len(found) != 1:
            raise src.SourceError(
                f"{source.path.name}, cell {cell.number} must declare one Assignment "
                '(hw = Assignment("hw1", "Homework 1")); it declares ' + str(len(found))
            )
        if cell.kind == src.EXERCISE:
            names = [n for n in found[0].exercises if n not in seen]
            if not names:
                raise src.SourceError(
                    f"{source.path.name}, cell {cell.number} starts with ### EXERCISE but "
                    "declares no exercise"
                )
            declared[cell.number] = names
            seen.update(names)
    assignment = found[0]
    assignment.bind(namespace)
    return assignment, namespace, declared


def check_tests(ex) -> None:
    """Every test is a course check the grader can split (its run half rebuilt in the child)."""
    for test in ex.graded_tests():
        module = type(test.check).__module__
        if not test.check.splittable or not module.startswith("course_lib.checks."):
            raise _problem(
                ex,
                f"test {test.name!r} ({type(test.check).__name__}) is of a type the grader "
                "cannot split; use generic.Returns, generic.Raises, generic.StateAfter or a "
                "course check from course_lib.checks",
            )


def _first_failure(result) -> str:
    failed = [o for o in result.tests if not o.passed]
    return f"{failed[0].name!r}: {failed[0].message}" if failed else result.summary


def prove(ex, stub) -> None:
    """The reference passes, each known-wrong answer fails with its feedback, the stub is not
    attempted; SourceError naming the first that does not."""
    key = ex.key()
    if key is None or not key.wrong_answers:
        raise _problem(ex, "no known-wrong answer (hw.wrong(...) in the hidden block)")
    if key.solution is None:
        raise _problem(ex, f"no solution cell defines the function {ex.name}")
    check_tests(ex)
    result = ex.check(key.solution, include_hidden=True, record=False)
    if result.status != CORRECT:
        raise _problem(ex, f"the reference solution fails its test {_first_failure(result)}")
    for wrong in key.wrong_answers:
        result = ex.check(wrong.function, include_hidden=True, record=False)
        feedback = " ".join(line for o in result.tests for line in o.public_lines())
        if result.status == CORRECT:
            raise _problem(ex, f"the wrong answer {wrong.label!r} passes every test")
        if wrong.feedback_contains and wrong.feedback_contains not in feedback:
            raise _problem(
                ex,
                f"the feedback on the wrong answer {wrong.label!r} does not say "
                f"{wrong.feedback_contains!r}; it says: {feedback[:300]}",
            )
    result = ex.check(stub, include_hidden=True, record=False) if callable(stub) else None
    if result is None or result.status != NOT_ATTEMPTED:
        got = result.status if result else "no function"
        raise _problem(ex, f"the student's stub would not be 'not attempted' ({got})")


def stubs(source: src.Source, namespace: dict) -> dict:
    """The student's functions: each solution cell's stubbed copy, run on the key's names."""
    found = {}
    for cell in source.of_kind(src.SOLUTION):
        space = dict(namespace)
        exec(compile("\n".join(src.student_lines(cell)), "<stub>", "exec"), space)  # noqa: S102
        found.update({k: v for k, v in space.items() if v is not namespace.get(k)})
    return found


def published(ex) -> list:
    """The visible tests' expected values, one wire line each (None where a test needs none)."""
    values = []
    for test in ex.tests:
        ref = test.check.reference_value(ex.reference_solution())
        values.append(None if ref is None else wire.dumps(ref))
    return values


def _variable(assignment, namespace: dict) -> str:
    names = [k for k, v in namespace.items() if v is assignment and not k.startswith("_")]
    if not names:
        raise src.SourceError("the ### ASSIGNMENT cell must name its Assignment (hw = ...)")
    return names[0]


def student_notebook(source: src.Source, assignment, namespace: dict, declared: dict) -> dict:
    """The student's copy: every cell, solutions stubbed, hidden blocks and outputs gone, each
    declaration cell ending with its exercises' expected values."""
    var = _variable(assignment, namespace)
    nb = copy.deepcopy(source.notebook)
    cells = []
    for cell, raw in zip(source.cells, nb["cells"]):
        if cell.kind != src.OTHER or raw.get("cell_type") == "code":
            lines = src.student_lines(cell) if cell.kind != src.OTHER else list(cell.lines)
            for name in declared.get(cell.number, []):
                values = published(assignment.exercises[name])
                lines.append(EXPECTED_LINE.format(var=var, name=name, values=values))
            raw["source"] = "\n".join(lines).strip("\n")
            raw["outputs"], raw["execution_count"] = [], None
        raw["source"] = _as_lines(raw.get("source", ""))
        cells.append(raw)
    nb["cells"] = cells
    return nb


def _as_lines(text) -> list:
    text = "".join(text) if isinstance(text, list) else str(text)
    return text.splitlines(keepends=True)


def leaks(source: src.Source, notebook_text: str) -> list:
    """What of the solutions and hidden blocks is still in the student's copy (should be none)."""
    shown = "\n".join("".join(c.get("source", "")) for c in json.loads(notebook_text)["cells"])
    found = [m for m in ("### BEGIN", "### END", "### ASSIGNMENT", "### EXERCISE") if m in shown]
    for cell in source.cells:
        for region in cell.regions:
            body = region.text(cell.lines).strip()
            if body and body in shown:
                found.append(f"cell {cell.number}'s {region.what.lower()}")
    return found


def derive(source_path) -> Derived:
    """Every file of the release, as text; SourceError for a source that cannot be released.
    The proof reads the checks' feedback in English, whatever the course's language."""
    with in_language("en"):
        return _derive(source_path)


def _derive(source_path) -> Derived:
    source = src.read(source_path)
    assignment, namespace, declared = run_key_cells(source)
    found = stubs(source, namespace)
    for ex in assignment.exercises.values():
        prove(ex, found.get(ex.name))
    notebook = student_notebook(source, assignment, namespace, declared)
    from .. import notebooks

    text = notebooks.dumps(notebook)
    leaked = leaks(source, text)
    if leaked:
        raise src.SourceError(f"the student's copy would still hold: {', '.join(leaked)}")
    rows = [index.row_of(ex) for ex in sorted(assignment.exercises.values(), key=lambda e: e.id)]
    key_path = f"key/{assignment.name}.py"
    head = {
        "name": assignment.name,
        "title": assignment.title,
        "notebook": assignment.notebook,
        "key": key_path,
        "source": source.path.name,
    }
    files = {
        assignment.notebook: text,
        "index.json": index.text({"assignment": head, "exercises": rows}),
        key_path: src.key_text(source, assignment.title),
    }
    return Derived(files, assignment, key_path)


def release(source_path, out) -> Derived:
    """Derive, prove and write the release into `out` (the key 0600 in a 0700 folder)."""
    derived = derive(source_path)
    out = Path(out)
    for relative, text in derived.files.items():
        path = out / relative
        secret = relative == derived.key_path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700 if secret else 0o777)
        if secret:
            os.chmod(path.parent, 0o700)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    return derived


def drift(source_path, out) -> list:
    """[(relative path, 'missing' or 'differs')] of the derived files `out` does not match."""
    derived = derive(source_path)
    found = []
    for relative, text in derived.files.items():
        path = Path(out) / relative
        if not path.is_file():
            found.append((relative, "missing"))
        elif path.read_text(encoding="utf-8") != text:
            found.append((relative, "differs"))
    return found
