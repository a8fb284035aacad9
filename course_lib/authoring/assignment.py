"""What a teacher's assignment notebook runs: `Assignment`, a chapter of the teacher's own.

    from course_lib.authoring import Assignment, Test, generic
    hw = Assignment("hw1", "Homework 1: tensors")
    hw.function_exercise("dot", title=..., prompt=..., points=3, tests=[...], hints=[...])
    ### BEGIN HIDDEN TESTS
    hw.hidden("dot", Test("long vectors", generic.Returns(args=(torch.ones(100), torch.ones(100)))))
    hw.wrong("dot", "forgets to sum", lambda a, b: a * b, feedback="wrong shape")
    ### END HIDDEN TESTS
    ...
    hw.dot.check(dot)

Exercise ids are 'hw1.dot'. Where the hidden block ran (the teacher's source, the key the judge
loads) the exercise has an answer key: the hidden tests, the known-wrong answers and the
reference solution (the function of the exercise's name that the solution cell defines). In the
student's copy the block is gone: its check runs the visible tests, judged against the expected
values the release wrote into the declaration cell (`hw.expected(...)`), never the solution.
"""

import re
import sys
from pathlib import Path

from ..checks import generic
from ..exercises import registry, wire
from ..exercises.spec import (
    AnswerKey,
    FunctionExercise,
    Test,
    WrongAnswer,
    judge_outcome,
)

NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
COURSE_ID = re.compile(r"^ch\d")


class AssignmentExercise(FunctionExercise):
    """A function exercise of an assignment: its key is the assignment's, not a key module's."""

    def key(self) -> AnswerKey | None:
        return self.chapter.answer_key(self.name)

    def judge(self, test: Test, seen, seconds=None):
        """As a chapter's, except that without the key a visible test is judged against the
        expected value the release published (the student's copy)."""
        if self.key() is not None or test.hidden:
            return super().judge(test, seen, seconds)
        limit = self.time_limit if seconds is None else seconds
        return judge_outcome(test, seen, self.chapter.published_value(self.name, test), limit)


class Assignment:
    """A teacher's assignment: a chapter-like holder of function exercises (see module doc)."""

    def __init__(self, name: str, title: str):
        if not NAME.match(str(name)) or COURSE_ID.match(str(name)):
            raise ValueError(
                f"an assignment's name is lower-case letters, digits and _ (like 'hw1'), "
                f"not starting with 'ch' and a digit (the course's chapters); got {name!r}"
            )
        self.number = self.name = self.prefix = self.stem = name
        self.title = title
        self.module = self.key_module = None  # no module: the notebook declares it
        self.notebook = f"{name}.ipynb"
        self.exercises, self.keys, self.solutions, self.published = {}, {}, {}, {}
        registry.register(self)

    def __repr__(self) -> str:
        return f"Assignment({self.name!r}, {self.title!r})"

    def __getattr__(self, name):
        exercises = self.__dict__.get("exercises", {})
        if name in exercises:
            return exercises[name]
        raise AttributeError(f"assignment {self.__dict__.get('name')!r} has no exercise {name!r}")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.exercises))

    # ------------------------------------------------------------ declaring
    def function_exercise(self, name: str, **kwargs) -> AssignmentExercise:
        """Declare a function exercise (the arguments of a chapter's `function_exercise`); a
        cell run again declares it again."""
        exercise = AssignmentExercise(self, name, **kwargs)
        exercise.id = f"{self.prefix}.{name}"
        self.exercises[name] = exercise
        return exercise

    def quiz(self, name, **kwargs):
        raise NotImplementedError("an assignment has function exercises only (no quizzes yet)")

    def _key_of(self, name: str) -> dict:
        if name not in self.exercises:
            raise KeyError(f"declare the exercise {name!r} before its hidden tests")
        return self.keys.setdefault(name, {"hidden": {}, "wrong": {}})

    def hidden(self, name: str, *tests: Test) -> None:
        """Hidden tests of exercise `name` (the teacher's side: inside the hidden block)."""
        self._key_of(name)["hidden"].update(
            (t.name, Test(t.name, t.check, t.weight, hidden=True)) for t in tests
        )

    def wrong(self, name: str, label: str, function, feedback: str = "") -> None:
        """A realistic wrong answer to `name` and words its feedback must hold (hidden block)."""
        self._key_of(name)["wrong"][label] = WrongAnswer(label, function, feedback)

    def expected(self, name: str, values: list) -> None:
        """The visible tests' expected values, one wire line each (written by the release)."""
        self.published[name] = list(values)

    # ------------------------------------------------------------ the key
    def bind(self, namespace: dict) -> None:
        """Each exercise's reference solution: the function of its name in `namespace`."""
        for name in self.exercises:
            if callable(namespace.get(name)):
                self.solutions[name] = namespace[name]

    def answer_key(self, name: str) -> AnswerKey | None:
        """The key of exercise `name` where its hidden block ran, else None (the student)."""
        if name not in self.keys:
            return None
        solution = self.solutions.get(name) or getattr(sys.modules.get("__main__"), name, None)
        key = self.keys[name]
        return AnswerKey(
            solution=solution if callable(solution) else None,
            hidden_tests=list(key["hidden"].values()),
            wrong_answers=list(key["wrong"].values()),
        )

    def published_value(self, name: str, test: Test):
        """The published expected value of visible test `test` (None when it needs none)."""
        exercise = self.exercises[name]
        values = self.published.get(name, [])
        position = next(i for i, t in enumerate(exercise.tests) if t is test)
        if position >= len(values) or values[position] is None:
            return None
        return wire.loads(values[position])


def load_key(path) -> Assignment:
    """Run a released key (`OUT/key/NAME.py`, teacher's side only) and return its assignment,
    its solutions bound; registered, so that `exercises.get('NAME.x')` finds it (the judge)."""
    namespace = {"__name__": "__course_assignment_key__", "__file__": str(path)}
    exec(compile(Path(path).read_text(encoding="utf-8"), str(path), "exec"), namespace)  # noqa: S102 - the teacher's own key
    found = [v for v in namespace.values() if isinstance(v, Assignment)]
    if len(found) != 1:
        raise ValueError(f"{path} declares {len(found)} assignments; a key declares one")
    found[0].bind(namespace)
    registry.register(found[0])
    return found[0]


__all__ = ["Assignment", "AssignmentExercise", "Test", "generic", "load_key"]
