"""Exercise specs: one declaration serves self-study, the classroom and the grader.

A chapter module declares its exercises for its `Chapter` (course_lib/chapters.py) through
`Declarations`, which records each on the chapter; the matching
answer-key module (``Chapter.key_module``) holds reference solutions, hidden tests and known
wrong answers. The student bundle ships without the key, so checks still run but hidden
tests and solutions are withheld.
"""

import dataclasses
import hashlib
import importlib
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..i18n import tr
from ..i18n.catalogue import Said, join, labelled, tr_join
from . import progress, scoring, wire
from .results import CORRECT, INCORRECT, NOT_ATTEMPTED, CheckResult, TestOutcome
from .runner import is_stub, observe, warm_up

DEFAULT_TIME_LIMIT = 10.0


class Fail(Exception):
    """Raised by a test when the learner's answer is wrong; every field is learner-facing."""

    def __init__(self, message, expected="", got="", hint=""):
        super().__init__(message)
        self.message, self.expected, self.got, self.hint = message, str(expected), str(got), hint


class Inline:
    """A test written as one function `run(candidate)` that raises Fail: both halves in one process.

    For throwaway chapters (tests, quick experiments) only: its verdict is made next to the
    learner's code, so the grader refuses it (`splittable` is False). Course exercises build their
    tests from course_lib.checks, whose run and judge halves the grader runs apart.
    """

    splittable = False

    def __init__(self, fn):
        self.fn = fn

    def run(self, candidate):
        try:
            self.fn(candidate)
        except Fail as err:
            if is_stub(err, candidate):
                raise
            return [err.message, err.expected, err.got, err.hint]
        return None

    def reference_value(self, solution=None):
        return None

    def judge(self, seen, ref) -> None:
        if seen is not None:
            raise Fail(*seen)


@dataclass
class Test:
    """One test of a function exercise: `check` is its run half and judge half (course_lib.checks);
    a plain function `run(candidate)` that raises Fail is accepted too (an Inline test)."""

    __test__ = False  # not a pytest class
    name: str
    check: object
    weight: float = 1.0
    hidden: bool = False

    def __post_init__(self):
        if not hasattr(self.check, "judge"):
            self.check = Inline(self.check)


@dataclass
class WrongAnswer:
    """A realistic wrong answer from the key; the self-tests prove the checker rejects it."""

    label: str
    function: Callable
    feedback_contains: str = ""


@dataclass
class AnswerKey:
    """What only the teacher's copy holds for one exercise."""

    solution: Callable | None = None
    hidden_tests: list = field(default_factory=list)
    wrong_answers: list = field(default_factory=list)
    answer: object = None  # quizzes: the right answer in plain form


def _too_slow(seconds: float) -> str:
    return f"Your function did not finish within {seconds:g} s (an endless loop?)."


HINT_BELOW = "See the hints below: each wrong answer reveals the next one."
NOT_ATTEMPTED_TEXT = "`{name}` still raises NotImplementedError: replace that line with your code."
UNREADABLE_TEXT = (
    "The check could not make sense of what your function produced ({why}); "
    "read the task again for what it must return."
)


NONFINITE_TEXT = (
    "Your function produced a NaN or an infinite number ({where}); a test passes only on finite "
    "numbers: look for a division by zero, a log of 0 or a loss that overflowed."
)


def nonfinite_at(value, where: str = "the result"):
    """Where in an observed value a NaN or an infinity sits (a float, or a tensor's values), else
    None: every judge decides only on finite numbers, whatever its comparisons do with NaN."""
    if isinstance(value, float):
        return None if math.isfinite(value) else where
    if isinstance(value, wire.TensorValue):
        values = value.values
        if values is None or not (values.is_floating_point() or values.is_complex()):
            return None
        return None if bool(values.isfinite().all()) else f"{where}, a tensor"
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = nonfinite_at(item, f"{where}[{key!r}]")
        if found:
            return found
    return None


def judge_outcome(test: Test, seen, ref, seconds=None) -> TestOutcome:
    """One test's verdict from what its run half saw (`seen`, plain data from `observe`) and the
    reference data: the judge half, which never runs the learner's code."""
    outcome = TestOutcome(test.name, passed=False, weight=test.weight, hidden=test.hidden)
    if not isinstance(seen, dict):
        outcome.message = UNREADABLE_TEXT.format(why="no observation")
        return outcome
    elapsed = seen.get("seconds")
    slow = seconds is not None and isinstance(elapsed, (int, float)) and elapsed > seconds
    if seen.get("stub") is True:
        outcome.not_attempted = True
    elif "timeout" in seen or slow:
        outcome.message = _too_slow(seconds if seconds is not None else seen.get("timeout"))
    elif "raised" in seen:
        outcome.message = f"Your code raised {str(seen['raised'])[:1500]}"
    elif "too_large" in seen:
        outcome.message = UNREADABLE_TEXT.format(why="it is too large to compare")
    elif "value" not in seen:
        outcome.message = UNREADABLE_TEXT.format(why="no value")
    elif getattr(test.check, "finite_only", True) and nonfinite_at(seen["value"]):
        outcome.message = NONFINITE_TEXT.format(where=nonfinite_at(seen["value"]))
    else:
        try:
            test.check.judge(seen["value"], ref)
            outcome.passed = True
        except Fail as err:
            outcome.message, outcome.expected, outcome.got, outcome.hint = (
                err.message,
                err.expected,
                err.got,
                err.hint,
            )
        except Exception as err:  # noqa: BLE001 - odd data (a forged observation, say) fails the test
            outcome.message = UNREADABLE_TEXT.format(why=type(err).__name__)
    return outcome


def observe_as_sent(check, candidate, seconds) -> dict:
    """`observe`, then through the wire format: exactly what a judge in another process receives."""
    seen = observe(check, candidate, seconds)
    try:
        return wire.roundtrip(seen)
    except wire.WireError:
        return {"too_large": True, "seconds": seen.get("seconds")}


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

    def key(self) -> AnswerKey | None:
        """This exercise's answer key, or None in the student bundle."""
        try:
            module = importlib.import_module(self.chapter.key_module)
        except (
            ModuleNotFoundError,
            PermissionError,
        ):  # not installed, or walled off (a graded process)
            return None
        return getattr(module, "KEY", {}).get(self.name)

    def answered(self) -> bool:
        """True once the learner has checked an answer,
        right or wrong (as recorded in the progress file)."""
        return progress.load().get(self.id, {}).get("status") in (CORRECT, INCORRECT)

    def hints_shown(self) -> list:
        """The hints revealed so far, as 'Hint k of n: text' lines."""
        return [self._hint_line(k) for k in range(1, self._hints_shown + 1)]

    def _hint_line(self, k: int) -> str:
        return labelled(f"Hint {k} of {len(self.hints)}:", self.hints[k - 1])

    def reveal_hint(self) -> int:
        """Reveal one more hint (the last stays last); returns how many are revealed now."""
        if self.hints and self._hints_shown < len(self.hints):
            self._hints_shown += 1
            progress.record_hints(self.id, self._hints_shown)
            for refresh in list(self._hint_views):
                refresh()
        return self._hints_shown

    def next_hint(self) -> str:
        """Reveal the next hint and return its text, one
        level at a time (scripts, tests, terminals)."""
        if not self.hints:
            return tr("No hints for this one.")
        n = self.reveal_hint()
        more = "" if n == len(self.hints) else "Run .hint() again for more."
        return tr_join([self._hint_line(n), more])

    def hint(self) -> None:
        """In a notebook: a small widget with a 'Show a hint' button and the hints revealed so
        far (displaying it reveals nothing, so Run All spends no hint). Elsewhere: print the next
        hint."""
        if _in_notebook():
            from IPython.display import display

            from ..widgets import hint_widget

            display(hint_widget(self))
        else:
            print(self.next_hint())

    def info(self) -> dict:
        return {
            "id": self.id,
            "chapter": self.chapter.number,
            "kind": self.kind,
            "points": self.points,
            "title": self.title,
            "name": self.name,
        }

    def _finish(self, result: CheckResult, record: bool) -> CheckResult:
        if record:
            progress.record(result)
        return result

    def _not_attempted(self, summary: str, record: bool) -> CheckResult:
        return self._finish(
            CheckResult(self.id, self.title, NOT_ATTEMPTED, 0, self.points, summary), record
        )


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (widgets can be
    shown), False in a terminal or a plain script."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class FunctionExercise(Exercise):
    """The learner writes a function named `name`; tests call it."""

    kind = "function"

    def __init__(
        self, chapter, name, title, prompt, points, tests, hints=(), time_limit=DEFAULT_TIME_LIMIT
    ):
        super().__init__(chapter, name, title, prompt, points, hints)
        self.tests = list(tests)
        self.time_limit = time_limit
        self._last = None  # (candidate, include_hidden, result) of the last check

    def all_tests(self, include_hidden: bool) -> list:
        key = self.key() if include_hidden else None
        hidden = [dataclasses.replace(t, hidden=True) for t in key.hidden_tests] if key else []
        return self.tests + hidden

    def graded_tests(self) -> list:
        """Every test the grader runs: the visible ones,
        then the key's hidden ones (judge process)."""
        return self.all_tests(include_hidden=True)

    def reference_solution(self):
        key = self.key()
        return key.solution if key is not None else None

    def judge(self, test: Test, seen, seconds=None) -> TestOutcome:
        """The judge half of one test on what its run half saw; the reference data is computed once,
        and only when there is a value to judge (a stub starts no reference run)."""
        limit = self.time_limit if seconds is None else seconds
        judged = isinstance(seen, dict) and "value" in seen and seen.get("stub") is not True
        ref = test.check.reference_value(self.reference_solution()) if judged else None
        return judge_outcome(test, seen, ref, limit)

    def result(
        self, outcomes: list, include_hidden: bool = True, hidden_left: int = 0
    ) -> CheckResult:
        """The exercise's verdict from its tests' outcomes:
        status, points and summary (one rule set)."""
        if any(o.not_attempted for o in outcomes):
            return CheckResult(
                self.id,
                self.title,
                NOT_ATTEMPTED,
                0,
                self.points,
                NOT_ATTEMPTED_TEXT.format(name=self.name),
            )
        earned = scoring.points_for(self.points, [(o.weight, o.passed) for o in outcomes])
        status = CORRECT if outcomes and all(o.passed for o in outcomes) else INCORRECT
        summary = (
            "All tests passed."
            if status == CORRECT
            else "Some tests failed: read the feedback below."
        )
        if status == CORRECT and not include_hidden:
            summary = (
                "All visible tests passed; the grader also runs hidden tests on what you hand in."
            )
        return CheckResult(
            self.id, self.title, status, earned, self.points, summary, outcomes, hidden_left
        )

    def unusable(self, got_type) -> CheckResult:
        """The verdict when there is no function to test:
        None (not attempted) or a `got_type` value."""
        if got_type is None:
            return CheckResult(
                self.id,
                self.title,
                NOT_ATTEMPTED,
                0,
                self.points,
                f"Define `{self.name}` and pass it to check().",
            )
        return CheckResult(
            self.id,
            self.title,
            INCORRECT,
            0,
            self.points,
            f"check() needs your function `{self.name}`, got {got_type}.",
        )

    def check(self, candidate, *, include_hidden=None, record=True) -> CheckResult:
        """Run the tests on `candidate`: the visible ones, and the answer key's hidden ones wherever
        the key is installed (the full course, the grader), their values kept hidden. In the student
        bundle (no key) only the visible tests run. include_hidden=False: visible tests only.

        Each test's run half observes the candidate; what it saw goes through the wire format, as it
        would to the grader's judge process, and the judge half decides."""
        key = self.key()
        if include_hidden is None:
            include_hidden = key is not None
        if not callable(candidate):
            return self._finish(
                self.unusable(None if candidate is None else type(candidate).__name__), record
            )
        warm_up()
        outcomes = []
        for test in self.all_tests(include_hidden):
            outcome = self.judge(test, observe_as_sent(test.check, candidate, self.time_limit))
            outcomes.append(outcome)
            if outcome.not_attempted:
                break
        hidden_left = 0 if include_hidden else len(key.hidden_tests) if key else 0
        result = self.result(outcomes, include_hidden, hidden_left)
        self._last = (candidate, include_hidden, result)
        return self._finish(result, record)

    def verdict(self, candidate) -> CheckResult:
        """check(candidate)'s result, not recorded; the last check's when it checked this very
        function object with the same tests (a redefined function is a new object): a cell that only
        asks whether an answer passes (chapter 03's yours_or_reference) runs no test twice."""
        include_hidden = self.key() is not None
        if self._last and self._last[0] is candidate and self._last[1] == include_hidden:
            return self._last[2]
        return self.check(candidate, record=False)

    def solution_source(self) -> str:
        """The reference solution's source, or a note that the teacher withheld it."""
        key = self.key()
        if key is None or key.solution is None:
            return tr(
                "The reference solution is withheld by the teacher in this copy of the course."
            )
        return inspect.getsource(key.solution)

    def solution(self) -> None:
        """Print the reference solution (only when asked)."""
        print(self.solution_source())


def answer_digest(quiz_id: str, answer) -> str:
    """A one-way fingerprint of a quiz answer, so the bundle can check without showing it."""
    return hashlib.sha256(f"{quiz_id}:{answer}".encode()).hexdigest()[:16]


class Quiz(Exercise):
    """A question with a right answer: single, multiple, numeric, or 'which error'.

    A numeric answer is judged as typed: it is right when it lies within `tolerance` of the
    answer, which has `decimals` decimals (tolerance 0, the default: exactly, up to float noise);
    the tolerance must stay under half a step of the last decimal, so one number can match.
    `hints` are revealed one at a time (`.hint()`, the widget's Hint button, or after a wrong
    answer that no `why` explains); `why[letter]` is shown when a wrong answer picks that option
    and says why it is off, without naming the right one (never give one for a right option).
    Texts may use Markdown backticks for code.
    """

    def __init__(
        self,
        chapter,
        name,
        title,
        question,
        points=1,
        kind="single",
        options=None,
        digest="",
        code="",
        decimals=0,
        tolerance=0.0,
        explanation="",
        hints=(),
        why=None,
    ):
        super().__init__(chapter, name, title, question, points, hints)
        self.kind = kind
        self.options = dict(options or {})
        self.digest = digest
        self.code = code
        self.decimals = decimals
        self.tolerance = tolerance
        if kind == "numeric" and not 0 <= tolerance < 0.5 * 10.0**-decimals:
            raise ValueError(
                f"{self.id}: a numeric tolerance must be at least 0 and under half a step of the "
                f"last decimal, {0.5 * 10.0**-decimals:g}; got {tolerance!r}"
            )
        self.explanation = explanation
        # numeric quizzes: why={wrong number: reason}, keyed by the number as normalize() writes it
        self.why = {
            self.normalize(k) if kind == "numeric" else k: v for k, v in (why or {}).items()
        }
        unknown = [] if kind == "numeric" else sorted(set(self.why) - set(self.options))
        if unknown:
            raise ValueError(f"{self.id}: why= names options that do not exist: {unknown}")

    def normalize(self, answer):
        """Canonical form of an answer, or raise ValueError with a learner-facing reason."""
        if self.kind == "numeric":
            return self._number(answer)
        if isinstance(answer, str):  # "b", "a, c" and "ac" all work
            answer = answer.replace(",", " ").split()
            answer = (
                list(answer[0])
                if len(answer) == 1 and set(answer[0].lower()) <= set(self.options)
                else answer
            )
        try:
            letters = sorted({str(a).strip().lower() for a in answer})
        except TypeError:
            raise ValueError(f"Choose from {', '.join(self.options)}; got {answer!r}.") from None
        unknown = [a for a in letters if a not in self.options]
        if unknown or not letters:
            raise ValueError(f"Choose from {', '.join(self.options)}; got {answer!r}.")
        if self.kind in ("single", "error") and len(letters) != 1:
            raise ValueError("Choose exactly one option.")
        return "".join(letters)

    def _number(self, answer) -> str:
        """A numeric answer's canonical form: the answer's own decimals when it lies within the
        tolerance of such a number, else the number as typed (which then matches no answer)."""
        try:
            value = float(answer)
        except (TypeError, ValueError):
            raise ValueError(f"Answer with a number, not {answer!r}.") from None
        if not math.isfinite(value):
            raise ValueError(f"Answer with a number, not {answer!r}.")
        near = round(value, self.decimals)
        if abs(value - near) <= self.tolerance + 1e-9 * max(1.0, abs(value)):
            return f"{near:.{self.decimals}f}"
        return f"{value:.12g}"

    def _judged_as_typed(self, normalized: str) -> str:
        """For a number that matches no answer by its digits: how numbers are judged."""
        if self.kind != "numeric" or normalized == f"{float(normalized):.{self.decimals}f}":
            return ""
        shown = normalized
        if self.tolerance:
            tolerance = f"{self.tolerance:g}"
            return tr(f"Judged as you typed it, to within {tolerance}: {shown} is not the answer.")
        return tr(f"Judged exactly as you typed it: {shown} is not the answer.")

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

    def check(
        self, answer, *, include_hidden=False, record=True, empty="", hint_below=False
    ) -> CheckResult:
        """Right or not; a wrong answer is told why its options are off (or gets the next hint),
        never which option is right. `empty`: the message for no answer (the widget's own words);
        `hint_below`: the widget shows the revealed hint in its hint list, so the verdict points
        there instead of repeating it."""
        if is_empty_answer(answer):
            return self._not_attempted(
                empty or "Write your answer in the cell, then run it.", record
            )
        try:
            normalized = self.normalize(answer)
        except ValueError as err:
            return self._finish(
                CheckResult(self.id, self.title, INCORRECT, 0, self.points, str(err)), record
            )
        right = self.is_right(normalized)
        if right:  # only a right answer of an 'error' quiz may see what the code really raised
            raised = f"Run for real on this machine, the code raised: {self.observed_error()}."
            summary = tr_join(["Right.", raised if self.kind == "error" else "", self.explanation])
        else:
            summary = self.wrong_feedback(normalized, hint_below)
        status = CORRECT if right else INCORRECT
        result = CheckResult(
            self.id,
            self.title,
            status,
            scoring.quiz_points(self.points, right),
            self.points,
            summary,
        )
        return self._finish(result, record)

    def wrong_feedback(self, normalized: str, hint_below: bool = False) -> str:
        """'Not quite.' plus why each chosen option is off, or else the next hint (revealed once:
        with `hint_below` the widget's hint list shows it and the verdict points there)."""
        chosen = list(normalized) if self.kind in ("single", "multiple", "error") else [normalized]
        mark = ")" if self.kind != "numeric" else ":"
        reasons = [
            Said(f"{letter}{mark} {tr(self.why[letter])}")
            for letter in chosen
            if letter in self.why
        ]
        judged = self._judged_as_typed(normalized)
        if reasons:  # each reason is translated already
            return join([tr("Not quite."), judged] + reasons)
        if self.hints:
            self.reveal_hint()
            hint = HINT_BELOW if hint_below else self.hints_shown()[-1]
            return join([tr("Not quite."), judged, tr(hint)])
        return join([tr("Not quite: read the question again, then try once more."), judged])

    def ask(self):
        """Show the question as a widget with instant feedback (JupyterLab)."""
        from ..widgets import quiz_widget

        return quiz_widget(self)


def is_empty_answer(answer) -> bool:
    """None, an empty or blank string, or an empty list: the learner has not answered yet."""
    return (
        answer is None
        or (isinstance(answer, str) and not answer.strip())
        or (isinstance(answer, (list, tuple)) and not answer)
    )


class Declarations:
    """How a chapter module declares its exercises: `declare = Declarations(chapter)`, then
    `declare.function_exercise(...)` and `declare.quiz(...)`, each recorded on the chapter."""

    def __init__(self, chapter):
        self.chapter = chapter

    def function_exercise(self, name, **kwargs) -> FunctionExercise:
        """Declare a function exercise of this chapter (see FunctionExercise)."""
        return self.chapter.add(FunctionExercise(self.chapter, name, **kwargs))

    def quiz(self, name, **kwargs) -> Quiz:
        """Declare a quiz of this chapter (see Quiz)."""
        return self.chapter.add(Quiz(self.chapter, name, **kwargs))
