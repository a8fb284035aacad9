"""Function exercises: tested in a check process, judged in the grader; quizzes judged in the grader.

The check process (forked from the check zygote, isolated) takes its tests, hides the key
from import, notes the identity of everything the tests rely on (`Integrity`), arms the
tripwire (tripwire.py), and only then defines the student's function from its source. It
runs one test at a time and, after each, checks that nothing the tests rely on was
changed; it reports each outcome as a sealed line (protocol.py), as data: test index and
name, passed or not, what the learner may read. It never reports points.

The grader (`judge`) believes only sealed lines with the right MAC and sequence; it
requires one line per test of its own test list (names, in order, taken from the zygote
before any student code existed), computes the points itself (scoring.py), and turns a
tripped wire, a changed function, forged lines or an incomplete report into "tampered" or
a crash: points only for tests whose passing was reported by the harness itself.
"""
import _thread
import gc
import importlib.abc
import signal
import sys

from ..exercises import CORRECT, INCORRECT, NOT_ATTEMPTED, get, scoring
from . import tripwire
from .cells import notebook_namespace
from .protocol import encode_fields, sealed_writer

_KEY = "course_lib.key"
_WATCHED_MODULES = ("builtins", "sys", "math", "json", "torch", "torch.nn", "torch.nn.functional",
                    "torch.nn.modules.module", "torch.optim", "torch.optim.optimizer", "torch.utils.data",
                    "torch.utils.data.dataloader", "torch.testing", "torch.autograd", "torch.random",
                    "torch.amp", "torch.cuda", "torch.utils._python_dispatch", "torch.utils._pytree")
_WATCHED_CLASSES = ("torch.Tensor", "torch.nn.Module", "torch.optim.Optimizer", "torch.utils.data.DataLoader")


class _KeyBlocker(importlib.abc.MetaPathFinder):
    """Refuses imports of the answer key inside a check process, once the check has its tests."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _KEY or fullname.startswith(_KEY + "."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def hide_key(exercise) -> list:
    """Take this check's tests; make the key (solutions, hidden tests) unreachable by import."""
    tests = exercise.all_tests(include_hidden=True)
    solution = exercise.reference_solution()  # what hidden tests compare with, kept before the key goes
    exercise.reference_solution = lambda: solution
    exercise.key = lambda: None
    for name in [m for m in sys.modules if m == _KEY or m.startswith(_KEY + ".")]:
        del sys.modules[name]
    import course_lib
    if hasattr(course_lib, "key"):
        delattr(course_lib, "key")
    sys.meta_path.insert(0, _KeyBlocker())
    return tests


class Integrity:
    """What the tests rely on, by identity: module attributes, class dictionaries, signal
    handlers, import hooks, gc callbacks, the number of threads; taken before student code."""

    def __init__(self, exercise):
        self.exercise = exercise
        self.before = self.snapshot()

    def _objects(self) -> dict:
        objects = {}
        for name, module in list(sys.modules.items()):
            if module is not None and (name in _WATCHED_MODULES or name.startswith("course_lib")):
                objects[name] = module
                for attr, value in list(vars(module).items()):
                    if isinstance(value, type) and getattr(value, "__module__", "") == name:
                        objects[f"{name}.{attr}"] = value
        for path in _WATCHED_CLASSES:
            module, _, attr = path.rpartition(".")
            objects[path] = getattr(sys.modules[module], attr)
        objects["exercise"] = self.exercise
        return objects

    def snapshot(self) -> dict:
        snap = {(label, name): value for label, obj in self._objects().items()
                for name, value in list(vars(obj).items()) if name != "all_tests"}
        snap[("signals", "handlers")] = tuple(signal.getsignal(s) for s in signal.valid_signals()
                                              if s not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGALRM))
        snap[("sys", "hooks")] = (tuple(sys.meta_path), tuple(sys.path_hooks), tuple(gc.callbacks),
                                  sys.excepthook, sys.displayhook)
        snap[("threads", "count")] = _thread._count()
        return snap

    def changes(self) -> list:
        """What differs from the snapshot (by identity), at most 10 names."""
        after = self.snapshot()
        changed = [f"{a}.{b}" for (a, b), value in self.before.items() if after.get((a, b), self) is not value
                   and not (isinstance(value, (int, str, float, bool, tuple)) and after.get((a, b)) == value)]
        labels = {a for a, _ in self.before}
        changed += [f"{a}.{b}" for (a, b), value in after.items() if (a, b) not in self.before and a in labels
                    and type(value).__name__ != "module"]  # a lazily imported submodule is no patch
        return sorted(changed)[:10]


def _define(source: dict) -> tuple:
    """The notebook's imports and the definitions the function needs: (namespace, problems)."""
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
    return namespace, problems


def _one_test(exercise, test, candidate) -> tuple:
    """(status, passed, learner-facing feedback) of one test, through the engine's own check."""
    exercise.all_tests = lambda include_hidden=False, _only=(test,): list(_only)
    result = exercise.check(candidate, include_hidden=True, record=False)
    if not result.tests:
        return result.status, False, result.summary
    outcome = result.tests[0]
    return result.status, bool(outcome.passed), " ".join(outcome.public_lines())


def check_body(report_fd: int, held: dict, job: dict) -> None:
    """Child entry point: test the learner's function one test at a time, report sealed data."""
    send, encode = sealed_writer(report_fd, job.pop("key")), encode_fields
    exercise = get(job["exercise"])
    tests = hide_key(exercise)
    if job.get("test_timeout"):
        exercise.time_limit = min(exercise.time_limit, job["test_timeout"])
    integrity = Integrity(exercise)
    tripwire.arm(send, encode)
    send(encode("sandbox", *sorted(k for k, v in held.items() if v is True)))
    namespace, problems = _define(job["source"])  # from here on, student code has run
    send(encode("defined", *problems))
    candidate = namespace.get(exercise.name)
    for index, test in enumerate(tests):
        status, passed, feedback = _one_test(exercise, test, candidate)
        changed = integrity.changes()
        if changed:
            send(encode("tampered", *changed))
            return
        send(encode("test", index, test.name, int(passed), status, feedback[:1500]))
    send(encode("done", len(tests)))


# ---------------------------------------------------------------- the grader's side
def _base(exercise, spec) -> dict:
    return {"status": "crashed", "points": 0.0, "max_points": exercise.points, "tests": [], "passed": 0,
            "total": len(spec), "detail": "", "flags": []}


def _text(field: bytes, limit: int = 1500) -> str:
    return field.decode("utf-8", "replace")[:limit]


def judge(sealed: list, forged: int, exercise, spec: list) -> dict:
    """The verdict on one function exercise from its check process's sealed lines.

    `spec` is [(name, weight, hidden)], taken from the check zygote before any student code.
    Returns a verdict with status "crashed" when the report is incomplete; the caller says why.
    """
    verdict = _base(exercise, spec)
    by_kind = {}
    for fields in sealed:
        by_kind.setdefault(_text(fields[0], 40), []).append(fields[1:])
    if "tripped" in by_kind:
        event, args = (list(map(_text, by_kind["tripped"][0])) + ["", ""])[:2]
        return scoring.zeroed(verdict, "tampered", f"while being tested, the code used `{event}` {args[:120]}, "
                              "which reaches into the grader; the check was stopped", "tampered")
    if "tampered" in by_kind:
        names = ", ".join(_text(f, 80) for f in by_kind["tampered"][0])
        return scoring.zeroed(verdict, "tampered", "while being tested, the code changed what the tests rely on: "
                              + names[:300], "tampered")
    if forged:
        return scoring.zeroed(verdict, "tampered", "the process wrote report lines the grader did not send",
                              "review:forged-report-lines")
    rows = by_kind.get("test", [])
    if "done" not in by_kind:
        verdict["detail"] = _problems(by_kind)
        return verdict
    if [(_text(r[0], 10), _text(r[1], 300)) for r in rows] != [(str(i), n) for i, (n, _, _) in enumerate(spec)]:
        return scoring.zeroed(verdict, "tampered", "the tests reported are not the exercise's tests", "tampered")
    return _scored(verdict, exercise, spec, rows, _problems(by_kind))


def _problems(by_kind) -> str:
    problems = [_text(p, 200) for p in (by_kind.get("defined") or [[]])[0]][:5]
    return "; ".join(problems)


def _scored(verdict, exercise, spec, rows, problems) -> dict:
    passed = [_text(r[2], 2) == "1" for r in rows]
    statuses = {_text(r[3], 40) for r in rows}
    feedback = [_text(r[4]) for r in rows]
    if NOT_ATTEMPTED in statuses:
        verdict.update(status=NOT_ATTEMPTED, detail=f"`{exercise.name}` still raises NotImplementedError: "
                                                     "replace that line with your code.")
        return verdict
    points = scoring.points_for(exercise.points, [(w, ok) for (_, w, _), ok in zip(spec, passed)])
    status = CORRECT if all(passed) else INCORRECT
    detail = "All tests passed." if status == CORRECT else "Some tests failed: read the feedback below."
    if problems and status != CORRECT:  # e.g. a failed import explains a NameError
        detail += " Note: " + problems
    verdict.update(status=status, points=points, passed=sum(passed), detail=detail,
                   tests=[{"name": name, "hidden": hidden, "passed": ok, "feedback": "" if hidden else text}
                          for (name, _, hidden), ok, text in zip(spec, passed, feedback)])
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
    verdict.update(status=result.status, points=scoring.quiz_points(quiz.points, result.correct),
                   detail=result.summary, passed=int(result.correct))
    return verdict
