"""Verdicts: each function exercise is checked in its own fresh process; quizzes in the grader (grader).

A check process is forked from the pristine grader, so nothing the notebook's top-level
code did (patching course_lib, builtins or torch) exists there. It runs only the
notebook's imports and the definitions the exercise's function needs, then the engine's
check with the hidden tests. Before any student code runs it takes the answer key out of
reach (the key modules leave sys.modules and can no longer be imported) and notes the
identity of every function the check relies on; if student code changed one of them while
being tested, the verdict is "tampered". The grader then re-derives the points from its
own copy of the test list and weights, and believes nothing else the process says.
"""
import importlib.abc
import sys

from ..exercises import CORRECT, INCORRECT, NOT_ATTEMPTED, get
from .cells import notebook_namespace

_KEY = "course_lib.key"


class _KeyBlocker(importlib.abc.MetaPathFinder):
    """Refuses imports of the answer key inside a check process, once the check has its tests."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _KEY or fullname.startswith(_KEY + "."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def hide_key(exercise, tests) -> None:
    """Keep this check's tests; make the key (solutions, hidden tests) unreachable by import."""
    exercise.all_tests = lambda include_hidden=False: list(tests) if include_hidden else list(exercise.tests)
    exercise.key = lambda: None
    for name in [m for m in sys.modules if m == _KEY or m.startswith(_KEY + ".")]:
        del sys.modules[name]
    import course_lib
    if hasattr(course_lib, "key"):
        delattr(course_lib, "key")
    sys.meta_path.insert(0, _KeyBlocker())


def _watched_objects() -> dict:
    """Modules and classes whose functions a verdict relies on: builtins, torch's core, course_lib."""
    import builtins

    import torch
    objects = {"builtins": builtins, "torch": torch, "torch.nn": torch.nn, "torch.Tensor": torch.Tensor,
               "torch.nn.Module": torch.nn.Module, "torch.nn.functional": torch.nn.functional,
               "torch.optim": torch.optim}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "course_lib" or name.startswith("course_lib.")):
            continue
        objects[name] = module
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and getattr(value, "__module__", "") == name:
                objects[f"{name}.{attr}"] = value
    return objects


def integrity_snapshot(exercise, tests) -> dict:
    """Identity of every callable the verdict depends on (functions, classes, their code)."""
    snap = {("sys.modules", name): id(module) for name, module in list(sys.modules.items())
            if name.startswith(("course_lib", "torch", "builtins"))}
    for label, obj in _watched_objects().items():
        for name, value in list(vars(obj).items()):
            if callable(value) or isinstance(value, (type, staticmethod, classmethod, property)) \
                    or type(value).__name__ == "module":
                snap[(label, name)] = (id(value), id(getattr(value, "__code__", None)))
    snap[("exercise", "tests")] = (id(exercise.tests), tuple(
        (id(t), id(t.run), id(getattr(t.run, "__code__", None)), t.name, t.weight, t.hidden) for t in tests),
        exercise.points, exercise.time_limit, id(exercise.all_tests), id(exercise.key))
    return snap


def integrity_changes(before: dict, exercise, tests) -> list:
    after = integrity_snapshot(exercise, tests)
    return sorted(f"{a}.{b}" for (a, b), value in before.items() if after.get((a, b)) != value)[:10]


def _test_rows(result) -> list:
    rows = []
    for t in result.tests:
        rows.append({"name": t.name, "passed": bool(t.passed), "hidden": bool(t.hidden), "weight": t.weight,
                     "feedback": " ".join(t.public_lines())})
    return rows


def check_body(channel, confined: bool, exercise_id: str, source: dict, test_timeout: float) -> None:
    """Child entry point: define the learner's function from its source, run the full check."""
    exercise = get(exercise_id)
    tests = exercise.all_tests(include_hidden=True)
    hide_key(exercise, tests)
    if test_timeout:
        exercise.time_limit = min(exercise.time_limit, test_timeout)
    before = integrity_snapshot(exercise, tests)
    namespace = notebook_namespace()
    problems = []
    for statement in source["imports"]:
        try:
            exec(compile(statement, "<your imports>", "exec"), namespace)
        except BaseException as err:  # noqa: BLE001
            problems.append(f"import failed: {statement.strip()[:120]} ({type(err).__name__})")
    for name, cell, text in source["definitions"]:
        try:
            exec(compile(text, f"<cell {cell}>", "exec"), namespace)
        except BaseException as err:  # noqa: BLE001
            problems.append(f"defining {name} (cell {cell}) raised {type(err).__name__}: {str(err)[:300]}")
    candidate = namespace.get(exercise.name)
    if candidate is None and problems:
        channel.send("result", status="error", summary="; ".join(problems)[:1000], tests=[], problems=problems)
        return
    result = exercise.check(candidate, include_hidden=True, record=False)
    changed = integrity_changes(before, exercise, tests)
    channel.send("result", status=result.status, summary=result.summary, tests=_test_rows(result),
                 problems=problems, tampered=changed)


def validate(message, exercise, spec: list) -> dict:
    """The grader's verdict from a check process's report, re-derived from its own test list.

    `spec` is [(name, weight, hidden)] of the exercise's tests, taken before any child ran; a
    test from the answer key counts as hidden even if it was not declared `hidden=True`.
    """
    verdict = {"status": "crashed", "points": 0.0, "max_points": exercise.points, "tests": [],
               "passed": 0, "total": len(spec), "detail": "", "flags": []}
    if message is None:
        return verdict
    status, tests = message.get("status"), message.get("tests")
    if not isinstance(tests, list) or status not in (CORRECT, INCORRECT, NOT_ATTEMPTED, "error"):
        verdict.update(status="tampered", detail="the check process sent a report the grader cannot trust")
        return verdict
    if message.get("tampered"):
        verdict.update(status="tampered", detail="while being tested, the code changed the grader's functions: "
                       + ", ".join(map(str, message["tampered"]))[:300])
        verdict["flags"].append("tampered")
        return verdict
    summary = str(message.get("summary", ""))[:1000]
    problems = [str(p)[:200] for p in message.get("problems") or [] if isinstance(p, str)][:5]
    if problems and status not in (CORRECT, "error"):  # e.g. a failed import explains a NameError
        summary += " Note: " + "; ".join(problems)
    if status == "error" or not tests:
        verdict.update(status=status if status in (NOT_ATTEMPTED, INCORRECT, "error") else "tampered",
                       detail=summary)
        return verdict
    if [t.get("name") if isinstance(t, dict) else None for t in tests] != [name for name, _, _ in spec]:
        verdict.update(status="tampered", detail="the tests reported are not the exercise's tests")
        return verdict
    passed = [t.get("passed") is True for t in tests]
    total_weight = sum(w for _, w, _ in spec) or 1.0
    points = exercise.points * sum(w for (_, w, _), ok in zip(spec, passed) if ok) / total_weight
    verdict.update(status=CORRECT if all(passed) else INCORRECT, points=round(points, 3), passed=sum(passed),
                   detail=summary, tests=[{"name": name, "hidden": hidden, "passed": ok,
                                           "feedback": "" if hidden else str(t.get("feedback", ""))[:1500]}
                                          for (name, _, hidden), t, ok in zip(spec, tests, passed)])
    return verdict


ANSWER_TYPES = (str, int, float, bool, type(None))


def valid_answer(value) -> bool:
    if isinstance(value, ANSWER_TYPES):
        return True
    return isinstance(value, list) and len(value) <= 64 and all(isinstance(v, ANSWER_TYPES) for v in value)


def check_quiz(quiz, value, present: bool) -> dict:
    """A quiz verdict in the grader itself: the answer is plain data, no student code runs."""
    verdict = {"status": "missing", "points": 0.0, "max_points": quiz.points, "tests": [], "passed": 0,
               "total": 1, "detail": f"no line `answer_{quiz.name} = ...` in the notebook", "flags": [],
               "answer": value}
    if not present:
        return verdict
    if isinstance(value, dict) or not valid_answer(value):
        verdict.update(status=INCORRECT, detail=f"`answer_{quiz.name}` is not a plain answer "
                                                f"(a letter, a list of letters or a number)")
        return verdict
    result = quiz.check(value, include_hidden=True, record=False)
    verdict.update(status=result.status, points=round(result.points, 3), detail=result.summary,
                   passed=int(result.correct))
    return verdict
