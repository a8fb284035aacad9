"""The exercise engine: specs, checks, hints, solutions, quizzes and progress.

It knows no chapter by name: each chapter is declared once in course_lib/chapters.py, and its
module declares its exercises for that `Chapter` (`Declarations`).
"""

from .registry import all_exercises, get
from .results import CORRECT, INCORRECT, NOT_ATTEMPTED, CheckResult
from .spec import (
    AnswerKey,
    Declarations,
    Fail,
    FunctionExercise,
    Quiz,
    Test,
    WrongAnswer,
    answer_digest,
)

__all__ = [
    "all_exercises",
    "get",
    "CORRECT",
    "INCORRECT",
    "NOT_ATTEMPTED",
    "CheckResult",
    "AnswerKey",
    "Declarations",
    "Fail",
    "FunctionExercise",
    "Quiz",
    "Test",
    "WrongAnswer",
    "answer_digest",
]
