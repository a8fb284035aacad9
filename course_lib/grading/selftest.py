"""Submissions made from the answer key, to prove the grader and the key right (grader self-test).

As nbgrader's `validate` / `validate --invert`: the chapter's notebook with every stub
replaced by the reference solution must score full marks; the notebook as handed out must
score 0; a notebook holding the key's known-wrong answers must score exactly what the
engine gives those answers in-process. `split_result` grades one function the grader's way
in one process (the run half rebuilt from what a child receives, its observations through
the wire, the judge half apart), so the key self-tests prove every test's split on every
reference, stub and known-wrong answer. Used by tests/test_grading_selftest.py,
tests/test_exercise_keys.py and benchmarks/grading_speed.py.
"""

import ast
import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import notebooks
from ..checks.base import rebuild
from ..exercises import all_exercises, get, wire
from ..exercises.runner import observe
from .analyze import used_names

NOTEBOOK_NAMES = {"torch", "nn"}  # what every chapter notebook imports at the top


def split_result(exercise, candidate):
    """The exercise's verdict on `candidate` as the grader reaches it: each test's run half rebuilt
    from its builder's name and inputs after the wire (all a child gets), its observation through
    the wire, then the judge half; the learner's `check()` must give the same."""
    outcomes = []
    for test in exercise.graded_tests():
        builder, inputs = test.check.for_child()
        child_check = rebuild(builder, wire.loads(wire.dumps(inputs)))
        seen = observe(child_check, candidate, exercise.time_limit)
        try:
            seen = wire.loads(wire.dumps(seen))
        except wire.WireError:
            seen = {"too_large": True, "seconds": seen.get("seconds")}
        outcomes.append(exercise.judge(test, seen))
        if outcomes[-1].not_attempted:
            break
    return exercise.result(outcomes, include_hidden=True)


def _node_of(fn):
    """The def or lambda node that compiled into `fn`, and the module source it is in."""
    code = fn.__code__
    try:
        lines, _ = inspect.findsource(fn)
    except (OSError, TypeError):
        return None
    tree = ast.parse("".join(lines))
    nodes = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first == code.co_firstlineno and node.name == code.co_name:
                nodes.append(node)
        elif isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno:
            args = [a.arg for a in node.args.posonlyargs + node.args.args]
            if args == list(code.co_varnames[: code.co_argcount]):
                nodes.append(node)
    if (
        len(nodes) > 1
    ):  # several lambdas on one line: the one whose body holds the code's first column
        cols = [
            p[2] for p in code.co_positions() if p[0] == code.co_firstlineno and p[2] is not None
        ]
        nodes = (
            [n for n in nodes if cols and n.body.col_offset <= min(cols) < n.body.end_col_offset]
            if isinstance(nodes[0], ast.Lambda)
            else nodes
        )
    return nodes[0] if len(nodes) == 1 else None


def function_source(fn, name: str):
    """`fn` as a self-contained top-level `def name(...)` for a notebook, or None if it cannot be.

    Works for plain functions, lambdas, and closures over plain values (the values become
    the function's first lines). Refuses functions that use globals a notebook lacks.
    """
    node = _node_of(fn)
    if node is None:
        return None
    code = fn.__code__
    if isinstance(node, ast.Lambda):
        body = [ast.Return(node.body)]
    else:
        if any(isinstance(n, ast.Nonlocal) for n in ast.walk(node)):
            return None
        for sub in ast.walk(node):  # a recursive function calls itself by its new name
            if isinstance(sub, ast.Name) and sub.id == node.name:
                sub.id = name
        body = list(node.body)
    prelude = []
    for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
        text = _as_source(cell.cell_contents)
        if text is None:
            return None
        prelude.append(ast.parse(f"{var} = {text}").body[0])
    new = ast.FunctionDef(
        name=name,
        args=node.args,
        body=prelude + body,
        decorator_list=[],
        returns=None,
        type_comment=None,
    )
    for missing in sorted(used_names(new) - set(code.co_freevars) - NOTEBOOK_NAMES - {name}):
        module = fn.__globals__.get(missing)
        if not isinstance(module, type(ast)):  # only modules can be brought along, as an import
            return None
        alias = "" if missing == module.__name__ else f" as {missing}"
        prelude.insert(0, ast.parse(f"import {module.__name__}{alias}").body[0])
    new.body = prelude + body
    module = ast.Module(body=[new], type_ignores=[])
    ast.fix_missing_locations(module)
    return ast.unparse(module)


def _as_source(value):
    """Source that gives `value` back in a notebook
    (literals, torch dtypes and devices), or None."""
    import torch

    try:
        text = repr(value)
        return text if eval(text, {"torch": torch, "__builtins__": {}}) == value else None
    except Exception:  # noqa: BLE001 - anything that does not round-trip cannot be pasted
        return None


def wrong_quiz_answer(quiz, right):
    """A plainly wrong answer to a quiz (its right answer is `right`)."""
    normalized = quiz.normalize(right)
    if quiz.kind == "numeric":
        return float(normalized) * 2 + 1
    return next(k for k in quiz.options if k != normalized)


def make_submission(notebook: Path, functions: dict, answers: dict, compact: bool = False) -> dict:
    """The notebook with `def name` cells replaced by `functions[name]` and `answer_<name> = ...`
    lines set to `answers[name]`. `compact` keeps only the first code cell and the changed ones."""
    nb = notebooks.read(Path(notebook))
    kept, first_code = [], True
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        changed = False
        if cell["cell_type"] == "code":
            new = _replace_defs(src, functions)
            for name, value in answers.items():
                new = re.sub(
                    rf"^(answer_{name}\s*=\s*)(.+?)(\s+#.*)?$",
                    lambda m, value=value: m.group(1) + repr(value) + (m.group(3) or ""),
                    new,
                    flags=re.M,
                )
            changed, cell["source"] = new != src, new
        if not compact or (cell["cell_type"] == "code" and (first_code or changed)):
            kept.append(cell)
        if cell["cell_type"] == "code":
            first_code = False
    nb["cells"] = kept
    return nb


def _replace_defs(source: str, functions: dict) -> str:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.splitlines()
    for node in reversed(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in functions:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            lines[start - 1 : node.end_lineno] = functions[node.name].splitlines()
    return "\n".join(lines)


@dataclass
class Case:
    """One self-test submission and the verdict it must get: {exercise id: (status, points)}.

    A known-wrong case's verdict is the engine's, computed when first asked for (`judged`): the
    hidden tests of every wrong answer take a while, and listing the cases (pytest's collection,
    a class of reference and blank notebooks) need not pay it."""

    name: str
    notebook: dict
    known: dict = field(default_factory=dict)  # the verdict, when it is known at once
    skipped: list = field(
        default_factory=list
    )  # wrong answers that cannot be pasted into a notebook
    judged: Callable = None  # computes the verdict of a known-wrong case

    @functools.cached_property
    def expected(self) -> dict:
        return self.judged() if self.judged is not None else self.known


@functools.cache
def engine_result(exercise_id: str, index: int):
    """The engine's result (hidden tests included) for the key's known-wrong answer `index` of a
    function exercise, or for its reference solution past the last one; computed once."""
    key = get(exercise_id).key()
    wrongs = key.wrong_answers
    fn = wrongs[index].function if index < len(wrongs) else key.solution
    return get(exercise_id).check(fn, include_hidden=True, record=False)


def chapter_cases(number: str, compact_wrong: bool = True) -> list:
    """Reference, blank and known-wrong submissions of one chapter (its notebook must exist)."""
    notebook = notebooks.path_of(number)
    exercises = [e for e in all_exercises() if e.chapter.number == number]
    functions = [e for e in exercises if e.kind == "function"]
    quizzes = [e for e in exercises if e.kind != "function"]
    ref_src = {e.name: function_source(e.key().solution, e.name) for e in functions}
    missing = [n for n, s in ref_src.items() if s is None]
    if missing:
        raise ValueError(
            f"chapter {number}: reference solutions {missing} cannot be pasted into a notebook "
            "(they must be self-contained: torch, nn and their own imports only)"
        )
    right = {q.name: q.key().answer for q in quizzes}
    cases = [
        Case(
            f"ch{number}-reference",
            make_submission(notebook, ref_src, right),
            {e.id: ("correct", float(e.points)) for e in exercises},
        ),
        Case(
            f"ch{number}-blank",
            make_submission(notebook, {}, {}),
            {e.id: ("not attempted", 0.0) for e in exercises},
        ),
    ]
    rounds = max((len(e.key().wrong_answers) for e in functions), default=0)
    wrong_quiz = {q.name: wrong_quiz_answer(q, q.key().answer) for q in quizzes}
    for k in range(rounds):
        sources, skipped, pasted = {}, [], {}
        for e in functions:
            wrongs = e.key().wrong_answers
            fn = wrongs[k].function if k < len(wrongs) else e.key().solution
            source = function_source(fn, e.name)
            pasted[e.name] = k if source is not None else len(wrongs)  # past the last: the solution
            if source is None:
                skipped.append(f"{e.id}: {wrongs[k].label}")
                source = ref_src[e.name]
            sources[e.name] = source
        cases.append(
            Case(
                f"ch{number}-wrong{k + 1:02d}",
                make_submission(notebook, sources, wrong_quiz, compact=compact_wrong and k > 0),
                skipped=skipped,
                judged=functools.partial(_pasted_verdicts, quizzes, functions, pasted),
            )
        )
    return cases


def _pasted_verdicts(quizzes: list, functions: list, pasted: dict) -> dict:
    """The engine's verdict on what was pasted: each function's wrong answer (or solution)."""
    expected = {q.id: ("incorrect", 0.0) for q in quizzes}
    for e in functions:
        result = engine_result(e.id, pasted[e.name])
        expected[e.id] = (result.status, round(result.points, 3))
    return expected
