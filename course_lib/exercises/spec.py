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
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import progress, scoring
from .results import CORRECT, INCORRECT, NOT_ATTEMPTED, CheckResult, TestOutcome
from .runner import CheckTimeout, describe_exception, time_limit, warm_up

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


def _too_slow(seconds: float) -> str:
    return f"Your function did not finish within {seconds:g} s (an endless loop?)."


def _run_test(test: Test, candidate, seconds: float) -> TestOutcome:
    """One test under the time limit; a test that took longer than the limit never passes, even
    when the learner's code swallowed the interruption (a bare `except:`)."""
    outcome = TestOutcome(test.name, passed=False, weight=test.weight, hidden=test.hidden)
    start, timed_out = time.perf_counter(), False
    try:
        with time_limit(seconds):
            test.run(candidate)
        outcome.passed = True
    except CheckTimeout:
        timed_out = True
    except Exception as err:
        if _is_stub(err, candidate):
            raise NotImplementedError from err
        if isinstance(err, Fail):
            outcome.message, outcome.expected, outcome.got, outcome.hint = err.message, err.expected, err.got, err.hint
        else:  # an exception inside the learner's code is feedback, not a crash
            outcome.message = f"Your code raised {describe_exception(err)}"
    if timed_out or (seconds is not None and time.perf_counter() - start > seconds):
        outcome.passed = False
        outcome.message, outcome.expected, outcome.got, outcome.hint = _too_slow(seconds), "", "", ""
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
        self._hints_shown = 0  # hints the learner has revealed so far (kept while the kernel lives)
        self._hint_views = []  # refresh callbacks of hint widgets on screen (widgets.hint_widget)

    def key(self) -> Optional[AnswerKey]:
        """This exercise's answer key, or None in the student bundle."""
        try:
            module = importlib.import_module(self.chapter.key_module)
        except ModuleNotFoundError:
            return None
        return getattr(module, "KEY", {}).get(self.name)

    def hints_shown(self) -> list:
        """The hints revealed so far, as 'Hint k of n: text' lines."""
        return [self._hint_line(k) for k in range(1, self._hints_shown + 1)]

    def _hint_line(self, k: int) -> str:
        return f"Hint {k} of {len(self.hints)}: {self.hints[k - 1]}"

    def reveal_hint(self) -> int:
        """Reveal one more hint (the last stays last); returns how many are revealed now."""
        if self.hints and self._hints_shown < len(self.hints):
            self._hints_shown += 1
            progress.record_hints(self.id, self._hints_shown)
            for refresh in list(self._hint_views):
                refresh()
        return self._hints_shown

    def next_hint(self) -> str:
        """Reveal the next hint and return its text, one level at a time (scripts, tests, terminals)."""
        if not self.hints:
            return "No hints for this one."
        n = self.reveal_hint()
        more = "" if n == len(self.hints) else " Run .hint() again for more."
        return f"{self._hint_line(n)}{more}"

    def hint(self) -> None:
        """In a notebook: a small widget with a 'Show a hint' button and the hints revealed so far
        (displaying it reveals nothing, so Run All spends no hint). Elsewhere: print the next hint."""
        if _in_notebook():
            from IPython.display import display

            from ..widgets import hint_widget
            display(hint_widget(self))
        else:
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


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (widgets can be shown), False in a terminal or a plain script."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


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

    def check(self, candidate, *, include_hidden=None, record=True) -> CheckResult:
        """Run the tests on `candidate`: the visible ones, and the answer key's hidden ones wherever
        the key is installed (the full course, the grader), their values kept hidden. In the student
        bundle (no key) only the visible tests run. include_hidden=False: visible tests only."""
        key = self.key()
        if include_hidden is None:
            include_hidden = key is not None
        if candidate is None:
            return self._not_attempted(f"Define `{self.name}` and pass it to check().", record)
        if not callable(candidate):
            result = CheckResult(self.id, self.title, INCORRECT, 0, self.points,
                                 f"check() needs your function `{self.name}`, got {type(candidate).__name__}.")
            return self._finish(result, record)
        tests = self.all_tests(include_hidden)
        warm_up()
        outcomes = []
        for test in tests:
            try:
                outcomes.append(_run_test(test, candidate, self.time_limit))
            except NotImplementedError:
                return self._not_attempted(
                    f"`{self.name}` still raises NotImplementedError: replace that line with your code.", record)
        earned = scoring.points_for(self.points, [(o.weight, o.passed) for o in outcomes])
        status = CORRECT if all(o.passed for o in outcomes) else INCORRECT
        summary = "All tests passed." if status == CORRECT else "Some tests failed: read the feedback below."
        if status == CORRECT and not include_hidden:
            summary = "All visible tests passed; the grader also runs hidden tests on what you hand in."
        hidden_left = 0 if include_hidden else len(key.hidden_tests) if key else 0
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
    """A question with a right answer: single, multiple, numeric, or 'which error'.

    `hints` are revealed one at a time (`.hint()`, the widget's Hint button, or after a wrong
    answer that no `why` explains); `why[letter]` is shown when a wrong answer picks that option
    and says why it is off, without naming the right one (never give one for a right option).
    Texts may use Markdown backticks for code.
    """

    def __init__(self, chapter, name, title, question, points=1, kind="single", options=None,
                 digest="", code="", decimals=0, explanation="", hints=(), why=None):
        super().__init__(chapter, name, title, question, points, hints)
        self.kind = kind
        self.options = dict(options or {})
        self.digest = digest
        self.code = code
        self.decimals = decimals
        self.explanation = explanation
        # numeric quizzes: why={wrong number: reason}, keyed by the number as normalize() writes it
        self.why = {self.normalize(k) if kind == "numeric" else k: v for k, v in (why or {}).items()}
        unknown = [] if kind == "numeric" else sorted(set(self.why) - set(self.options))
        if unknown:
            raise ValueError(f"{self.id}: why= names options that do not exist: {unknown}")

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

    def check(self, answer, *, include_hidden=False, record=True, empty="") -> CheckResult:
        """Right or not; a wrong answer is told why its options are off (or gets the next hint),
        never which option is right. `empty`: the message for no answer (the widget's own words)."""
        if is_empty_answer(answer):
            return self._not_attempted(empty or "Write your answer in the cell, then run it.", record)
        try:
            normalized = self.normalize(answer)
        except ValueError as err:
            return self._finish(CheckResult(self.id, self.title, INCORRECT, 0, self.points, str(err)), record)
        right = self.is_right(normalized)
        if right:
            summary = "Right."
            if self.kind == "error":  # only a right answer may see what the code really raised
                summary += f" Run for real on this machine, the code raised: {self.observed_error()}."
            if self.explanation:
                summary += " " + self.explanation
        else:
            summary = self.wrong_feedback(normalized)
        status = CORRECT if right else INCORRECT
        result = CheckResult(self.id, self.title, status, scoring.quiz_points(self.points, right), self.points,
                             summary)
        return self._finish(result, record)

    def wrong_feedback(self, normalized: str) -> str:
        """'Not quite.' plus why each chosen option is off, or else the next hint."""
        chosen = list(normalized) if self.kind in ("single", "multiple", "error") else [normalized]
        mark = ")" if self.kind != "numeric" else ":"
        reasons = [f"{letter}{mark} {self.why[letter]}" for letter in chosen if letter in self.why]
        if reasons:
            return "Not quite. " + " ".join(reasons)
        if self.hints:
            self.reveal_hint()
            return f"Not quite. {self.hints_shown()[-1]}"
        return "Not quite: read the question again, then try once more."

    def ask(self):
        """Show the question as a widget with instant feedback (JupyterLab)."""
        from ..widgets import quiz_widget
        return quiz_widget(self)


def is_empty_answer(answer) -> bool:
    """None, an empty or blank string, or an empty list: the learner has not answered yet."""
    return answer is None or (isinstance(answer, str) and not answer.strip()) or (
        isinstance(answer, (list, tuple)) and not answer)


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
