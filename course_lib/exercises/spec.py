"""Exercise specs: one declaration serves self-study, the classroom and the grader.

A chapter module declares its exercises with a `Chapter`; the matching answer-key module
(``course_lib.key.<chapter module>``) holds reference solutions, hidden tests and known
wrong answers. The student bundle ships without the key, so checks still run but hidden
tests and solutions are withheld.
"""
import dataclasses
import hashlib
import importlib
import inspect
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import progress
from .results import CORRECT, INCORRECT, NOT_ATTEMPTED, CheckResult, TestOutcome
from .runner import CheckTimeout, describe_exception, time_limit

DEFAULT_TIME_LIMIT = 10.0


class Fail(Exception):
    """Raised by a test when the learner's answer is wrong; every field is learner-facing."""

    def __init__(self, message, expected="", got="", hint=""):
        super().__init__(message)
        self.message, self.expected, self.got, self.hint = message, str(expected), str(got), hint


@dataclass
class Test:
    """One test of a function exercise: `run(candidate)` raises Fail when the answer is wrong."""
    __test__ = False  # not a pytest class
    name: str
    run: Callable
    weight: float = 1.0
    hidden: bool = False


@dataclass
class WrongAnswer:
    """A realistic wrong answer from the key; the self-tests prove the checker rejects it."""
    label: str
    function: Callable
    feedback_contains: str = ""


@dataclass
class AnswerKey:
    """What only the teacher's copy holds for one exercise."""
    solution: Optional[Callable] = None
    hidden_tests: list = field(default_factory=list)
    wrong_answers: list = field(default_factory=list)
    answer: object = None  # quizzes: the right answer in plain form


def _is_stub(err: BaseException, candidate) -> bool:
    """True when `err`, or an error it was raised while handling, is the untouched stub's
    NotImplementedError raised by the learner's own function (not by code it called).
    Tests that catch RuntimeError (NotImplementedError's parent) thus still see the stub."""
    while err is not None:
        if isinstance(err, NotImplementedError) and err.__traceback__ is not None:
            tb = err.__traceback__
            while tb.tb_next is not None:
                tb = tb.tb_next
            if tb.tb_frame.f_code is getattr(candidate, "__code__", None):
                return True
        err = err.__context__
    return False


def _run_test(test: Test, candidate, seconds: float) -> TestOutcome:
    outcome = TestOutcome(test.name, passed=False, weight=test.weight, hidden=test.hidden)
    try:
        with time_limit(seconds):
            test.run(candidate)
        outcome.passed = True
    except Exception as err:
        if _is_stub(err, candidate):
            raise NotImplementedError from err
        if isinstance(err, Fail):
            outcome.message, outcome.expected, outcome.got, outcome.hint = err.message, err.expected, err.got, err.hint
        elif isinstance(err, CheckTimeout):
            outcome.message = f"Your function did not finish within {seconds:g} s (an endless loop?)."
        else:  # an exception inside the learner's code is feedback, not a crash
            outcome.message = f"Your code raised {describe_exception(err)}"
    return outcome


class Exercise:
    """Common part of function exercises and quizzes: identity, points, key, progress."""
    kind = "exercise"

    def __init__(self, chapter, name, title, prompt, points, hints=()):
        self.chapter = chapter
        self.name = name
        self.id = f"ch{chapter.number}.{name}"
        self.title = title
        self.prompt = prompt
        self.points = points
        self.hints = list(hints)
        self._hints_shown = 0

    def key(self) -> Optional[AnswerKey]:
        """This exercise's answer key, or None in the student bundle."""
        try:
            module = importlib.import_module(self.chapter.key_module)
        except ModuleNotFoundError:
            return None
        return getattr(module, "KEY", {}).get(self.name)

    def next_hint(self) -> str:
        """The next hint's text, one level at a time."""
        if not self.hints:
            return "No hints for this one."
        self._hints_shown = min(self._hints_shown + 1, len(self.hints))
        n = self._hints_shown
        more = "" if n == len(self.hints) else " Run .hint() again for more."
        return f"Hint {n} of {len(self.hints)}: {self.hints[n - 1]}{more}"

    def hint(self) -> None:
        """Print the next hint (one more level each call)."""
        print(self.next_hint())

    def info(self) -> dict:
        return {"id": self.id, "chapter": self.chapter.number, "kind": self.kind,
                "points": self.points, "title": self.title, "name": self.name}

    def _finish(self, result: CheckResult, record: bool) -> CheckResult:
        if record:
            progress.record(result)
        return result

    def _not_attempted(self, summary: str, record: bool) -> CheckResult:
        return self._finish(CheckResult(self.id, self.title, NOT_ATTEMPTED, 0, self.points, summary), record)


class FunctionExercise(Exercise):
    """The learner writes a function named `name`; tests call it."""
    kind = "function"

    def __init__(self, chapter, name, title, prompt, points, tests, hints=(), time_limit=DEFAULT_TIME_LIMIT):
        super().__init__(chapter, name, title, prompt, points, hints)
        self.tests = list(tests)
        self.time_limit = time_limit

    def all_tests(self, include_hidden: bool) -> list:
        key = self.key() if include_hidden else None
        hidden = [dataclasses.replace(t, hidden=True) for t in key.hidden_tests] if key else []
        return self.tests + hidden

    def check(self, candidate, *, include_hidden=False, record=True) -> CheckResult:
        """Run the visible tests (and hidden ones for the grader) on `candidate`."""
        if candidate is None:
            return self._not_attempted(f"Define `{self.name}` and pass it to check().", record)
        if not callable(candidate):
            result = CheckResult(self.id, self.title, INCORRECT, 0, self.points,
                                 f"check() needs your function `{self.name}`, got {type(candidate).__name__}.")
            return self._finish(result, record)
        tests = self.all_tests(include_hidden)
        outcomes = []
        for test in tests:
            try:
                outcomes.append(_run_test(test, candidate, self.time_limit))
            except NotImplementedError:
                return self._not_attempted(
                    f"`{self.name}` still raises NotImplementedError: replace that line with your code.", record)
        total = sum(t.weight for t in tests) or 1.0
        earned = self.points * sum(o.weight for o in outcomes if o.passed) / total
        status = CORRECT if all(o.passed for o in outcomes) else INCORRECT
        summary = "All tests passed." if status == CORRECT else "Some tests failed: read the feedback below."
        hidden_left = 0 if include_hidden else len(self.key().hidden_tests) if self.key() else 0
        result = CheckResult(self.id, self.title, status, earned, self.points, summary, outcomes, hidden_left)
        return self._finish(result, record)

    def solution_source(self) -> str:
        """The reference solution's source, or a note that the teacher withheld it."""
        key = self.key()
        if key is None or key.solution is None:
            return "The reference solution is withheld by the teacher in this copy of the course."
        return inspect.getsource(key.solution)

    def solution(self) -> None:
        """Print the reference solution (only when asked)."""
        print(self.solution_source())


def answer_digest(quiz_id: str, answer) -> str:
    """A one-way fingerprint of a quiz answer, so the bundle can check without showing it."""
    return hashlib.sha256(f"{quiz_id}:{answer}".encode()).hexdigest()[:16]


class Quiz(Exercise):
    """A question with a right answer: single, multiple, numeric, or 'which error'."""

    def __init__(self, chapter, name, title, question, points=1, kind="single", options=None,
                 digest="", code="", decimals=0, explanation="", hints=()):
        super().__init__(chapter, name, title, question, points, hints)
        self.kind = kind
        self.options = dict(options or {})
        self.digest = digest
        self.code = code
        self.decimals = decimals
        self.explanation = explanation

    def normalize(self, answer):
        """Canonical form of an answer, or raise ValueError with a learner-facing reason."""
        if self.kind == "numeric":
            try:
                value = round(float(answer), self.decimals)
            except (TypeError, ValueError):
                raise ValueError(f"Answer with a number, not {answer!r}.")
            return f"{value:.{self.decimals}f}"
        if isinstance(answer, str):  # "b", "a, c" and "ac" all work
            answer = answer.replace(",", " ").split()
            answer = list(answer[0]) if len(answer) == 1 and set(answer[0].lower()) <= set(self.options) else answer
        try:
            letters = sorted({str(a).strip().lower() for a in answer})
        except TypeError:
            raise ValueError(f"Choose from {', '.join(self.options)}; got {answer!r}.")
        unknown = [a for a in letters if a not in self.options]
        if unknown or not letters:
            raise ValueError(f"Choose from {', '.join(self.options)}; got {answer!r}.")
        if self.kind in ("single", "error") and len(letters) != 1:
            raise ValueError("Choose exactly one option.")
        return "".join(letters)

    def observed_error(self) -> str:
        """For 'error' quizzes: run the snippet for real and name what it raised."""
        import torch
        try:
            exec(self.code, {"torch": torch, "nn": torch.nn})
        except Exception as err:
            return type(err).__name__
        return "No error"

    def right_answer(self) -> str:
        if self.kind == "error":
            observed = self.observed_error()
            matches = [k for k, text in self.options.items() if text.startswith(observed)]
            return matches[0] if matches else ""
        return ""

    def is_right(self, normalized: str) -> bool:
        if self.kind == "error":
            return normalized == self.right_answer()
        return answer_digest(self.id, normalized) == self.digest

    def check(self, answer, *, include_hidden=False, record=True) -> CheckResult:
        if answer is None or answer == "" or answer == []:
            return self._not_attempted("Write your answer in the cell, then run it.", record)
        try:
            normalized = self.normalize(answer)
        except ValueError as err:
            return self._finish(CheckResult(self.id, self.title, INCORRECT, 0, self.points, str(err)), record)
        right = self.is_right(normalized)
        summary = "Right." if right else "Not quite."
        if self.kind == "error":
            summary += f" Run for real on this machine, the code raised: {self.observed_error()}."
        if right and self.explanation:
            summary += " " + self.explanation
        status = CORRECT if right else INCORRECT
        result = CheckResult(self.id, self.title, status, self.points if right else 0, self.points, summary)
        return self._finish(result, record)

    def ask(self):
        """Show the question as a widget with instant feedback (JupyterLab)."""
        from ..widgets import quiz_widget
        return quiz_widget(self)


class Chapter:
    """Declares a chapter's exercises; made once per chapter module as ``Chapter(__name__, ...)``."""

    def __init__(self, module_name: str, title: str, registered: bool = True):
        self.registered = registered  # False for throwaway chapters in tests
        self.module = module_name.rsplit(".", 1)[-1]  # e.g. ch01_device_check
        self.number = self.module[2:4]
        self.title = title
        self.key_module = f"course_lib.key.{self.module}"
        self.exercises = {}

    def _add(self, exercise):
        from .registry import register
        if exercise.name in self.exercises:
            raise ValueError(f"two exercises share the id {exercise.id}")
        self.exercises[exercise.name] = exercise
        if self.registered:
            register(exercise)
        return exercise

    def function_exercise(self, name, **kwargs) -> FunctionExercise:
        return self._add(FunctionExercise(self, name, **kwargs))

    def quiz(self, name, **kwargs) -> Quiz:
        return self._add(Quiz(self, name, **kwargs))
